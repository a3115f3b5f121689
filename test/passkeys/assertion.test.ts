/**
 * The assertion check every passkey ceremony shares (src/passkeys/assertion.ts; docs/passkeys.md, "One check for
 * every ceremony"): `passkeyRequestOptions` and `verifyPasskeyAssertion` for a second factor (`mfa`) and step-up
 * (`step-up`), driven the way a route uses them — here a small Hono app of the test's own, mounted on Herald's request
 * frame, sign-in middleware and error handler, answering the refusal's reason — with the software authenticator.
 * And the cron's sweep of challenges nobody presented.
 */
import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import * as z from "zod";
import { requireAuth } from "../../src/auth/session";
import { handleError, requestFrame } from "../../src/http/middleware";
import type { AppEnv } from "../../src/http/types";
import { jsonBody } from "../../src/http/validate";
import worker from "../../src/index";
import { sha256Hex } from "../../src/lib/crypto";
import { PasskeyRefused, passkeyRequestOptions, verifyPasskeyAssertion } from "../../src/passkeys/assertion";
import { AuthenticationResponse } from "../../src/passkeys/schemas";
import { call, createUser, json, type TestUser } from "../helpers";
import { addPasskey, type Bend, loginOptions, type RequestOptions, SoftAuthenticator } from "./authenticator";

type Purpose = "mfa" | "step-up";

/** A route pair per purpose, as a second-factor or step-up endpoint would use the check, for the signed-in user. */
const ceremony = new Hono<AppEnv>()
  .use(requestFrame)
  .post("/:purpose{mfa|step-up}/options", requireAuth, async (c) => {
    const target = { purpose: c.req.param("purpose") as Purpose, userId: c.get("auth").user.id };
    try {
      return c.json(await passkeyRequestOptions(c, target), 200);
    } catch (error) {
      if (error instanceof PasskeyRefused) return c.json({ refused: error.reason }, 401);
      throw error;
    }
  })
  .post("/:purpose{mfa|step-up}", requireAuth, jsonBody(z.object({ passkey: AuthenticationResponse })), async (c) => {
    const target = { purpose: c.req.param("purpose") as Purpose, userId: c.get("auth").user.id };
    try {
      const passkey = await verifyPasskeyAssertion(c, target, c.req.valid("json").passkey);
      return c.json({ passkey: passkey.id, sign_count: passkey.signCount, last_used_at: passkey.lastUsedAt }, 200);
    } catch (error) {
      if (error instanceof PasskeyRefused) return c.json({ refused: error.reason }, 401);
      throw error;
    }
  });
ceremony.onError(handleError);

async function ask(path: string, token: string, body?: unknown): Promise<Response> {
  const headers = new Headers({ "Service-Session-Token": token });
  if (body !== undefined) headers.set("Content-Type", "application/json");
  const ctx = createExecutionContext();
  const res = await ceremony.fetch(
    new Request(`http://localhost${path}`, { method: "POST", headers, body: body === undefined ? undefined : JSON.stringify(body) }),
    env,
    ctx,
  );
  await waitOnExecutionContext(ctx);
  return res;
}

async function optionsFor(purpose: Purpose, token: string): Promise<RequestOptions> {
  const res = await ask(`/${purpose}/options`, token);
  expect(res.status, await res.clone().text()).toBe(200);
  return json<RequestOptions>(res);
}

async function withPasskey(algorithm: "ES256" | "RS256" = "ES256"): Promise<{ user: TestUser; authenticator: SoftAuthenticator; id: string }> {
  const user = await createUser();
  const authenticator = await SoftAuthenticator.create(algorithm);
  const res = await addPasskey(user.token, authenticator);
  expect(res.status).toBe(201);
  return { user, authenticator, id: (await json<{ id: string }>(res)).id };
}

const verify = async (purpose: Purpose, token: string, authenticator: SoftAuthenticator, options: RequestOptions, bend: Bend = {}) =>
  ask(`/${purpose}`, token, { passkey: await authenticator.assert(options, bend) });

describe('docs/passkeys.md, "One check for every ceremony"', () => {
  it.each([
    ["mfa", "ES256"],
    ["step-up", "RS256"],
  ] as const)(
    "%s (%s): options list the user's passkeys; an assertion, user verification or not, returns the passkey",
    async (purpose, algorithm) => {
      const { user, authenticator, id } = await withPasskey(algorithm);
      const second = await SoftAuthenticator.create();
      expect((await addPasskey(user.token, second)).status).toBe(201);
      const options = await optionsFor(purpose, user.token);
      expect(options).toMatchObject({ rpId: "localhost", userVerification: "preferred", timeout: 300_000 });
      expect(options.allowCredentials.map((c) => c.id).sort()).toEqual([authenticator.credentialId, second.credentialId].sort());

      const res = await verify(purpose, user.token, authenticator, options, { uv: false });
      expect(res.status, await res.clone().text()).toBe(200);
      expect(await json(res)).toEqual({ passkey: id, sign_count: 2, last_used_at: expect.any(String) });
    },
  );

  it("a user without a passkey gets no options: no-passkey", async () => {
    const user = await createUser();
    const res = await ask("/step-up/options", user.token);
    expect(res.status).toBe(401);
    expect(await json(res)).toEqual({ refused: "no-passkey" });
  });

  it("a challenge is good for its own purpose and user only", async () => {
    const { user, authenticator } = await withPasskey();
    const other = await withPasskey();
    const cases: [string, () => Promise<RequestOptions>, Purpose][] = [
      ["a sign-in's challenge for step-up", loginOptions, "step-up"],
      ["an mfa challenge for step-up", () => optionsFor("mfa", user.token), "step-up"],
      ["a step-up challenge for mfa", () => optionsFor("step-up", user.token), "mfa"],
      ["another user's step-up challenge", () => optionsFor("step-up", other.user.token), "step-up"],
    ];
    for (const [label, options, purpose] of cases) {
      const res = await verify(purpose, user.token, authenticator, await options());
      expect(await json(res), label).toEqual({ refused: "challenge" });
    }
  });

  it("another user's passkey is not this user's: unknown-credential", async () => {
    const { user } = await withPasskey();
    const other = await withPasskey();
    const res = await verify("step-up", user.token, other.authenticator, await optionsFor("step-up", user.token));
    expect(await json(res)).toEqual({ refused: "unknown-credential" });
  });

  it("a bad signature: not-verified, nothing spent; the right answer on the same options then passes, once", async () => {
    const { user, authenticator, id } = await withPasskey();
    const options = await optionsFor("mfa", user.token);
    expect(await json(await verify("mfa", user.token, authenticator, options, { badSignature: true }))).toEqual({ refused: "not-verified" });
    expect(await json(await verify("mfa", user.token, authenticator, options))).toMatchObject({ passkey: id });
    expect(await json(await verify("mfa", user.token, authenticator, options))).toEqual({ refused: "challenge" });
  });

  it("a counter that went backwards: counter, then suspect, and the suspect passkey is left out of the options", async () => {
    const { user, authenticator } = await withPasskey();
    const spare = await SoftAuthenticator.create();
    expect((await addPasskey(user.token, spare)).status).toBe(201);
    expect(await json(await verify("step-up", user.token, authenticator, await optionsFor("step-up", user.token), { counter: 1 }))).toEqual({
      refused: "counter",
    });
    expect(await json(await verify("step-up", user.token, authenticator, await optionsFor("step-up", user.token), { counter: 50 }))).toEqual({
      refused: "suspect",
    });
    expect((await optionsFor("mfa", user.token)).allowCredentials.map((c) => c.id)).toEqual([spare.credentialId]);
  });
});

describe('docs/passkeys.md, "Challenges"', () => {
  it("the cron deletes the challenges nobody presented in time, and only those", async () => {
    const live = await loginOptions();
    const stale = await loginOptions();
    await env.DB.prepare("UPDATE webauthn_challenges SET expires_at = ? WHERE challenge_hash = ?")
      .bind(new Date(Date.now() - 1000).toISOString(), await sha256Hex(stale.challenge))
      .run();
    const ctx = createExecutionContext();
    await worker.scheduled(createScheduledController({ cron: "* * * * *" }), env, ctx);
    await waitOnExecutionContext(ctx);
    const left = await env.DB.prepare("SELECT challenge_hash FROM webauthn_challenges").all<{ challenge_hash: string }>();
    const hashes = left.results.map((r) => r.challenge_hash);
    expect(hashes).toContain(await sha256Hex(live.challenge));
    expect(hashes).not.toContain(await sha256Hex(stale.challenge));
  });

  it("only a hash of the challenge is stored", async () => {
    const { challenge } = await loginOptions();
    const row = await env.DB.prepare("SELECT * FROM webauthn_challenges WHERE challenge_hash = ?")
      .bind(await sha256Hex(challenge))
      .first();
    expect(JSON.stringify(row)).not.toContain(challenge);
    expect(row).toMatchObject({ purpose: "login", user_id: null });
  });
});

describe("the passkey list shows what the check did", () => {
  it("last_used_at follows a step-up", async () => {
    const { user, authenticator } = await withPasskey();
    const res = await verify("step-up", user.token, authenticator, await optionsFor("step-up", user.token));
    const { last_used_at } = await json<{ last_used_at: string }>(res);
    const [listed] = await json<{ last_used_at: string }[]>(await call("GET", "/users/me/passkeys", { token: user.token }));
    expect(listed?.last_used_at).toBe(last_used_at);
  });
});
