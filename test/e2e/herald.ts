import { randomBytes } from "node:crypto";
import { expect } from "vitest";
import { freePort, startLocalHerald } from "../../scripts/local-herald.mjs";
import type { HeraldClient } from "../../src/client";
import { PINNED_VARS, TEST_VAPID_KEYS } from "../fixtures/vars";

export { freePort };

/**
 * The session token of a password sign-in through the typed client. The accounts these tests make have no second
 * factor, so the answer is 201 `{"session_token"}`; an account with one would answer 200 `mfa_required` instead
 * (docs/api.md, "Signing in with a password"), and that fails here, by name, rather than as a missing token later.
 */
export async function sessionTokenOf(login: Awaited<ReturnType<HeraldClient["users"]["login"]["$post"]>>): Promise<string> {
  if (login.status !== 201) throw new Error(`the sign-in answered ${login.status}, not 201 with a session: ${await login.text()}`);
  return (await login.json()).session_token;
}

export interface RunningHerald {
  url: string;
  /** The mail catcher's page, when started with `mailCatcher`. */
  mailUrl?: string;
  /** What npm start's machinery printed so far. */
  output(): string;
  stop(): Promise<void>;
}

/**
 * Starts Herald exactly as `npm start` does (scripts/dev.mjs: local migrations, wrangler dev), on the given port with
 * its own fresh local storage, and waits until it answers /healthz. Every configuration variable comes from an env
 * file of its own (PINNED_VARS, then `vars`, and a fresh SECRET_KEY): with --env-file, wrangler ignores the
 * developer's .dev.vars, so nothing local changes what the suite sees. `mailCatcher` starts npm start's mail catcher
 * beside it, as `npm start` does without EMAIL_SMARTHOST.
 */
export async function startHerald(
  port: number,
  vars: Record<string, string>,
  options: { unset?: string[]; mailCatcher?: boolean; persistTo?: string } = {},
): Promise<RunningHerald> {
  const settings: Record<string, string> = {
    ...PINNED_VARS,
    // Web Push on, with the suites' key pair (docs/push.md, "Keys"); a run may unset it to see push off.
    ...TEST_VAPID_KEYS,
    ACCESS_URL: `http://localhost:${port}`,
    SECRET_KEY: randomBytes(32).toString("hex"),
    ...vars,
  };
  // `unset` leaves a variable to npm start's own defaults (e.g. ACCESS_URL following PORT).
  for (const key of options.unset ?? []) delete settings[key];
  // npm start's mail catcher starts only without any EMAIL_SMARTHOST, which PINNED_VARS pins to "" (docs/deployment.md).
  if (options.mailCatcher) delete settings.EMAIL_SMARTHOST;
  return startLocalHerald({
    port,
    settings,
    label: "herald-e2e",
    timeoutMs: 90_000,
    mailCatcher: options.mailCatcher,
    // `persistTo` keeps the storage across a stop and a start: the same Herald, restarted (an outage).
    ...(options.persistTo ? { persistTo: options.persistTo } : {}),
  });
}

/**
 * The API from Node with a session of its own (a browser's cookie session is separate): signs in with the
 * credentials, then answers each call's status and parsed body.
 */
/**
 * The browser the dashboard tests drive, as a User-Agent: headless Chromium on Linux. A device is a browser family, an
 * operating system and a country (docs/security.md, "Devices"), so signing in through the API as this one is the
 * same person on the same machine, and adds no "New sign-in" notice to the inbox the tests count.
 */
const CHROMIUM_USER_AGENT = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.0.0 Safari/537.36";

export async function apiAs(url: string, credentials: { email: string; password: string }) {
  const login = await fetch(`${url}/api/v2/users/login`, {
    method: "POST",
    headers: { "User-Agent": CHROMIUM_USER_AGENT },
    body: JSON.stringify(credentials),
  });
  expect(login.status).toBe(201);
  const { session_token: token } = (await login.json()) as { session_token: string };
  return async (method: string, route: string, body?: unknown) => {
    const res = await fetch(`${url}/api/v2${route}`, {
      method,
      headers: { "Service-Session-Token": token, "Content-Type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : undefined) as Record<string, unknown> };
  };
}
