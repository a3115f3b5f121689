import { randomBytes } from "node:crypto";
import { freePort, startLocalHerald } from "../../scripts/local-herald.mjs";
import { PINNED_VARS } from "../fixtures/vars";

export { freePort };

export interface RunningHerald {
  url: string;
  stop(): Promise<void>;
}

/**
 * Starts Herald exactly as `npm start` does (scripts/dev.mjs: local migrations, wrangler dev), on the given port with
 * its own fresh local storage, and waits until it answers /healthz. Every configuration variable comes from an env
 * file of its own (PINNED_VARS, then `vars`, and a fresh SECRET_KEY): with --env-file, wrangler ignores the
 * developer's .dev.vars, so nothing local changes what the suite sees.
 */
export async function startHerald(
  port: number,
  vars: Record<string, string>,
  options: { unset?: string[]; persistTo?: string } = {},
): Promise<RunningHerald> {
  const settings: Record<string, string> = {
    ...PINNED_VARS,
    ACCESS_URL: `http://localhost:${port}`,
    SECRET_KEY: randomBytes(32).toString("hex"),
    ...vars,
  };
  // `unset` leaves a variable to npm start's own defaults (e.g. ACCESS_URL following PORT).
  for (const key of options.unset ?? []) delete settings[key];
  // `persistTo` keeps the storage across a stop and a start: the same Herald, restarted (an outage).
  return startLocalHerald({ port, settings, label: "herald-e2e", timeoutMs: 90_000, ...(options.persistTo ? { persistTo: options.persistTo } : {}) });
}
