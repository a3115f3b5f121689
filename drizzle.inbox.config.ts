import { defineConfig } from "drizzle-kit";

// The UserInbox Durable Object's own SQLite schema. Migrations are bundled into the Worker (drizzle/inbox/migrations.js)
// and applied by the object when it starts: `npm run db:generate` regenerates both D1 and inbox migrations.
export default defineConfig({
  dialect: "sqlite",
  driver: "durable-sqlite",
  schema: "./src/inbox/schema.ts",
  out: "./drizzle/inbox",
});
