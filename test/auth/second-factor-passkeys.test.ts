/**
 * A passkey as the second factor and for step-up (docs/second-factor.md, "Signing in" and "Step-up";
 * docs/passkeys.md, "One check for every ceremony"): the `mfa_token` step finished with a passkey, step-up answered
 * with one, each challenge good only for the ceremony and user it was issued for, adding and removing a passkey as
 * step-up actions, and the recovery codes leaving with the last factor. A software authenticator
 * (test/passkeys/authenticator.ts) holds the keys.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { MfaMessages } from "../../src/auth/mfa/messages";
import { PasskeyMessages } from "../../src/passkeys/messages";
import { call, createUser, expectError, json, owner, type TestUser } from "../helpers";
import { addPasskey, type RequestOptions, SoftAuthenticator } from "../passkeys/authenticator";
import { ageSession, passwordStep } from "./mfa-helpers";

const HOUR = 60 * 60 * 1000;

/** A user whose one factor is a passkey held by the returned authenticator. */
async function withPasskey(): Promise<{ user: TestUser; key: SoftAuthenticator }> {
  const user = await createUser();
  const key = await SoftAuthenticator.create("ES256");
  const added = await addPasskey(user.token, key);
  expect(added.status, await added.clone().text()).toBe(201);
  return { user, key };
}

async function mfaOptions(mfaToken: string): Promise<RequestOptions> {
  const res = await call("POST", "/users/login/mfa/passkey-options", { body: { mfa_token: mfaToken } });
  expect(res.status, await res.clone().text()).toBe(200);
  return json<RequestOptions>(res);
}

async function stepUpOptions(token: string): Promise<RequestOptions> {
  const res = await call("POST", "/users/me/step-up/passkey-options", { token });
  expect(res.status, await res.clone().text()).toBe(200);
  return json<RequestOptions>(res);
}

async function sessionMethods(token: string): Promise<string[]> {
  const row = await env.DB.prepare("SELECT auth_methods FROM api_keys WHERE id = ?").bind(token.slice(0, 10)).first<{ auth_methods: string }>();
  return JSON.parse(row?.auth_methods ?? "[]") as string[];
}

async function mfaStatus(token: string) {
  const res = await call("GET", "/users/me/mfa", { token });
  expect(res.status).toBe(200);
  return json<{ totp: boolean; passkeys: number; recovery_codes_left: number }>(res);
}

describe('a passkey at the second step of a sign-in (docs/second-factor.md, "Signing in")', () => {
  it("a password sign-in asks for the passkey, and the passkey's answer to the step's options signs in", async () => {
    const { user, key } = await withPasskey();
    const first = await passwordStep(user);
    expect(first.methods).toEqual(["passkey"]);

    const options = await mfaOptions(first.mfa_token);
    expect(options.allowCredentials.map((c) => c.id)).toEqual([key.credentialId]);
    expect(options.userVerification).toBe("preferred");

    const res = await call("POST", "/users/login/mfa", { body: { mfa_token: first.mfa_token, passkey: await key.assert(options) } });
    expect(res.status, await res.clone().text()).toBe(201);
    const { session_token } = await json<{ session_token: string }>(res);
    expect(res.headers.get("Set-Cookie")).toContain(session_token);
    expect(await sessionMethods(session_token)).toEqual(["pwd", "passkey"]);
    // The mfa_token was used once: the same answer again finds it gone.
    const again = await call("POST", "/users/login/mfa", { body: { mfa_token: first.mfa_token, passkey: await key.assert(options) } });
    await expectError(again, 401, MfaMessages.signInExpired);
  });

  it("a refused passkey is 401 Incorrect passkey. and costs one of the token's tries; a good one still signs in after", async () => {
    const { user, key } = await withPasskey();
    const first = await passwordStep(user);
    const bad = await call("POST", "/users/login/mfa", {
      body: { mfa_token: first.mfa_token, passkey: await key.assert(await mfaOptions(first.mfa_token), { badSignature: true }) },
    });
    await expectError(bad, 401, PasskeyMessages.incorrectPasskey);
    const attempts = await env.DB.prepare("SELECT attempts FROM mfa_challenges WHERE user_id = ?").bind(user.id).first<{ attempts: number }>();
    expect(attempts?.attempts).toBe(1);
    const good = await call("POST", "/users/login/mfa", {
      body: { mfa_token: first.mfa_token, passkey: await key.assert(await mfaOptions(first.mfa_token)) },
    });
    expect(good.status).toBe(201);
  });

  it("another user's passkey, or options issued for step-up, do not finish this user's sign-in", async () => {
    const { user, key } = await withPasskey();
    const other = await withPasskey();
    const first = await passwordStep(user);
    // The other user's passkey answering this step's options: not one of this user's.
    const foreign = await call("POST", "/users/login/mfa", {
      body: { mfa_token: first.mfa_token, passkey: await other.key.assert(await mfaOptions(first.mfa_token)) },
    });
    await expectError(foreign, 401, PasskeyMessages.incorrectPasskey);
    // This user's passkey answering a step-up challenge: issued for another ceremony.
    const stepUpChallenge = await stepUpOptions(user.token);
    const misused = await call("POST", "/users/login/mfa", { body: { mfa_token: first.mfa_token, passkey: await key.assert(stepUpChallenge) } });
    await expectError(misused, 401, PasskeyMessages.incorrectPasskey);
  });

  it("a body with both a code and a passkey, or neither, is a 400 that spends nothing", async () => {
    const { user, key } = await withPasskey();
    const first = await passwordStep(user);
    const passkey = await key.assert(await mfaOptions(first.mfa_token));
    const both = await call("POST", "/users/login/mfa", { body: { mfa_token: first.mfa_token, code: "123456", passkey } });
    expect(both.status).toBe(400);
    const neither = await call("POST", "/users/login/mfa", { body: { mfa_token: first.mfa_token } });
    expect(neither.status).toBe(400);
    const attempts = await env.DB.prepare("SELECT attempts FROM mfa_challenges WHERE user_id = ?").bind(user.id).first<{ attempts: number }>();
    expect(attempts?.attempts).toBe(0);
  });

  it("options for a dead mfa_token are 401; for a user without a passkey, 400 saying to use a code", async () => {
    const dead = await call("POST", "/users/login/mfa/passkey-options", { body: { mfa_token: "nope-nope" } });
    await expectError(dead, 401, MfaMessages.signInExpired);
    const user = await createUser();
    await expectError(await call("POST", "/users/me/step-up/passkey-options", { token: user.token }), 400, MfaMessages.noPasskey);
  });
});

describe('a passkey for step-up (docs/second-factor.md, "Step-up")', () => {
  it("an aged session is refused a new token, confirms with its passkey, and then gets it; the session records passkey", async () => {
    const { user, key } = await withPasskey();
    await ageSession(user.token, 2 * 24 * HOUR);
    const refused = await call("POST", "/users/me/keys/tokens", { token: user.token, body: { token_name: "ci" } });
    const body = await expectError(refused, 403, MfaMessages.confirmItIsYou);
    expect(body.detail).toBe(MfaMessages.stepUpRequired);

    // A password is not enough for a user with a factor.
    await expectError(
      await call("POST", "/users/me/step-up", { token: user.token, body: { password: user.password } }),
      400,
      MfaMessages.useSecondFactor,
    );
    const stepped = await call("POST", "/users/me/step-up", {
      token: user.token,
      body: { passkey: await key.assert(await stepUpOptions(user.token)) },
    });
    expect(stepped.status, await stepped.clone().text()).toBe(204);
    expect(await sessionMethods(user.token)).toContain("passkey");
    expect((await call("POST", "/users/me/keys/tokens", { token: user.token, body: { token_name: "ci" } })).status).toBe(201);
  });

  it("a refused passkey is 400 Incorrect passkey. and leaves the session as old as it was", async () => {
    const { user, key } = await withPasskey();
    await ageSession(user.token, 2 * 24 * HOUR);
    const before = await env.DB.prepare("SELECT auth_time FROM api_keys WHERE id = ?").bind(user.token.slice(0, 10)).first<{ auth_time: string }>();
    const bad = await call("POST", "/users/me/step-up", {
      token: user.token,
      body: { passkey: await key.assert(await stepUpOptions(user.token), { badSignature: true }) },
    });
    await expectError(bad, 400, PasskeyMessages.incorrectPasskey);
    const after = await env.DB.prepare("SELECT auth_time FROM api_keys WHERE id = ?").bind(user.token.slice(0, 10)).first<{ auth_time: string }>();
    expect(after?.auth_time).toBe(before?.auth_time);
  });
});

describe('adding and removing passkeys are step-up actions (docs/passkeys.md, "Removing a passkey")', () => {
  it("an aged session may neither start adding a passkey nor remove one until it steps up", async () => {
    const { user, key } = await withPasskey();
    const [listed] = await json<{ id: string }[]>(await call("GET", "/users/me/passkeys", { token: user.token }));
    await ageSession(user.token, 2 * 24 * HOUR);
    const adding = await call("POST", "/users/me/passkeys/options", { token: user.token });
    expect((await expectError(adding, 403, MfaMessages.confirmItIsYou)).detail).toBe(MfaMessages.stepUpRequired);
    const removing = await call("DELETE", `/users/me/passkeys/${listed?.id}`, { token: user.token });
    expect((await expectError(removing, 403, MfaMessages.confirmItIsYou)).detail).toBe(MfaMessages.stepUpRequired);

    await call("POST", "/users/me/step-up", { token: user.token, body: { passkey: await key.assert(await stepUpOptions(user.token)) } });
    expect((await call("DELETE", `/users/me/passkeys/${listed?.id}`, { token: user.token })).status).toBe(204);
  });

  it("removing the last passkey takes the recovery codes with it; with a second passkey left they stay", async () => {
    const { user } = await withPasskey();
    const second = await SoftAuthenticator.create("RS256");
    expect((await addPasskey(user.token, second)).status).toBe(201);
    expect((await call("POST", "/users/me/mfa/recovery-codes", { token: user.token })).status).toBe(200);
    expect(await mfaStatus(user.token)).toMatchObject({ passkeys: 2, recovery_codes_left: 10 });

    const ids = (await json<{ id: string }[]>(await call("GET", "/users/me/passkeys", { token: user.token }))).map((p) => p.id);
    expect((await call("DELETE", `/users/me/passkeys/${ids[0]}`, { token: user.token })).status).toBe(204);
    expect(await mfaStatus(user.token)).toMatchObject({ passkeys: 1, recovery_codes_left: 10 });
    expect((await call("DELETE", `/users/me/passkeys/${ids[1]}`, { token: user.token })).status).toBe(204);
    expect(await mfaStatus(user.token)).toEqual({ totp: false, passkeys: 0, recovery_codes_left: 0, required: false });
    const codes = await env.DB.prepare("SELECT count(*) AS n FROM recovery_codes WHERE user_id = ?").bind(user.id).first<{ n: number }>();
    expect(codes?.n).toBe(0);
    // With no factor left, the password signs in on its own again.
    expect((await call("POST", "/users/login", { body: { email: user.email, password: user.password } })).status).toBe(201);
  });

  it("an owner's reset removes the user's passkeys with the other factors", async () => {
    const { user, key } = await withPasskey();
    const admin = await owner();
    expect((await call("DELETE", `/users/${user.id}/mfa`, { token: admin.token })).status).toBe(204);
    const left = await env.DB.prepare("SELECT count(*) AS n FROM passkeys WHERE user_id = ?").bind(user.id).first<{ n: number }>();
    expect(left?.n).toBe(0);
    // The credential is free again: the same authenticator can be added to an account anew.
    const fresh = await createUser();
    expect((await addPasskey(fresh.token, key)).status).toBe(201);
  });
});
