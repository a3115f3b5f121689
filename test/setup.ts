import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";

// Each test file gets isolated storage; the schema comes from the same migrations `wrangler d1 migrations apply` runs.
await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
