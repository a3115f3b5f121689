import { defineConfig } from "drizzle-kit";

// Generates SQL migrations for D1 from the Drizzle schema: `npm run db:generate`.
// They are applied by `wrangler d1 migrations apply` (npm start / deploy) and by the test setup.
export default defineConfig({
  dialect: "sqlite",
  schema: "./src/db/schema.ts",
  out: "./drizzle",
});
