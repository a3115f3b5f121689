import { randomBytes } from "node:crypto";
import path from "node:path";
import type { D1Database } from "@cloudflare/workers-types";
import { createTestHarness } from "wrangler";
import { OFFLINE_ENV } from "../../scripts/offline.mjs";
import { parseDuration } from "../../src/config/duration";
import type { InboxDelivery, InboxLimits } from "../../src/inbox/model";
import { PINNED_VARS } from "../fixtures/vars";

/** The bindings a Node-side test uses, typed by hand: the Worker's own Env type lives in the workers type world. */
export interface HeraldBindings {
  DB: D1Database;
  USER_INBOX: {
    idFromName(name: string): unknown;
    get(id: unknown): { deliver(delivery: InboxDelivery, limits: InboxLimits): Promise<unknown> };
  };
}

/** The pinned INBOX_MAX_ITEMS and INBOX_RETENTION, handed over with a delivery as the producers do (docs/inbox.md, "Retention"). */
export const INBOX_LIMITS: InboxLimits = {
  maxItems: Number(PINNED_VARS.INBOX_MAX_ITEMS),
  retentionMs: parseDuration(PINNED_VARS.INBOX_RETENTION) ?? 0,
};

/** The user's inbox object, through the bindings (the Node-side twin of src/inbox/address.ts). */
export function inboxOf(env: HeraldBindings, userId: string) {
  return env.USER_INBOX.get(env.USER_INBOX.idFromName(userId));
}

const root = path.resolve(import.meta.dirname, "../..");

/**
 * The real Worker from wrangler.toml on a real local port (local D1, Durable Objects, rate limiters), for tests that
 * need a peer outside workerd — a browser, a Node client. The env gives the test direct access to the bindings. Every
 * configuration variable is passed explicitly (PINNED_VARS, then `vars`), so a developer's .dev.vars changes nothing.
 */
export async function startHerald(vars: Record<string, string> = {}) {
  Object.assign(process.env, OFFLINE_ENV);
  const server = createTestHarness({
    root,
    workers: [{ configPath: "wrangler.toml", vars: { ...PINNED_VARS, ...vars }, secrets: { SECRET_KEY: randomBytes(32).toString("hex") } }],
  });
  const { url } = await server.listen();
  const worker = server.getWorker<HeraldBindings>();
  await worker.applyD1Migrations("DB");
  return { server, url, env: await worker.getEnv() };
}
