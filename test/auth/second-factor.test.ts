/**
 * The second factor end to end (docs/second-factor.md; docs/api.md, "Second factor and step-up"): enrolling an
 * authenticator app, signing in with it or with a recovery code through the `mfa_token` step, the rules of that
 * token (used once, 5 minutes, 5 wrong codes), a code refused for the rest of its window, removing the app, new
 * recovery codes, and an owner's reset of another user's factors.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { AuthMessages } from "../../src/auth/messages";
import { MfaMessages } from "../../src/auth/mfa/messages";
import { issuePasscode } from "../../src/auth/otp";
import { getConfig } from "../../src/config/config";
import { database } from "../../src/db/client";
import { Messages } from "../../src/http/errors";
import { call, createUser, expectError, json, owner, type TestUser } from "../helpers";
import { codeAt, type Enrolled, enrolTotp, forgetUsedStep, passwordStep } from "./mfa-helpers";

const SESSION_COOKIE = "service_session_token";

async function mfa(body: { mfa_token: string; code: string }, headers?: Record<string, string>): Promise<Response> {
  return call("POST", "/users/login/mfa", { body, ...(headers ? { headers } : {}) });
}

async function status(token: string) {
  const res = await call("GET", "/users/me/mfa", { token });
  expect(res.status).toBe(200);
  return json<{ totp: boolean; passkeys: number; recovery_codes_left: number; required: boolean }>(res);
}

async function auditActions(userId: string): Promise<string[]> {
  const { results } = await env.DB.prepare("SELECT action FROM audit_logs WHERE resource_id = ? ORDER BY time, rowid")
    .bind(userId)
    .all<{ action: string }>();
  return results.map((r) => r.action);
}

async function sessionRow(token: string) {
  return env.DB.prepare("SELECT login_type, auth_time, auth_methods FROM api_keys WHERE id = ?")
    .bind(token.slice(0, 10))
    .first<{ login_type: string; auth_time: string | null; auth_methods: string }>();
}

async function enrolled(): Promise<TestUser & Enrolled> {
  const user = await createUser();
  return { ...user, ...(await enrolTotp(user)) };
}

describe('enrolling an authenticator app (docs/second-factor.md, "Authenticator app")', () => {
  it("begins with a pending secret and its otpauth URL, then a code turns it on and answers ten recovery codes", async () => {
    const user = await createUser();
    const begun = await call("POST", "/users/me/mfa/totp", { token: user.token });
    expect(begun.status).toBe(200);
    const { secret, otpauth_url } = await json<{ secret: string; otpauth_url: string }>(begun);
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    const url = new URL(otpauth_url);
    // The issuer is ACCESS_URL's host name (http://localhost:8787 in the suite).
    expect(decodeURIComponent(url.pathname)).toBe(`/localhost:${user.email}`);
    expect(url.searchParams.get("issuer")).toBe("localhost");
    expect(url.searchParams.get("secret")).toBe(secret);
    // Pending is not on: sign-in still needs only the password.
    expect(await status(user.token)).toEqual({ totp: false, passkeys: 0, recovery_codes_left: 0, required: false });

    // The secret is sealed at rest, never stored as it was shown.
    const row = await env.DB.prepare("SELECT secret_sealed, confirmed_at FROM user_totp WHERE user_id = ?")
      .bind(user.id)
      .first<{ secret_sealed: string; confirmed_at: string | null }>();
    expect(row?.confirmed_at).toBeNull();
    expect(row?.secret_sealed).not.toContain(secret);

    const wrong = await call("POST", "/users/me/mfa/totp/confirm", { token: user.token, body: { code: codeAt(secret, -3) } });
    const refused = await expectError(wrong, 400, MfaMessages.incorrectCode);
    expect(refused.validations?.[0]?.field).toBe("code");
    expect((await status(user.token)).totp).toBe(false);

    const confirmed = await call("POST", "/users/me/mfa/totp/confirm", { token: user.token, body: { code: codeAt(secret) } });
    expect(confirmed.status).toBe(200);
    const { recovery_codes } = await json<{ recovery_codes: string[] }>(confirmed);
    expect(recovery_codes).toHaveLength(10);
    for (const code of recovery_codes) expect(code).toMatch(/^[0-9a-hjkmnp-tv-z]{4}(-[0-9a-hjkmnp-tv-z]{4}){5}$/);
    expect(new Set(recovery_codes).size).toBe(10);
    expect(await status(user.token)).toEqual({ totp: true, passkeys: 0, recovery_codes_left: 10, required: false });

    // Stored hashed: no code appears in the table.
    const { results } = await env.DB.prepare("SELECT code_hash FROM recovery_codes WHERE user_id = ?").bind(user.id).all<{ code_hash: string }>();
    expect(results).toHaveLength(10);
    for (const { code_hash } of results) for (const code of recovery_codes) expect(code_hash).not.toContain(code.replace(/-/g, ""));

    expect(await auditActions(user.id)).toEqual(expect.arrayContaining(["begin_totp", "enable_totp"]));
  });

  it("calling again replaces a pending secret: the first one's codes no longer confirm", async () => {
    const user = await createUser();
    const first = await json<{ secret: string }>(await call("POST", "/users/me/mfa/totp", { token: user.token }));
    const second = await json<{ secret: string }>(await call("POST", "/users/me/mfa/totp", { token: user.token }));
    expect(second.secret).not.toBe(first.secret);
    await expectError(await call("POST", "/users/me/mfa/totp/confirm", { token: user.token, body: { code: codeAt(first.secret) } }), 400);
    expect((await call("POST", "/users/me/mfa/totp/confirm", { token: user.token, body: { code: codeAt(second.secret) } })).status).toBe(200);
  });

  it("answers 409 once the app is on, and 400 to a confirmation with nothing pending", async () => {
    const user = await enrolled();
    await expectError(await call("POST", "/users/me/mfa/totp", { token: user.token }), 409, MfaMessages.totpAlreadyOn);
    const fresh = await createUser();
    await expectError(
      await call("POST", "/users/me/mfa/totp/confirm", { token: fresh.token, body: { code: "123456" } }),
      400,
      MfaMessages.totpNotPending,
    );
  });

  it("is the user's own: not even an owner enrols someone else", async () => {
    const admin = await owner();
    const user = await createUser();
    const res = await call("POST", `/users/${user.id}/mfa/totp`, { token: admin.token });
    const body = await expectError(res, 403, Messages.forbidden);
    expect(body.detail).toBe(MfaMessages.selfOnly);
  });
});

describe('signing in with a second factor (docs/second-factor.md, "Signing in")', () => {
  it("the right password answers mfa_required with a token and the methods, and no session or cookie", async () => {
    const user = await enrolled();
    const before = await env.DB.prepare("SELECT count(*) AS n FROM api_keys WHERE user_id = ?").bind(user.id).first<{ n: number }>();
    const res = await call("POST", "/users/login", { body: { email: user.email, password: user.password } });
    expect(res.status).toBe(200);
    expect(res.headers.getSetCookie()).toEqual([]);
    const body = await json<{ mfa_required: boolean; mfa_token: string; methods: string[] }>(res);
    expect(body.mfa_required).toBe(true);
    expect(body.mfa_token).toMatch(/^[0-9A-Za-z]{16}-[0-9A-Za-z]{32}$/);
    expect(body.methods).toEqual(["totp", "recovery_code"]);
    const after = await env.DB.prepare("SELECT count(*) AS n FROM api_keys WHERE user_id = ?").bind(user.id).first<{ n: number }>();
    expect(after?.n).toBe(before?.n);
    // Only its hash is stored.
    const stored = await env.DB.prepare("SELECT id, hashed_secret FROM mfa_challenges WHERE user_id = ?")
      .bind(user.id)
      .first<{ id: string; hashed_secret: string }>();
    expect(stored?.id).toBe(body.mfa_token.slice(0, 16));
    expect(stored?.hashed_secret).not.toContain(body.mfa_token.slice(17));
    // A wrong password is still the same 401 as ever.
    await expectError(
      await call("POST", "/users/login", { body: { email: user.email, password: "not-it-at-all" } }),
      401,
      AuthMessages.incorrectLogin,
    );
  });

  it("the app's code finishes it: a session and cookie as A3, recording the password and the code", async () => {
    const user = await enrolled();
    await forgetUsedStep(user.id);
    const { mfa_token } = await passwordStep(user);
    const res = await mfa({ mfa_token, code: codeAt(user.secret) });
    expect(res.status).toBe(201);
    const { session_token } = await json<{ session_token: string }>(res);
    expect(res.headers.getSetCookie().some((c) => c.startsWith(`${SESSION_COOKIE}=${session_token}`))).toBe(true);
    expect((await call("GET", "/users/me", { token: session_token })).status).toBe(200);
    const row = await sessionRow(session_token);
    expect(row?.login_type).toBe("password");
    expect(JSON.parse(row?.auth_methods ?? "[]")).toEqual(["pwd", "otp"]);
    expect(Date.now() - Date.parse(row?.auth_time ?? "")).toBeLessThan(60_000);
    const login = await env.DB.prepare("SELECT diff FROM audit_logs WHERE action = 'login' AND resource_id = ?")
      .bind(session_token.slice(0, 10))
      .first<{ diff: string }>();
    expect(JSON.parse(login?.diff ?? "{}")).toMatchObject({ login_type: "password", second_factor: "totp" });
    // The token was used up.
    await expectError(await mfa({ mfa_token, code: codeAt(user.secret, 1) }), 401, MfaMessages.signInExpired);
  });

  it("a code once accepted is refused for the rest of its window, and codes two steps away are refused", async () => {
    const user = await enrolled();
    await forgetUsedStep(user.id);
    const code = codeAt(user.secret);
    expect((await mfa({ mfa_token: (await passwordStep(user)).mfa_token, code })).status).toBe(201);
    const { mfa_token } = await passwordStep(user);
    await expectError(await mfa({ mfa_token, code }), 401, MfaMessages.incorrectCode);
    // Two steps back, three ahead: outside the window whatever step boundary passes meanwhile.
    await expectError(await mfa({ mfa_token, code: codeAt(user.secret, -2) }), 401, MfaMessages.incorrectCode);
    await expectError(await mfa({ mfa_token, code: codeAt(user.secret, 3) }), 401, MfaMessages.incorrectCode);
    // The next step's code is new: the same token, still alive after three wrong codes, takes it.
    expect((await mfa({ mfa_token, code: codeAt(user.secret, 1) })).status).toBe(201);
  });

  it("a recovery code signs in once, typed in any case and without hyphens, and the count goes down", async () => {
    const user = await enrolled();
    const [first, second] = user.recoveryCodes;
    const res = await mfa({ mfa_token: (await passwordStep(user)).mfa_token, code: (first ?? "").toUpperCase().replace(/-/g, " ") });
    expect(res.status).toBe(201);
    const { session_token } = await json<{ session_token: string }>(res);
    expect(JSON.parse((await sessionRow(session_token))?.auth_methods ?? "[]")).toEqual(["pwd", "otp"]);
    expect((await status(session_token)).recovery_codes_left).toBe(9);
    await expectError(await mfa({ mfa_token: (await passwordStep(user)).mfa_token, code: first ?? "" }), 401, MfaMessages.incorrectCode);
    expect((await mfa({ mfa_token: (await passwordStep(user)).mfa_token, code: second ?? "" })).status).toBe(201);
  });

  it("of two uses of one token and code at once, exactly one signs in", async () => {
    const user = await enrolled();
    await forgetUsedStep(user.id);
    const { mfa_token } = await passwordStep(user);
    const code = codeAt(user.secret);
    const answers = await Promise.all([mfa({ mfa_token, code }), mfa({ mfa_token, code })]);
    expect(answers.map((r) => r.status).sort()).toEqual([201, 401]);
  });

  it("the token dies after 5 wrong codes, even sent at once, and then the right code is refused", async () => {
    const user = await enrolled();
    await forgetUsedStep(user.id);
    const { mfa_token } = await passwordStep(user);
    const wrong = await Promise.all(Array.from({ length: 8 }, () => mfa({ mfa_token, code: codeAt(user.secret, -5) })));
    const statuses = wrong.map((r) => r.status);
    expect(statuses.every((s) => s === 401)).toBe(true);
    const messages = await Promise.all(wrong.map(async (r) => (await r.json<{ message: string }>()).message));
    expect(messages.filter((m) => m === MfaMessages.incorrectCode)).toHaveLength(5);
    expect(messages.filter((m) => m === MfaMessages.signInExpired)).toHaveLength(3);
    await expectError(await mfa({ mfa_token, code: codeAt(user.secret) }), 401, MfaMessages.signInExpired);
  });

  it("the token lives 5 minutes", async () => {
    const user = await enrolled();
    await forgetUsedStep(user.id);
    const { mfa_token } = await passwordStep(user);
    const row = await env.DB.prepare("SELECT created_at, expires_at FROM mfa_challenges WHERE id = ?")
      .bind(mfa_token.slice(0, 16))
      .first<{ created_at: string; expires_at: string }>();
    expect(Date.parse(row?.expires_at ?? "") - Date.parse(row?.created_at ?? "")).toBe(5 * 60 * 1000);
    await env.DB.prepare("UPDATE mfa_challenges SET expires_at = ? WHERE id = ?")
      .bind(new Date(Date.now() - 1000).toISOString(), mfa_token.slice(0, 16))
      .run();
    await expectError(await mfa({ mfa_token, code: codeAt(user.secret) }), 401, MfaMessages.signInExpired);
  });

  it("a token with a wrong secret, or none at all, is refused the same way", async () => {
    const user = await enrolled();
    const { mfa_token } = await passwordStep(user);
    const forged = `${mfa_token.slice(0, 17)}${"A".repeat(32)}`;
    await expectError(await mfa({ mfa_token: forged, code: codeAt(user.secret) }), 401, MfaMessages.signInExpired);
    await expectError(await mfa({ mfa_token: "not-a-token", code: codeAt(user.secret) }), 401, MfaMessages.signInExpired);
  });

  it("a user suspended between the two steps is not signed in", async () => {
    const admin = await owner();
    const user = await enrolled();
    await forgetUsedStep(user.id);
    const { mfa_token } = await passwordStep(user);
    expect((await call("PUT", `/users/${user.id}/status/suspend`, { token: admin.token })).status).toBe(200);
    await expectError(await mfa({ mfa_token, code: codeAt(user.secret) }), 401, AuthMessages.suspended);
  });

  it("shares the sign-in limits of A3: per client address", async () => {
    const ip = `192.0.2.${Math.floor(Math.random() * 250)}`;
    let last = 0;
    for (let i = 0; i < 45 && last !== 429; i++) {
      last = (await mfa({ mfa_token: `${"a".repeat(16)}-${"b".repeat(32)}`, code: "123456" }, { "CF-Connecting-IP": ip })).status;
    }
    expect(last).toBe(429);
  });

  it("a user without a factor signs in with the password alone, as before", async () => {
    const user = await createUser();
    const res = await call("POST", "/users/login", { body: { email: user.email, password: user.password } });
    expect(res.status).toBe(201);
    const { session_token } = await json<{ session_token: string }>(res);
    expect(JSON.parse((await sessionRow(session_token))?.auth_methods ?? "[]")).toEqual(["pwd"]);
  });
});

describe('removing the app, and new recovery codes (docs/second-factor.md, "Recovery")', () => {
  it("DELETE /users/me/mfa/totp turns it off, with the recovery codes, and sign-in is one step again", async () => {
    const user = await enrolled();
    expect((await call("DELETE", "/users/me/mfa/totp", { token: user.token })).status).toBe(204);
    expect(await status(user.token)).toEqual({ totp: false, passkeys: 0, recovery_codes_left: 0, required: false });
    const { n } = (await env.DB.prepare("SELECT count(*) AS n FROM recovery_codes WHERE user_id = ?").bind(user.id).first<{ n: number }>()) ?? {
      n: -1,
    };
    expect(n).toBe(0);
    expect((await call("POST", "/users/login", { body: { email: user.email, password: user.password } })).status).toBe(201);
    await expectError(await call("DELETE", "/users/me/mfa/totp", { token: user.token }), 404, MfaMessages.totpNotOn);
    expect(await auditActions(user.id)).toContain("disable_totp");
  });

  it("a new set replaces the old one: the old codes stop working", async () => {
    const user = await enrolled();
    const res = await call("POST", "/users/me/mfa/recovery-codes", { token: user.token });
    expect(res.status).toBe(200);
    const { recovery_codes } = await json<{ recovery_codes: string[] }>(res);
    expect(recovery_codes).toHaveLength(10);
    expect(recovery_codes.some((code) => user.recoveryCodes.includes(code))).toBe(false);
    await expectError(
      await mfa({ mfa_token: (await passwordStep(user)).mfa_token, code: user.recoveryCodes[0] ?? "" }),
      401,
      MfaMessages.incorrectCode,
    );
    expect((await mfa({ mfa_token: (await passwordStep(user)).mfa_token, code: recovery_codes[0] ?? "" })).status).toBe(201);
    expect(await auditActions(user.id)).toContain("regenerate_recovery_codes");
  });

  it("recovery codes need a factor to stand in for", async () => {
    const user = await createUser();
    await expectError(await call("POST", "/users/me/mfa/recovery-codes", { token: user.token }), 400, MfaMessages.noFactorForCodes);
  });

  it("a password reset by passcode (A4) leaves the factor on: the next sign-in still asks for it", async () => {
    const user = await enrolled();
    const code = await issuePasscode(database(env.DB), getConfig(env), user.id);
    const password = `Another-${crypto.randomUUID()}`;
    const reset = await call("POST", "/users/otp/change-password", { body: { email: user.email, one_time_passcode: code, password } });
    expect(reset.status).toBe(204);
    const res = await call("POST", "/users/login", { body: { email: user.email, password } });
    expect(res.status).toBe(200);
    expect(await json(res)).toMatchObject({ mfa_required: true });
  });

  it("still work when SECRET_KEY changed and the app's secret no longer opens", async () => {
    const user = await enrolled();
    await forgetUsedStep(user.id);
    // A secret sealed under another key stands for one sealed before a rotation.
    await env.DB.prepare("UPDATE user_totp SET secret_sealed = ? WHERE user_id = ?")
      .bind("AAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", user.id)
      .run();
    await expectError(await mfa({ mfa_token: (await passwordStep(user)).mfa_token, code: codeAt(user.secret) }), 401, MfaMessages.incorrectCode);
    expect((await mfa({ mfa_token: (await passwordStep(user)).mfa_token, code: user.recoveryCodes[0] ?? "" })).status).toBe(201);
  });
});

describe('an owner\'s reset (docs/second-factor.md, "Recovery")', () => {
  it("removes every factor and code, ends the user's login sessions and keeps their API tokens", async () => {
    const admin = await owner();
    const user = await enrolled();
    const tokenRes = await call("POST", "/users/me/keys/tokens", { token: user.token, body: { token_name: "kept" } });
    expect(tokenRes.status).toBe(201);
    const { key } = await json<{ key: string }>(tokenRes);
    expect((await call("DELETE", `/users/${user.id}/mfa`, { token: admin.token })).status).toBe(204);
    await expectError(await call("GET", "/users/me", { token: user.token }), 401);
    expect((await call("GET", "/users/me", { token: key })).status).toBe(200);
    expect(await status(key)).toEqual({ totp: false, passkeys: 0, recovery_codes_left: 0, required: false });
    expect((await call("POST", "/users/login", { body: { email: user.email, password: user.password } })).status).toBe(201);
    expect(await auditActions(user.id)).toContain("reset_mfa");
  });

  it("is for owners, on someone else, who has a factor", async () => {
    const admin = await owner();
    const userAdmin = await createUser({ roles: ["user-admin"] });
    const user = await enrolled();
    const refused = await expectError(await call("DELETE", `/users/${user.id}/mfa`, { token: userAdmin.token }), 403);
    expect(refused.detail).toBe(MfaMessages.ownerOnly);
    const self = await expectError(await call("DELETE", "/users/me/mfa", { token: admin.token }), 403);
    expect(self.detail).toBe(MfaMessages.notOnYourself);
    const plain = await createUser();
    await expectError(await call("DELETE", `/users/${plain.id}/mfa`, { token: admin.token }), 404, MfaMessages.noFactors);
    expect((await status(user.token)).totp).toBe(true);
  });
});
