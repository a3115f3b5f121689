import { eq } from "drizzle-orm";
import { ConfigError, getConfig } from "../config/config";
import { database } from "../db/client";
import { siteConfig, users } from "../db/schema";
import type { Env } from "../env";
import { nowIso } from "../lib/crypto";

/** The site_config row that records the jurisdiction this deployment's inbox objects were created in ("" for none). */
export const JURISDICTION_KEY = "inbox_jurisdiction";

export type JurisdictionVerdict = { ok: true; record?: string } | { ok: false; message: string };

const named = (jurisdiction: string) => (jurisdiction === "" ? "no jurisdiction" : `the "${jurisdiction}" jurisdiction`);

/**
 * Whether inboxes can be found under the configured DATA_JURISDICTION (docs/deployment.md, "Where data lives"). An
 * object's id depends on the jurisdiction its namespace is restricted to, so a deployment that changed the setting
 * would address every existing user's inbox by a new id: new, empty objects, and the old ones out of reach. So the
 * first run records the jurisdiction (a deployment whose users came before the setting has none), and a later run
 * configured otherwise is refused while any user exists; with no user yet, no inbox can hold anything and the new
 * setting is recorded instead.
 */
export function decideJurisdiction(configured: string, recorded: string | undefined, anyUser: boolean): JurisdictionVerdict {
  const existing = recorded ?? (anyUser ? "" : undefined);
  if (existing === configured) return recorded === undefined ? { ok: true, record: configured } : { ok: true };
  if (existing === undefined || !anyUser) return { ok: true, record: configured };
  return {
    ok: false,
    message:
      `DATA_JURISDICTION is ${configured === "" ? "empty" : `"${configured}"`}, but this deployment's inboxes were created in ${named(existing)}: ` +
      `an inbox object's id depends on its jurisdiction, so every user's inbox would be lost from view. Set DATA_JURISDICTION ` +
      `back to ${existing === "" ? "empty" : `"${existing}"`}, or move to a new deployment (docs/deployment.md, "Where data lives").`,
  };
}

/** Deployments already checked in this isolate: the answer cannot change while its bindings stay the same. */
const verified = new WeakSet<object>();

/**
 * Refuses to run (a ConfigError, which every request answers as a 500 and logs) when the configured jurisdiction is
 * not the one the deployment's inboxes live in; records it on the first run. One D1 batch per isolate, then nothing:
 * once checked it answers undefined at once, with no promise to wait for on a request's hot path.
 */
export function assertInboxJurisdiction(env: Env): Promise<void> | undefined {
  return verified.has(env) ? undefined : check(env);
}

async function check(env: Env): Promise<void> {
  const configured = getConfig(env).DATA_JURISDICTION;
  const db = database(env.DB);
  const [recorded, anyUser] = await db.batch([
    db.select({ value: siteConfig.value }).from(siteConfig).where(eq(siteConfig.key, JURISDICTION_KEY)),
    db.select({ id: users.id }).from(users).limit(1),
  ]);
  const verdict = decideJurisdiction(configured, recorded[0]?.value, anyUser.length > 0);
  if (!verdict.ok) throw new ConfigError(verdict.message);
  if (verdict.record !== undefined) {
    await db
      .insert(siteConfig)
      .values({ key: JURISDICTION_KEY, value: verdict.record, updatedAt: nowIso() })
      .onConflictDoUpdate({ target: siteConfig.key, set: { value: verdict.record, updatedAt: nowIso() } });
  }
  verified.add(env);
}
