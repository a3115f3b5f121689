/**
 * Passkeys end to end through the Worker, with a software authenticator (test/passkeys/authenticator.ts) holding
 * ES256 and RS256 keys made here: adding one, passwordless sign-in, removing one, and every refusal docs/passkeys.md
 * promises — a wrong origin, RP id hash or challenge, a reused or expired challenge, a bad signature, no user
 * verification, a counter that does not move forward — each with nothing changed (the account tables compared whole,
 * passkeys, sessions and challenges among them), but for the mark a suspect passkey gets.
 */
import { env } from "cloudflare:workers";
import type { CBORType } from "@levischuck/tiny-cbor";
import { describe, expect, it } from "vitest";
import { AuthMessages } from "../../src/auth/messages";
import { AuthzMessages } from "../../src/authz/messages";
import { sha256Hex } from "../../src/lib/crypto";
import { CeremonyDetails, PasskeyMessages } from "../../src/passkeys/messages";
import { PASSKEYS_MAX_PER_USER } from "../../src/passkeys/registration";
import { type Expectation, expectRejected } from "../fixtures/error-shape";
import { stateChecks } from "../fixtures/stored-state";
import { call, createUser, json, owner, type TestUser } from "../helpers";
import {
  type Algorithm,
  type Attestation,
  addPasskey,
  type Bend,
  base64url,
  base64urlText,
  creationOptions,
  loginOptions,
  passkeySignIn,
  type RequestOptions,
  SoftAuthenticator,
} from "./authenticator";

const ALGORITHMS: readonly Algorithm[] = ["ES256", "RS256"];
const { snapshot, rejectedWithoutChange } = stateChecks("accounts");

interface PasskeyBody {
  id: string;
  name: string;
  created_at: string;
  last_used_at: string | null;
  suspect_at: string | null;
}

interface PasskeyDbRow {
  id: string;
  user_id: string;
  credential_id: string;
  public_key: string;
  sign_count: number;
  transports: string;
  name: string;
  last_used_at: string | null;
  suspect_at: string | null;
  backup_eligible: number;
}

const passkeyRows = async (userId: string) =>
  (await env.DB.prepare("SELECT * FROM passkeys WHERE user_id = ? ORDER BY created_at").bind(userId).all<PasskeyDbRow>()).results;

const challengeLive = async (challenge: string) =>
  (
    await env.DB.prepare("SELECT count(*) AS n FROM webauthn_challenges WHERE challenge_hash = ?")
      .bind(await sha256Hex(challenge))
      .first<{ n: number }>()
  )?.n === 1;

/**
 * Sends, expects a 4xx in the error shape, and checks that no account table changed but for the challenge a
 * verified answer spent (docs/passkeys.md, "Challenges"): for the refusals that come after verification.
 */
async function refusedStoringNothing(send: () => Promise<Response>, expected: Expectation) {
  const { webauthn_challenges: _before, ...before } = await snapshot();
  const body = await expectRejected(await send(), expected);
  const { webauthn_challenges: _after, ...after } = await snapshot();
  expect(after, "a refused passkey request stored something").toEqual(before);
  return body;
}

async function registered(algorithm: Algorithm = "ES256", options: { counting?: boolean; backup?: boolean } = {}) {
  const user = await createUser();
  const authenticator = await SoftAuthenticator.create(algorithm, options);
  const res = await addPasskey(user.token, authenticator);
  expect(res.status, await res.clone().text()).toBe(201);
  return { user, authenticator, passkey: await json<PasskeyBody>(res) };
}

const sessionsOf = async (userId: string) =>
  (await env.DB.prepare("SELECT count(*) AS n FROM api_keys WHERE user_id = ? AND login_type != 'token'").bind(userId).first<{ n: number }>())?.n ??
  0;

describe('docs/passkeys.md, "Adding a passkey"', () => {
  it.each(ALGORITHMS)(
    "%s: the creation options, then the authenticator's answer → 201; listed, stored, and excluded next time",
    async (algorithm) => {
      const user = await createUser();
      const options = await creationOptions(user.token);
      expect(options).toMatchObject({
        rp: { id: "localhost", name: "Herald" },
        user: { id: base64urlText(user.id), name: user.email, displayName: user.username },
        pubKeyCredParams: [
          { alg: -7, type: "public-key" },
          { alg: -257, type: "public-key" },
        ],
        timeout: 300_000,
        attestation: "none",
        excludeCredentials: [],
        authenticatorSelection: { residentKey: "required", requireResidentKey: true, userVerification: "required" },
      });
      expect(await challengeLive(options.challenge)).toBe(true);

      const authenticator = await SoftAuthenticator.create(algorithm);
      const res = await call("POST", "/users/me/passkeys", { token: user.token, body: { response: await authenticator.register(options) } });
      expect(res.status, await res.clone().text()).toBe(201);
      const passkey = await json<PasskeyBody>(res);
      expect(passkey).toEqual({ id: expect.any(String), name: "Passkey", created_at: expect.any(String), last_used_at: null, suspect_at: null });
      expect(await challengeLive(options.challenge), "the challenge is spent").toBe(false);

      const [row] = await passkeyRows(user.id);
      expect(row).toMatchObject({ id: passkey.id, credential_id: authenticator.credentialId, sign_count: 1, transports: '["internal","hybrid"]' });
      const audit = await env.DB.prepare(
        "SELECT user_id, diff FROM audit_logs WHERE action = 'create' AND resource_type = 'passkey' AND resource_id = ?",
      )
        .bind(passkey.id)
        .first<{ user_id: string; diff: string }>();
      expect(audit?.user_id).toBe(user.id);
      expect(JSON.parse(audit?.diff ?? "{}")).toEqual({ owner: user.id, name: "Passkey" });

      const list = await call("GET", "/users/me/passkeys", { token: user.token });
      expect(await json(list)).toEqual([passkey]);
      const next = await creationOptions(user.token);
      expect(next.excludeCredentials).toEqual([{ id: authenticator.credentialId, type: "public-key", transports: ["internal", "hybrid"] }]);
    },
  );

  it("keeps the name given, and names one given none after its kind of authenticator", async () => {
    const user = await createUser();
    const named = await addPasskey(user.token, await SoftAuthenticator.create(), { name: "Work laptop 💻" });
    expect((await json<PasskeyBody>(named)).name).toBe("Work laptop 💻");
    const synced = await addPasskey(user.token, await SoftAuthenticator.create("ES256", { backup: true }));
    expect((await json<PasskeyBody>(synced)).name).toBe("Synced passkey");
    const rows = await passkeyRows(user.id);
    expect(rows.map((r) => r.backup_eligible)).toEqual([0, 1]);
  });

  it.each(ALGORITHMS)("%s: packed self-attestation is verified as well → 201", async (algorithm) => {
    const user = await createUser();
    const authenticator = await SoftAuthenticator.create(algorithm);
    const response = await authenticator.register(await creationOptions(user.token), {}, "packed");
    const res = await call("POST", "/users/me/passkeys", { token: user.token, body: { response } });
    expect(res.status, await res.clone().text()).toBe(201);
  });

  const ORIGIN = "http://localhost:8787";
  const BENT: readonly [string, Bend, "none" | "packed", string][] = [
    ["a wrong origin", { origin: "http://localhost.evil.test" }, "none", CeremonyDetails.origin(ORIGIN)],
    ["a wrong RP id hash", { rpId: "evil.test" }, "none", CeremonyDetails.rpIdHash("localhost")],
    ["a sign-in's client data type", { type: "webauthn.get" }, "none", CeremonyDetails.type("webauthn.create")],
    ["no user verification", { uv: false }, "none", CeremonyDetails.userVerification],
    ["no user presence", { up: false, uv: false }, "none", CeremonyDetails.userPresence],
    ["a bad attestation signature", { badSignature: true }, "packed", CeremonyDetails.attestationUnverified],
    ["an answer made in another site's frame", { crossOrigin: true, topOrigin: "https://evil.test" }, "none", CeremonyDetails.crossOrigin],
    ["a top origin on an answer that says it is not cross-origin", { topOrigin: "https://evil.test" }, "none", CeremonyDetails.crossOrigin],
    ["the backed-up flag without backup eligibility", { backedUpOnly: true }, "none", CeremonyDetails.backupFlags],
    ["a response id other than the credential's", { responseId: base64url(new Uint8Array(32)) }, "none", CeremonyDetails.credentialId],
    ["a packed statement naming another algorithm", { attestationAlg: -35 }, "packed", CeremonyDetails.attestationAlgorithm],
  ];
  describe.each(ALGORITHMS)("%s", (algorithm) => {
    it.each(BENT)("%s → 400 saying so, nothing changed, the challenge still live", async (_, bend, attestation, detail) => {
      const user = await createUser();
      const options = await creationOptions(user.token);
      const response = await (await SoftAuthenticator.create(algorithm)).register(options, bend, attestation);
      const error = await rejectedWithoutChange(() => call("POST", "/users/me/passkeys", { token: user.token, body: { response } }), {
        status: 400,
        message: PasskeyMessages.registrationRefused,
      });
      expect(error.detail, "the detail says what did not match").toBe(detail);
      expect(await challengeLive(options.challenge)).toBe(true);
      expect(await passkeyRows(user.id)).toEqual([]);
    });
  });

  it.each([
    ["ES384", -35],
    ["EdDSA", -8],
  ] as const)("a %s key, neither ES256 nor RS256 → 400 naming its algorithm, nothing stored", async (algorithm, cose) => {
    const user = await createUser();
    const options = await creationOptions(user.token);
    for (const attestation of ["none", "packed"] as const) {
      const response = await (await SoftAuthenticator.create(algorithm)).register(options, {}, attestation);
      const error = await rejectedWithoutChange(() => call("POST", "/users/me/passkeys", { token: user.token, body: { response } }), {
        status: 400,
        message: PasskeyMessages.registrationRefused,
      });
      expect(error.detail).toBe(CeremonyDetails.algorithm(cose));
    }
    expect(await challengeLive(options.challenge)).toBe(true);
  });

  describe('docs/passkeys.md, "Attestation"', () => {
    const junk = (n: number) => crypto.getRandomValues(new Uint8Array(n));
    const statement = (entries: [string, CBORType][]) => new Map<string, CBORType>(entries);
    const REFUSED: readonly [string, Attestation, string][] = [
      ["none with a statement in it", { fmt: "none", attStmt: statement([["sig", junk(70)]]) }, CeremonyDetails.attestationStatement],
      [
        "packed with a certificate chain (full attestation)",
        {
          fmt: "packed",
          attStmt: statement([
            ["alg", -7],
            ["sig", junk(70)],
            ["x5c", [junk(300)]],
          ]),
        },
        CeremonyDetails.fullAttestation,
      ],
      ["packed without a signature", { fmt: "packed", attStmt: statement([["alg", -7]]) }, CeremonyDetails.attestationStatement],
      [
        "fido-u2f",
        {
          fmt: "fido-u2f",
          attStmt: statement([
            ["sig", junk(70)],
            ["x5c", [junk(300)]],
          ]),
        },
        CeremonyDetails.attestationFormat("fido-u2f"),
      ],
      [
        "tpm",
        {
          fmt: "tpm",
          attStmt: statement([
            ["ver", "2.0"],
            ["alg", -257],
            ["x5c", [junk(300)]],
            ["sig", junk(256)],
          ]),
        },
        CeremonyDetails.attestationFormat("tpm"),
      ],
      [
        "android-key",
        {
          fmt: "android-key",
          attStmt: statement([
            ["alg", -7],
            ["sig", junk(70)],
          ]),
        },
        CeremonyDetails.attestationFormat("android-key"),
      ],
      [
        "android-safetynet",
        {
          fmt: "android-safetynet",
          attStmt: statement([
            ["ver", "1"],
            ["response", junk(100)],
          ]),
        },
        CeremonyDetails.attestationFormat("android-safetynet"),
      ],
      ["apple", { fmt: "apple", attStmt: statement([["x5c", [junk(300)]]]) }, CeremonyDetails.attestationFormat("apple")],
      ["a format WebAuthn does not define", { fmt: "x-".repeat(2000), attStmt: statement([]) }, CeremonyDetails.unknownAttestationFormat],
    ];
    it.each(REFUSED)("%s → 400 saying why, nothing stored, the challenge still live", async (_, attestation, detail) => {
      const user = await createUser();
      const options = await creationOptions(user.token);
      const response = await (await SoftAuthenticator.create()).register(options, {}, attestation);
      const error = await rejectedWithoutChange(() => call("POST", "/users/me/passkeys", { token: user.token, body: { response } }), {
        status: 400,
        message: PasskeyMessages.registrationRefused,
      });
      expect(error.detail).toBe(detail);
      expect(await challengeLive(options.challenge)).toBe(true);
    });
  });

  describe("challenges", () => {
    const refusedChallenge = async (user: TestUser, response: unknown) => {
      const error = await rejectedWithoutChange(() => call("POST", "/users/me/passkeys", { token: user.token, body: { response } }), {
        status: 400,
        message: PasskeyMessages.registrationRefused,
      });
      expect(error.detail).toBe(PasskeyMessages.challengeUnusable);
    };

    it("a challenge Herald never issued → 400; the one it did issue is left alone", async () => {
      const user = await createUser();
      const options = await creationOptions(user.token);
      const forged = base64url(crypto.getRandomValues(new Uint8Array(32)));
      await refusedChallenge(user, await (await SoftAuthenticator.create()).register(options, { challenge: forged }));
      expect(await challengeLive(options.challenge)).toBe(true);
    });

    it("a challenge used once → 400 the second time", async () => {
      const user = await createUser();
      const options = await creationOptions(user.token);
      const first = await call("POST", "/users/me/passkeys", {
        token: user.token,
        body: { response: await (await SoftAuthenticator.create()).register(options) },
      });
      expect(first.status).toBe(201);
      await refusedChallenge(user, await (await SoftAuthenticator.create()).register(options));
      expect(await passkeyRows(user.id)).toHaveLength(1);
    });

    it("a refused answer leaves its challenge: the right answer to the same options then succeeds", async () => {
      const user = await createUser();
      const options = await creationOptions(user.token);
      const authenticator = await SoftAuthenticator.create();
      const bad = await call("POST", "/users/me/passkeys", {
        token: user.token,
        body: { response: await authenticator.register(options, { origin: "http://x.test" }) },
      });
      await expectRejected(bad, { status: 400 });
      const good = await call("POST", "/users/me/passkeys", { token: user.token, body: { response: await authenticator.register(options) } });
      expect(good.status).toBe(201);
    });

    it("an expired challenge → 400", async () => {
      const user = await createUser();
      const options = await creationOptions(user.token);
      await env.DB.prepare("UPDATE webauthn_challenges SET expires_at = ? WHERE challenge_hash = ?")
        .bind(new Date(Date.now() - 1000).toISOString(), await sha256Hex(options.challenge))
        .run();
      await refusedChallenge(user, await (await SoftAuthenticator.create()).register(options));
    });

    it("a challenge issued to another user, or for signing in → 400", async () => {
      const [user, other] = await Promise.all([createUser(), createUser()]);
      await refusedChallenge(user, await (await SoftAuthenticator.create()).register(await creationOptions(other.token)));
      const signIn = await loginOptions();
      const asCreation = { ...(await creationOptions(user.token)), challenge: signIn.challenge };
      await refusedChallenge(user, await (await SoftAuthenticator.create()).register(asCreation));
      expect(await challengeLive(signIn.challenge), "a challenge of another purpose is not spent").toBe(true);
    });
  });

  it("the same authenticator twice, for this user or another → 409 This passkey is already registered.", async () => {
    const { user, authenticator } = await registered();
    const again = await addPasskey(user.token, authenticator);
    await expectRejected(again, { status: 409, message: PasskeyMessages.alreadyRegistered });
    const other = await createUser();
    await refusedStoringNothing(() => addPasskey(other.token, authenticator), { status: 409, message: PasskeyMessages.alreadyRegistered });
    expect(await passkeyRows(other.id)).toEqual([]);
  });

  it(`a user holding ${PASSKEYS_MAX_PER_USER} passkeys → 400 Too many passkeys., the challenge kept (docs/security.md, "What one user can make Herald hold")`, async () => {
    const user = await createUser();
    const insert = env.DB.prepare(
      "INSERT INTO passkeys (id, user_id, credential_id, public_key, name, created_at) VALUES (?, ?, ?, 'pQECAyYgASFYIA', 'Filler', ?)",
    );
    await env.DB.batch(
      Array.from({ length: PASSKEYS_MAX_PER_USER }, () => insert.bind(crypto.randomUUID(), user.id, crypto.randomUUID(), new Date().toISOString())),
    );
    const options = await creationOptions(user.token);
    const response = await (await SoftAuthenticator.create()).register(options);
    const error = await rejectedWithoutChange(() => call("POST", "/users/me/passkeys", { token: user.token, body: { response } }), {
      status: 400,
      message: PasskeyMessages.tooManyPasskeys,
    });
    expect(error.detail).toBe(PasskeyMessages.tooManyPasskeysDetail(PASSKEYS_MAX_PER_USER));
    expect(await challengeLive(options.challenge)).toBe(true);
  });
});

describe('docs/passkeys.md, "Who may do what"', () => {
  it("only the user themself gets creation options or adds a passkey, an owner included → 403", async () => {
    const admin = await owner();
    const member = await createUser();
    const response = await (await SoftAuthenticator.create()).register(await creationOptions(member.token));
    for (const [path, body] of [
      [`/users/${member.id}/passkeys/options`, undefined],
      [`/users/${member.id}/passkeys`, { response }],
    ] as const) {
      const error = await rejectedWithoutChange(() => call("POST", path, { token: admin.token, body }), { status: 403 });
      expect(error.detail).toBe(PasskeyMessages.onlySelf);
    }
  });

  it("a token narrowed to api_key:create cannot add a passkey, which would sign in with every scope → 403", async () => {
    const user = await createUser();
    const minted = await call("POST", "/users/me/keys/tokens", { token: user.token, body: { token_name: "narrow", scopes: ["api_key:create"] } });
    const { key } = await json<{ key: string }>(minted);
    for (const path of ["/users/me/passkeys/options", "/users/me/passkeys"]) {
      const body = path.endsWith("options")
        ? undefined
        : { response: await (await SoftAuthenticator.create()).register(await creationOptions(user.token)) };
      const error = await rejectedWithoutChange(() => call("POST", path, { token: key, body }), { status: 403 });
      expect(error.detail).toBe(PasskeyMessages.needsFullScope);
    }
  });

  it("an owner lists and removes another user's passkeys; a user-admin may not (as with API tokens)", async () => {
    const admin = await owner();
    const userAdmin = await createUser({ roles: ["user-admin"] });
    const { user, passkey } = await registered();
    expect(await json(await call("GET", `/users/${user.id}/passkeys`, { token: admin.token }))).toEqual([passkey]);
    const refused = await rejectedWithoutChange(() => call("GET", `/users/${user.id}/passkeys`, { token: userAdmin.token }), { status: 403 });
    expect(refused.detail).toBe(AuthzMessages.noPermission("read", "api_key"));
    await rejectedWithoutChange(() => call("DELETE", `/users/${user.id}/passkeys/${passkey.id}`, { token: userAdmin.token }), { status: 403 });
    expect((await call("DELETE", `/users/${user.id}/passkeys/${passkey.id}`, { token: admin.token })).status).toBe(204);
    expect(await passkeyRows(user.id)).toEqual([]);
  });
});

describe('docs/passkeys.md, "Signing in with a passkey"', () => {
  it("the request options: discoverable (no allowCredentials), user verification required, 5 minutes", async () => {
    const options = await loginOptions();
    expect(options).toEqual({
      rpId: "localhost",
      challenge: expect.any(String),
      allowCredentials: [],
      timeout: 300_000,
      userVerification: "required",
    });
    expect(await challengeLive(options.challenge)).toBe(true);
  });

  it.each(ALGORITHMS)("%s: a verified assertion → 201 with a session token and the session cookie, as A3", async (algorithm) => {
    const { user, authenticator, passkey } = await registered(algorithm);
    const res = await passkeySignIn(authenticator);
    expect(res.status, await res.clone().text()).toBe(201);
    const { session_token } = await json<{ session_token: string }>(res);
    expect(session_token).toMatch(/^[0-9A-Za-z]{10}-[0-9A-Za-z]{22}$/);
    const cookie = res.headers.get("Set-Cookie") ?? "";
    expect(cookie).toContain(`service_session_token=${session_token}`);
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Lax/i);
    const me = await call("GET", "/users/me", { token: session_token });
    expect((await json<{ id: string }>(me)).id).toBe(user.id);

    const [row] = await passkeyRows(user.id);
    expect(row?.sign_count).toBe(2);
    expect(row?.last_used_at).not.toBeNull();
    const audit = await env.DB.prepare("SELECT diff FROM audit_logs WHERE action = 'login' AND resource_id = ?")
      .bind(session_token.slice(0, 10))
      .first<{ diff: string }>();
    expect(JSON.parse(audit?.diff ?? "{}")).toEqual({ method: "passkey", passkey: passkey.id });
    const listed = await json<PasskeyBody[]>(await call("GET", "/users/me/passkeys", { token: session_token }));
    expect(listed[0]?.last_used_at).toBe(row?.last_used_at);
  });

  it("replaces the session the browser's cookie carried, as A3 does", async () => {
    const { user, authenticator } = await registered();
    const res = await passkeySignIn(authenticator, {}, { Cookie: `service_session_token=${user.token}` });
    expect(res.status).toBe(201);
    expect((await call("GET", "/users/me", { token: user.token })).status).toBe(401);
  });

  it("ES256: a signature whose r or s begins with a zero byte (shorter in DER) is as good as any, packed attestation and sign-in", async () => {
    // test/passkeys/webauthn.test.ts checks the same over thousands of signatures; this is the same answer end to end.
    const user = await createUser();
    const authenticator = await SoftAuthenticator.create("ES256");
    const response = await authenticator.register(await creationOptions(user.token), { zeroByte: true }, "packed");
    const added = await call("POST", "/users/me/passkeys", { token: user.token, body: { response } });
    expect(added.status, await added.clone().text()).toBe(201);
    const res = await passkeySignIn(authenticator, { zeroByte: true });
    expect(res.status, await res.clone().text()).toBe(201);
  });

  it("an authenticator that keeps no counter (0 every time) signs in again and again", async () => {
    const { user, authenticator } = await registered("ES256", { counting: false, backup: true });
    for (let i = 0; i < 3; i++) expect((await passkeySignIn(authenticator)).status).toBe(201);
    expect((await passkeyRows(user.id))[0]?.sign_count).toBe(0);
  });

  /** A sign-in that must fail: 401 `Incorrect passkey.`, no session, nothing changed (the challenge included). */
  async function refusedSignIn(assertion: unknown, detail?: string) {
    const error = await rejectedWithoutChange(() => call("POST", "/users/login/passkey", { body: { response: assertion } }), {
      status: 401,
      message: PasskeyMessages.incorrectPasskey,
    });
    expect(error.detail).toBe(detail);
    return error;
  }

  const BENT: readonly [string, Bend][] = [
    ["a wrong origin", { origin: "http://localhost.evil.test" }],
    ["a wrong RP id hash", { rpId: "evil.test" }],
    ["a registration's client data type", { type: "webauthn.create" }],
    ["a bad signature", { badSignature: true }],
    ["no user verification", { uv: false }],
    ["no user presence", { up: false, uv: false }],
    ["no user handle", { userHandle: null }],
    ["another user's handle", { userHandle: base64urlText(crypto.randomUUID()) }],
    ["an answer made in another site's frame", { crossOrigin: true, topOrigin: "https://evil.test" }],
    ["a top origin on an answer that says it is not cross-origin", { topOrigin: "https://evil.test" }],
    ["the backed-up flag without backup eligibility", { backedUpOnly: true }],
  ];
  describe.each(ALGORITHMS)("%s", (algorithm) => {
    it.each(BENT)("%s → 401 Incorrect passkey., no session", async (_, bend) => {
      const { user, authenticator } = await registered(algorithm);
      const options = await loginOptions();
      await refusedSignIn(await authenticator.assert(options, bend));
      expect(await challengeLive(options.challenge)).toBe(true);
      expect(await sessionsOf(user.id)).toBe(1);
      expect((await passkeyRows(user.id))[0]?.suspect_at).toBeNull();
    });
  });

  it("an unknown passkey and a bad signature get the same answer", async () => {
    const { authenticator } = await registered();
    const stranger = await SoftAuthenticator.create();
    stranger.userHandle = authenticator.userHandle;
    const unknown = await loginOptions();
    const forged = await loginOptions();
    expect(await refusedSignIn(await stranger.assert(unknown))).toEqual(
      await refusedSignIn(await authenticator.assert(forged, { badSignature: true })),
    );
  });

  it("a challenge never issued, used before, or issued to a user → 401 saying so; the challenge issued is left alone", async () => {
    const { user, authenticator } = await registered();
    const options = await loginOptions();
    const forged = base64url(crypto.getRandomValues(new Uint8Array(32)));
    await refusedSignIn(await authenticator.assert(options, { challenge: forged }), PasskeyMessages.challengeUnusable);
    expect(await challengeLive(options.challenge)).toBe(true);

    expect((await call("POST", "/users/login/passkey", { body: { response: await authenticator.assert(options) } })).status).toBe(201);
    expect(await challengeLive(options.challenge), "a verified answer spends it").toBe(false);
    await refusedSignIn(await authenticator.assert(options), PasskeyMessages.challengeUnusable);

    const creation = await creationOptions(user.token);
    const asRequest: RequestOptions = { ...options, challenge: creation.challenge };
    await refusedSignIn(await authenticator.assert(asRequest), PasskeyMessages.challengeUnusable);
    expect(await challengeLive(creation.challenge), "another purpose's challenge is not spent").toBe(true);
  });

  it("an expired challenge → 401", async () => {
    const { authenticator } = await registered();
    const options = await loginOptions();
    await env.DB.prepare("UPDATE webauthn_challenges SET expires_at = ? WHERE challenge_hash = ?")
      .bind(new Date(Date.now() - 1000).toISOString(), await sha256Hex(options.challenge))
      .run();
    await refusedSignIn(await authenticator.assert(options), PasskeyMessages.challengeUnusable);
  });

  describe('docs/passkeys.md, "Suspect passkeys"', () => {
    it.each([
      ["goes backwards", 1],
      ["stays where it was", 2],
      ["falls to 0", 0],
    ] as const)("a signature counter that %s → 401, and the passkey is suspect from then on", async (_, counter) => {
      const { user, authenticator, passkey } = await registered();
      expect((await passkeySignIn(authenticator)).status).toBe(201); // the counter is now 2
      const options = await loginOptions();
      const res = await call("POST", "/users/login/passkey", { body: { response: await authenticator.assert(options, { counter }) } });
      await expectRejected(res, { status: 401, message: PasskeyMessages.incorrectPasskey });
      const [row] = await passkeyRows(user.id);
      expect(row?.suspect_at).not.toBeNull();
      expect(row?.sign_count, "the stored counter stays").toBe(2);
      const audit = await env.DB.prepare("SELECT user_id, diff FROM audit_logs WHERE action = 'suspect' AND resource_id = ?")
        .bind(passkey.id)
        .first<{ user_id: string; diff: string }>();
      expect(audit?.user_id).toBe(user.id);
      expect(JSON.parse(audit?.diff ?? "{}")).toEqual({ sign_count: 2, presented: counter });

      // Even a correct assertion with a counter far ahead is refused now, and nothing about it is stored.
      await refusedSignIn(await authenticator.assert(await loginOptions(), { counter: 100 }));
      const [listed] = await json<PasskeyBody[]>(await call("GET", "/users/me/passkeys", { token: user.token }));
      expect(listed?.suspect_at).toBe(row?.suspect_at);
    });

    it("a forged assertion with a low counter marks nothing suspect: the signature is checked first", async () => {
      const { user, authenticator } = await registered();
      expect((await passkeySignIn(authenticator)).status).toBe(201);
      await refusedSignIn(await authenticator.assert(await loginOptions(), { counter: 1, badSignature: true }));
      expect((await passkeyRows(user.id))[0]?.suspect_at).toBeNull();
      expect((await passkeySignIn(authenticator)).status).toBe(201);
    });
  });

  describe("the account behind the passkey, checked after it verifies (as A3 after a correct password)", () => {
    it("suspended → 401 Your account is suspended.", async () => {
      const admin = await owner();
      const { user, authenticator } = await registered();
      expect((await call("PUT", `/users/${user.id}/status/suspend`, { token: admin.token })).status).toBe(200);
      const options = await loginOptions();
      const assertion = await authenticator.assert(options);
      await rejectedWithoutChange(() => call("POST", "/users/login/passkey", { body: { response: assertion } }), {
        status: 401,
        message: AuthMessages.suspended,
      });
      expect(await sessionsOf(user.id)).toBe(0);
    });

    it("a login type other than password (OIDC, GitHub: their provider decides) → 403", async () => {
      const { user, authenticator } = await registered();
      await env.DB.prepare("UPDATE users SET login_type = 'oidc' WHERE id = ?").bind(user.id).run();
      const assertion = await authenticator.assert(await loginOptions());
      await rejectedWithoutChange(() => call("POST", "/users/login/passkey", { body: { response: assertion } }), {
        status: 403,
        message: AuthMessages.wrongLoginType("passkey", "oidc"),
      });
    });

    it("deleted → its passkeys are gone: 401 Incorrect passkey.", async () => {
      const admin = await owner();
      const { user, authenticator } = await registered();
      expect((await call("DELETE", `/users/${user.id}`, { token: admin.token })).status).toBe(200);
      expect(await passkeyRows(user.id)).toEqual([]);
      await refusedSignIn(await authenticator.assert(await loginOptions()));
    });
  });

  it("another site's Origin → 403 on both steps (login CSRF)", async () => {
    const { authenticator } = await registered();
    const headers = { Origin: "https://evil.test" };
    await rejectedWithoutChange(() => call("POST", "/users/login/passkey/options", { headers }), { status: 403 });
    const assertion = await authenticator.assert(await loginOptions());
    await rejectedWithoutChange(() => call("POST", "/users/login/passkey", { headers, body: { response: assertion } }), { status: 403 });
  });

  it('rate limited per client address like A3 (docs/security.md, "Sign-in pathways")', async () => {
    const headers = { "CF-Connecting-IP": `192.0.2.${Math.floor(Math.random() * 250)}` };
    const statuses: number[] = [];
    for (let i = 0; i < 21; i++) statuses.push((await call("POST", "/users/login/passkey/options", { headers })).status);
    expect(statuses.slice(0, 20).every((s) => s === 200)).toBe(true);
    expect(statuses[20]).toBe(429);
  });
});

describe('docs/passkeys.md, "Removing a passkey"', () => {
  it("DELETE → 204; listed no more, and it signs in no more", async () => {
    const { user, authenticator, passkey } = await registered();
    expect((await call("DELETE", `/users/me/passkeys/${passkey.id.toUpperCase()}`, { token: user.token })).status).toBe(204);
    expect(await json(await call("GET", "/users/me/passkeys", { token: user.token }))).toEqual([]);
    const audit = await env.DB.prepare("SELECT diff FROM audit_logs WHERE action = 'delete' AND resource_type = 'passkey' AND resource_id = ?")
      .bind(passkey.id)
      .first<{ diff: string }>();
    expect(JSON.parse(audit?.diff ?? "{}")).toEqual({ owner: user.id, name: "Passkey" });
    const options = await loginOptions();
    await expectRejected(await call("POST", "/users/login/passkey", { body: { response: await authenticator.assert(options) } }), {
      status: 401,
      message: PasskeyMessages.incorrectPasskey,
    });
  });

  it("another user's passkey, an unknown id or no id at all → 404, nothing removed", async () => {
    const { passkey } = await registered();
    const other = await createUser();
    for (const id of [passkey.id, crypto.randomUUID(), "not-an-id"]) {
      await rejectedWithoutChange(() => call("DELETE", `/users/me/passkeys/${id}`, { token: other.token }), { status: 404 });
    }
  });
});

describe('a passkey is a second factor for password sign-in (docs/second-factor.md, "Signing in")', () => {
  it("the right password of a user with a passkey ends at the second step, with no session", async () => {
    const { user } = await registered();
    const res = await call("POST", "/users/login", { body: { email: user.email, password: user.password } });
    expect(res.status).toBe(200);
    expect(res.headers.get("Set-Cookie")).toBeNull();
    expect(await json(res)).toMatchObject({ mfa_required: true, methods: ["passkey"] });
  });
});
