import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { totpCode, totpStep } from "../../src/auth/mfa/totp";
import { call, json, type TestUser } from "../helpers";

/** What enrolling an authenticator app handed the user: the secret (as the app holds it) and the recovery codes. */
export interface Enrolled {
  secret: string;
  recoveryCodes: string[];
}

/**
 * The code the user's app shows `offset` steps from now. The server accepts the current step and one on either side,
 * so a code for now or the next step is good even when a step boundary passes while the request travels; a step
 * already used is refused (docs/second-factor.md, "Authenticator app").
 */
export function codeAt(secret: string, offset = 0): string {
  return totpCode(secret, totpStep(Date.now()) + offset);
}

/** The whole enrolment through the API: begin, then confirm with the app's current code. */
export async function enrolTotp(user: Pick<TestUser, "token">): Promise<Enrolled> {
  const begun = await call("POST", "/users/me/mfa/totp", { token: user.token });
  expect(begun.status, await begun.clone().text()).toBe(200);
  const { secret } = await json<{ secret: string }>(begun);
  const confirmed = await call("POST", "/users/me/mfa/totp/confirm", { token: user.token, body: { code: codeAt(secret) } });
  expect(confirmed.status, await confirmed.clone().text()).toBe(200);
  const { recovery_codes } = await json<{ recovery_codes: string[] }>(confirmed);
  return { secret, recoveryCodes: recovery_codes };
}

/** Forgets which step was used last, so the next test can use the current code again without waiting 30 seconds. */
export async function forgetUsedStep(userId: string): Promise<void> {
  await env.DB.prepare("UPDATE user_totp SET last_step = NULL WHERE user_id = ?").bind(userId).run();
}

/** `POST /users/login` for a user with a factor: the `mfa_token` and the methods offered. */
export async function passwordStep(user: Pick<TestUser, "email" | "password">): Promise<{ mfa_token: string; methods: string[] }> {
  const res = await call("POST", "/users/login", { body: { email: user.email, password: user.password } });
  expect(res.status, await res.clone().text()).toBe(200);
  return json<{ mfa_token: string; methods: string[] }>(res);
}

/** Makes the session look signed in `ageMs` ago, as if the user had done nothing since. */
export async function ageSession(token: string, ageMs: number): Promise<void> {
  await env.DB.prepare("UPDATE api_keys SET auth_time = ? WHERE id = ?")
    .bind(new Date(Date.now() - ageMs).toISOString(), token.slice(0, 10))
    .run();
}
