/**
 * docs/security.md, "The audit log": entries never hold a secret. A user signs in with a password, changes it, resets
 * it with a one-time passcode, creates an API token, enrols an authenticator app and signs in with it (after one wrong
 * code); then neither `GET /audit` nor the table itself holds any password, passcode, token (or its secret half),
 * TOTP secret, code, recovery code or mfa_token any of that handed out or took in.
 */
import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { issuePasscode } from "../../src/auth/otp";
import { getConfig } from "../../src/config/config";
import { database } from "../../src/db/client";
import type { Env } from "../../src/env";
import { codeAt, enrolTotp, passwordStep } from "../auth/mfa-helpers";
import { call, createUser, json, login, owner } from "../helpers";
import { readAudit } from "./audit-helpers";

it('docs/security.md, "The audit log": no entry holds a password, passcode, token, TOTP secret or code', async () => {
  const admin = await owner();
  const user = await createUser();
  const secrets: string[] = [user.password, user.token];
  secrets.push(await login(user.email, user.password));

  const changed = `Changed-${crypto.randomUUID()}`;
  const change = await call("PUT", "/users/me/password", { token: user.token, body: { old_password: user.password, password: changed } });
  expect(change.status, await change.clone().text()).toBe(204);
  secrets.push(changed);

  const passcode = await issuePasscode(database(env.DB), getConfig(env as unknown as Env), user.id);
  const reset = `Reset-${crypto.randomUUID()}`;
  const res = await call("POST", "/users/otp/change-password", { body: { email: user.email, one_time_passcode: passcode, password: reset } });
  expect(res.status, await res.clone().text()).toBe(204);
  secrets.push(passcode, reset);

  const session = await login(user.email, reset);
  secrets.push(session);
  const created = await call("POST", "/users/me/keys/tokens", { token: session, body: { token_name: "ci" } });
  expect(created.status, await created.clone().text()).toBe(201);
  secrets.push((await json<{ key: string }>(created)).key);

  const enrolled = await enrolTotp({ token: session });
  secrets.push(enrolled.secret, ...enrolled.recoveryCodes);
  const { mfa_token } = await passwordStep({ email: user.email, password: reset });
  secrets.push(mfa_token);
  const wrong = String((Number(codeAt(enrolled.secret, 1)) + 500_000) % 1_000_000).padStart(6, "0");
  expect((await call("POST", "/users/login/mfa", { body: { mfa_token, code: wrong } })).status).toBe(401);
  const code = codeAt(enrolled.secret, 1);
  const signedIn = await call("POST", "/users/login/mfa", { body: { mfa_token, code } });
  expect(signedIn.status, await signedIn.clone().text()).toBe(201);
  secrets.push(wrong, code, (await json<{ session_token: string }>(signedIn)).session_token);

  const page = await readAudit(admin.token, { q: `username:${user.username}`, limit: 100 });
  // Every step above was audited, so the check below looked at them.
  expect(new Set(page.audit_logs.map((e) => e.action))).toEqual(
    new Set([
      "login",
      "change_password",
      "reset_password",
      "create",
      "begin_totp",
      "enable_totp",
      "login_second_factor_asked",
      "login_second_factor_failed",
    ]),
  );
  const answered = JSON.stringify(page);
  const stored = JSON.stringify((await env.DB.prepare("SELECT * FROM audit_logs").all()).results);
  // A token's first ten characters are its public id (an entry's resource_id); the rest is the secret.
  const needles = secrets.flatMap((s) => (/^[A-Za-z0-9]{10}-/.test(s) ? [s, s.slice(11)] : [s]));
  for (const secret of needles) {
    expect(answered, "GET /audit").not.toContain(secret);
    expect(stored, "audit_logs").not.toContain(secret);
  }
});
