/**
 * MFA_REQUIRED_ROLES (docs/second-factor.md, "Requiring a second factor"): a holder of a named site role without a
 * second factor signs in, reads themself and their factors, steps up, enrols a factor and signs out, and every other
 * endpoint answers 403 with `detail` `second factor required` until they have one. The suite runs with the policy off
 * (test/fixtures/vars.ts); these tests turn it on through the environment, as a deployment would.
 */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { MfaMessages } from "../../src/auth/mfa/messages";
import type { Env } from "../../src/env";
import { apiRequest, type CallOptions, createUser, expectError, fetchApp, json, owner, type TestUser } from "../helpers";
import { ageSession, codeAt } from "./mfa-helpers";

/** A request to the app with MFA_REQUIRED_ROLES (and any other override) set, its background work awaited. */
async function as(override: Partial<Record<keyof Env, string>>, method: string, path: string, options: CallOptions = {}): Promise<Response> {
  const ctx = createExecutionContext();
  const res = await fetchApp(apiRequest(method, path, options), { ...env, ...override } as Env, ctx);
  await waitOnExecutionContext(ctx);
  return res;
}

async function expectNeedsFactor(res: Response): Promise<void> {
  const body = await expectError(res, 403, MfaMessages.setUpSecondFactor);
  expect(body.detail).toBe(MfaMessages.secondFactorRequired);
}

describe('MFA_REQUIRED_ROLES (docs/second-factor.md, "Requiring a second factor")', () => {
  const policy = { MFA_REQUIRED_ROLES: "auditor" };

  it("a named role without a factor signs in and reaches only its own account, its factors, enrolment and sign-out", async () => {
    const admin = await owner();
    const auditor = await createUser({ roles: ["auditor"] });
    const signIn = await as(policy, "POST", "/users/login", { body: { email: auditor.email, password: auditor.password } });
    expect(signIn.status).toBe(201);
    const { session_token: token } = await json<{ session_token: string }>(signIn);

    expect((await as(policy, "GET", "/users/me", { token })).status).toBe(200);
    expect((await as(policy, "GET", `/users/${auditor.id}`, { token })).status).toBe(200);
    const mfa = await as(policy, "GET", "/users/me/mfa", { token });
    expect(await json(mfa)).toEqual({ totp: false, passkeys: 0, recovery_codes_left: 0, required: true });

    await expectNeedsFactor(await as(policy, "GET", "/notifications/inbox", { token }));
    await expectNeedsFactor(await as(policy, "GET", "/users", { token }));
    await expectNeedsFactor(await as(policy, "GET", `/users/${admin.id}`, { token }));
    await expectNeedsFactor(await as(policy, "GET", `/users/${admin.id}/mfa`, { token }));
    await expectNeedsFactor(await as(policy, "POST", "/users/me/keys/tokens", { token, body: { token_name: "no" } }));
    await expectNeedsFactor(await as(policy, "POST", "/authcheck", { token, body: { checks: {} } }));

    // Enrolling is open, step-up included (a session too old to enrol steps up first).
    await ageSession(token, 25 * 60 * 60 * 1000);
    expect((await as(policy, "POST", "/users/me/step-up", { token, body: { password: auditor.password } })).status).toBe(204);
    const begun = await as(policy, "POST", "/users/me/mfa/totp", { token });
    expect(begun.status).toBe(200);
    const { secret } = await json<{ secret: string }>(begun);
    expect((await as(policy, "POST", "/users/me/mfa/totp/confirm", { token, body: { code: codeAt(secret) } })).status).toBe(200);

    // With a factor, everything is open again.
    expect((await as(policy, "GET", "/notifications/inbox", { token })).status).toBe(200);
    expect((await as(policy, "GET", "/users", { token })).status).toBe(200);
    expect((await as(policy, "POST", "/users/logout", { token })).status).toBe(200);
  });

  it("signing out stays open without a factor", async () => {
    const auditor = await createUser({ roles: ["auditor"] });
    expect((await as(policy, "POST", "/users/logout", { token: auditor.token })).status).toBe(200);
  });

  it("holds for the user's API tokens too, and not for users outside the named roles", async () => {
    const auditor = await createUser({ roles: ["auditor"] });
    const member = await createUser();
    const { key } = await json<{ key: string }>(
      await as({}, "POST", "/users/me/keys/tokens", { token: auditor.token, body: { token_name: "script" } }),
    );
    await expectNeedsFactor(await as(policy, "GET", "/notifications/inbox", { token: key }));
    expect((await as(policy, "GET", "/notifications/inbox", { token: member.token })).status).toBe(200);
    expect(await json(await as(policy, "GET", "/users/me/mfa", { token: member.token }))).toMatchObject({ required: false });
  });

  it("`member` names every user; service accounts, which never sign in, are not asked", async () => {
    const everyone = { MFA_REQUIRED_ROLES: "member" };
    const member: TestUser = await createUser();
    const service = await createUser({ service: true });
    await expectNeedsFactor(await as(everyone, "GET", "/notifications/inbox", { token: member.token }));
    expect((await as(everyone, "GET", "/notifications/inbox", { token: service.token })).status).toBe(200);
  });

  it("an isolate that cached the refusal sees the new factor at once once it is enrolled there", async () => {
    const cached = { ...policy, AUTH_CACHE_TTL: "60s" };
    const auditor = await createUser({ roles: ["auditor"] });
    const token = auditor.token;
    await expectNeedsFactor(await as(cached, "GET", "/notifications/inbox", { token }));
    const { secret } = await json<{ secret: string }>(await as(cached, "POST", "/users/me/mfa/totp", { token }));
    expect((await as(cached, "POST", "/users/me/mfa/totp/confirm", { token, body: { code: codeAt(secret) } })).status).toBe(200);
    expect((await as(cached, "GET", "/notifications/inbox", { token })).status).toBe(200);
  });
});
