import { defineConfig } from "vitest/config";

// End to end: Herald started by npm start's machinery on a free port, driven over real HTTP and WebSockets.
export default defineConfig({
  test: {
    include: ["test/e2e/**/*.test.ts"],
    environment: "node",
    testTimeout: 180_000,
    hookTimeout: 180_000,
    fileParallelism: false,
  },
});
