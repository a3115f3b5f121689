/**
 * Step-up (docs/second-factor.md, "Step-up"): the routes guarded by `requireRecentAuth`, read from the routes
 * themselves (the OpenAPI document's `x-herald-step-up`), refuse a login session whose last authentication is older
 * than STEP_UP_MAX_AGE with 403 `Confirm it is you to continue.` / `step-up required` and change nothing; after
 * `POST /users/me/step-up` the same request goes through; an API token is never asked. Then step-up itself: by
 * password without a factor, by a code with one, refused as documented, limited, and seen at once by an isolate that
 * cached the key before it.
 */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { app } from "../../src/app";
import { MfaMessages } from "../../src/auth/mfa/messages";
import type { Env } from "../../src/env";
import { operationsOf } from "../../src/openapi/document";
import { apiPath, deref, document, sample } from "../fixtures/requests";
import { rejectedWithoutChange } from "../fixtures/stored-state";
import { apiRequest, call, createUser, expectError, fetchApp, json, type TestUser } from "../helpers";
import { ageSession, codeAt, enrolTotp, forgetUsedStep } from "./mfa-helpers";

/** Older than the suite's STEP_UP_MAX_AGE (24h, test/fixtures/vars.ts). */
const STALE_MS = 25 * 60 * 60 * 1000;

const GUARDED = operationsOf(app.routes)
  .filter((op) => op.stepUp)
  .map((op) => {
    const body = document.paths[op.path]?.[op.method]?.requestBody?.content["application/json"].schema;
    return { id: `${op.method.toUpperCase()} ${op.path}`, method: op.method.toUpperCase(), path: op.path, access: op.doc.access, body };
  });

async function stepUp(token: string, body: { password?: string; code?: string }): Promise<Response> {
  return call("POST", "/users/me/step-up", { token, body });
}

async function authOf(token: string) {
  const row = await env.DB.prepare("SELECT auth_time, auth_methods FROM api_keys WHERE id = ?")
    .bind(token.slice(0, 10))
    .first<{ auth_time: string; auth_methods: string }>();
  return { authTime: Date.parse(row?.auth_time ?? ""), methods: JSON.parse(row?.auth_methods ?? "[]") as string[] };
}

let bystander: TestUser;

beforeAll(async () => {
  bystander = await createUser();
});

describe('the routes that need a recent sign-in (docs/second-factor.md, "Step-up")', () => {
  it("are the documented ones", () => {
    expect(GUARDED.map((r) => r.id).sort()).toEqual(
      [
        "DELETE /api/v2/users/{user}",
        "DELETE /api/v2/users/{user}/keys/sessions",
        "DELETE /api/v2/users/{user}/keys/{id}",
        "DELETE /api/v2/users/{user}/mfa",
        "DELETE /api/v2/users/{user}/mfa/totp",
        "DELETE /api/v2/users/{user}/passkeys/{id}",
        "GET /api/v2/users/{user}/export",
        "POST /api/v2/users/{user}/keys/tokens",
        "POST /api/v2/users/{user}/mfa/recovery-codes",
        "POST /api/v2/users/{user}/mfa/totp",
        "POST /api/v2/users/{user}/mfa/totp/confirm",
        "POST /api/v2/users/{user}/notification-targets",
        "POST /api/v2/users/{user}/passkeys",
        "POST /api/v2/users/{user}/passkeys/options",
        "PUT /api/v2/users/{user}/roles",
      ].sort(),
    );
  });

  for (const route of GUARDED) {
    it(`${route.id}: a stale session is refused and nothing changes; after step-up it is not; a token is never asked`, async () => {
      // The caller acts on itself where anyone may; an owner acts on another member on the admin routes.
      const caller = await createUser(route.access === "anyone" ? {} : { roles: ["owner"] });
      const target = route.access === "anyone" ? "me" : bystander.id;
      const path = apiPath(route.path, target);
      const body = route.body ? sample(deref(route.body)) : undefined;
      await ageSession(caller.token, STALE_MS);
      const refused = await rejectedWithoutChange(() => call(route.method, path, { token: caller.token, body }), {
        status: 403,
        message: MfaMessages.confirmItIsYou,
      });
      expect(refused.detail).toBe(MfaMessages.stepUpRequired);

      expect((await stepUp(caller.token, { password: caller.password })).status).toBe(204);
      // An API token of the same user, made now (the request below may end the session): its scopes govern it, never its age.
      const issued = await call("POST", "/users/me/keys/tokens", {
        token: caller.token,
        body: { token_name: `t-${crypto.randomUUID().slice(0, 8)}` },
      });
      expect(issued.status).toBe(201);
      const { key } = await json<{ key: string }>(issued);
      const after = await call(route.method, path, { token: caller.token, body });
      const text = await after.text();
      expect(text, `${after.status}`).not.toContain(MfaMessages.stepUpRequired);

      await ageSession(caller.token, STALE_MS);
      const byToken = await call(route.method, path, { token: key, body });
      expect(await byToken.text()).not.toContain(MfaMessages.stepUpRequired);
    });
  }
});

describe('POST /users/me/step-up (docs/second-factor.md, "Step-up")', () => {
  it("without a factor: the password refreshes auth_time; a wrong one or a code is a 400 that changes nothing", async () => {
    const user = await createUser();
    await ageSession(user.token, STALE_MS);
    const wrong = await rejectedWithoutChange(() => stepUp(user.token, { password: "not-my-password-9" }), {
      status: 400,
      message: MfaMessages.incorrectPassword,
    });
    expect(wrong.validations?.[0]?.field).toBe("password");
    await rejectedWithoutChange(() => stepUp(user.token, { code: "123456" }), { status: 400, message: MfaMessages.usePassword });
    await rejectedWithoutChange(() => stepUp(user.token, { password: user.password, code: "123456" }), { status: 400 });
    await rejectedWithoutChange(() => stepUp(user.token, {}), { status: 400 });
    expect((await stepUp(user.token, { password: user.password })).status).toBe(204);
    const { authTime, methods } = await authOf(user.token);
    expect(Date.now() - authTime).toBeLessThan(60_000);
    expect(methods).toEqual(["pwd"]);
    const audit = await env.DB.prepare("SELECT diff FROM audit_logs WHERE action = 'step_up' AND resource_id = ?")
      .bind(user.token.slice(0, 10))
      .first<{ diff: string }>();
    expect(JSON.parse(audit?.diff ?? "{}")).toEqual({ method: "password" });
  });

  it("with a factor: the password is refused; the app's code or a recovery code refreshes it, and `otp` is recorded once", async () => {
    const user = await createUser();
    const { secret, recoveryCodes } = await enrolTotp(user);
    await forgetUsedStep(user.id);
    await ageSession(user.token, STALE_MS);
    await rejectedWithoutChange(() => stepUp(user.token, { password: user.password }), { status: 400, message: MfaMessages.useSecondFactor });
    await rejectedWithoutChange(() => stepUp(user.token, { code: codeAt(secret, -3) }), { status: 400, message: MfaMessages.incorrectCode });
    const code = codeAt(secret);
    expect((await stepUp(user.token, { code })).status).toBe(204);
    expect((await authOf(user.token)).methods).toEqual(["pwd", "otp"]);
    // The same code again: already used in its window.
    await expectError(await stepUp(user.token, { code }), 400, MfaMessages.incorrectCode);
    await ageSession(user.token, STALE_MS);
    expect((await stepUp(user.token, { code: recoveryCodes[0] ?? "" })).status).toBe(204);
    expect((await authOf(user.token)).methods).toEqual(["pwd", "otp"]);
    await expectError(await stepUp(user.token, { code: recoveryCodes[0] ?? "" }), 400, MfaMessages.incorrectCode);
  });

  it("an API token cannot step up: its scopes govern it", async () => {
    const user = await createUser();
    const { key } = await json<{ key: string }>(await call("POST", "/users/me/keys/tokens", { token: user.token, body: { token_name: "script" } }));
    await expectError(await stepUp(key, { password: user.password }), 400, MfaMessages.sessionsOnly);
  });

  it("an external-login user without a factor is told to sign in again", async () => {
    const user = await createUser();
    await env.DB.prepare("UPDATE users SET login_type = 'oidc', hashed_password = NULL WHERE id = ?").bind(user.id).run();
    await expectError(await stepUp(user.token, { password: "anything-at-all-7" }), 400, MfaMessages.signInAgainToConfirm);
  });

  it("is limited like the other password checks (10 a minute per user)", async () => {
    const user = await createUser();
    let last = 0;
    for (let i = 0; i < 15 && last !== 429; i++) last = (await stepUp(user.token, { password: `wrong-password-${i}` })).status;
    expect(last).toBe(429);
  });
});

/** The app with another environment (configuration), its background work awaited. */
async function withEnv(override: Partial<Record<keyof Env, string | undefined>>, request: Request): Promise<Response> {
  const ctx = createExecutionContext();
  const res = await fetchApp(request, { ...env, ...override } as Env, ctx);
  await waitOnExecutionContext(ctx);
  return res;
}

describe("STEP_UP_MAX_AGE (docs/configuration.md)", () => {
  it("defaults to 10 minutes", async () => {
    const user = await createUser();
    const create = () =>
      apiRequest("POST", "/users/me/keys/tokens", { token: user.token, body: { token_name: `t-${crypto.randomUUID().slice(0, 8)}` } });
    await ageSession(user.token, 9 * 60 * 1000);
    expect((await withEnv({ STEP_UP_MAX_AGE: undefined }, create())).status).toBe(201);
    await ageSession(user.token, 11 * 60 * 1000);
    const res = await withEnv({ STEP_UP_MAX_AGE: undefined }, create());
    expect((await expectError(res, 403, MfaMessages.confirmItIsYou)).detail).toBe(MfaMessages.stepUpRequired);
  });

  it("a step-up another isolate answered counts at once where the key is cached from before it", async () => {
    const user = await createUser();
    const cached = { AUTH_CACHE_TTL: "60s" };
    await ageSession(user.token, STALE_MS);
    // This isolate caches the key while it is stale...
    expect((await withEnv(cached, apiRequest("GET", "/users/me", { token: user.token }))).status).toBe(200);
    // ...then another isolate steps up (written straight to D1 here).
    await ageSession(user.token, 0);
    const res = await withEnv(cached, apiRequest("POST", "/users/me/keys/tokens", { token: user.token, body: { token_name: "after-step-up" } }));
    expect(res.status).toBe(201);
  });
});
