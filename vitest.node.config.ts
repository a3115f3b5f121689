import { defineConfig } from "vitest/config";

// Tests that drive the Worker from outside workerd: a real browser, real HTTP and WebSocket clients.
export default defineConfig({
  test: {
    include: ["test/node/**/*.test.ts"],
    environment: "node",
    testTimeout: 60_000,
    hookTimeout: 120_000,
    fileParallelism: false,
    // wrangler.toml's [assets] directory must hold this checkout's dashboard before a test starts the Worker.
    globalSetup: ["./test/build-ui.setup.ts"],
  },
});
