/**
 * Bad input on the passkey endpoints of src/passkeys/routes.ts (docs/api.md, "Passkeys"; docs/passkeys.md). Every
 * endpoint gets property-based junk — malformed JSON, wrong JSON types, missing fields, huge and unicode values,
 * malformed WebAuthn JSON, hostile path segments and credentials — and must answer a 4xx in the error shape
 * (docs/api.md, Conventions) without changing the account tables, passkeys and challenges among them. The harness is
 * shared with the other bad-input suites (test/fixtures/bad-input.ts, test/fixtures/stored-state.ts; docs/testing.md,
 * "Bad input and permissions, in depth").
 *
 * | endpoint                              | body | path | credentials | Origin | > 1 MiB |
 * |---------------------------------------|------|------|-------------|--------|---------|
 * | POST /users/login/passkey/options     |      |      | (public)    | yes    | yes     |
 * | POST /users/login/passkey             | yes  |      | (public)    | yes    | yes     |
 * | POST /users/{user}/passkeys/options   |      | yes  | yes         | yes    | yes     |
 * | POST /users/{user}/passkeys           | yes  | yes  | yes         | yes    | yes     |
 * | GET /users/{user}/passkeys            |      | yes  | yes         |        |         |
 * | DELETE /users/{user}/passkeys/{id}    |      | yes  | yes         | yes    | yes     |
 *
 * The options endpoints take no body and ignore one. "Well-formed but false" properties at the end send what passes
 * the schema but no authenticator made — random bytes and CBOR where the attestation, authenticator data and
 * signature go, on a live challenge — and each must be refused (400 for adding, 401 for signing in), never a 5xx,
 * with nothing changed, the challenge included.
 */
import { env } from "cloudflare:workers";
import { type CBORType, encodeCBOR } from "@levischuck/tiny-cbor";
import * as fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { PasskeyMessages } from "../../src/passkeys/messages";
import { notA, textLongerThan } from "../fixtures/arbitraries";
import {
  accountRequestProperties,
  type BodyEndpoint,
  type EndpointCall,
  foreignOrigin,
  foreignOrigins,
  hostileSegment,
  knownUserRefs,
  type PathEndpoint,
  ACCOUNT_RUNS as RUNS,
  segmentsNamingNobody,
  wrongWriteMethods,
} from "../fixtures/bad-input";
import { stateChecks } from "../fixtures/stored-state";
import { call, createUser, json, owner, type TestUser } from "../helpers";
import { addPasskey, base64url, base64urlText, creationOptions, loginOptions, SoftAuthenticator } from "./authenticator";

const checks = stateChecks("accounts");
const { rejectedWithoutChange } = checks;

interface Fixtures {
  admin: { token: string; id: string };
  /** Holds one passkey; the requests below would succeed for it but for what each test breaks. */
  member: TestUser;
  passkeyId: string;
  authenticator: SoftAuthenticator;
  knownRefs: Set<string>;
}
let fx: Fixtures;

beforeAll(async () => {
  const admin = await owner();
  const member = await createUser();
  const authenticator = await SoftAuthenticator.create();
  const res = await addPasskey(member.token, authenticator);
  expect(res.status).toBe(201);
  fx = { admin, member, authenticator, passkeyId: (await json<{ id: string }>(res)).id, knownRefs: await knownUserRefs() };
});

// ---------------------------------------------------------------------------------------------------------------
// Malformed WebAuthn JSON
// ---------------------------------------------------------------------------------------------------------------

/** Schema-valid shapes, for the corruptions below: each field's own rule is what a corruption breaks. */
const REGISTRATION = { id: "AAAA", rawId: "AAAA", response: { clientDataJSON: "AAAA", attestationObject: "AAAA" }, type: "public-key" };
const ASSERTION = {
  id: "AAAA",
  rawId: "AAAA",
  response: { clientDataJSON: "AAAA", authenticatorData: "AAAA", signature: "AAAA" },
  type: "public-key",
};

/** Text that is not unpadded base64url: padding, the other alphabet, spaces, unicode, nothing at all. */
const notBase64url = fc.oneof(
  fc.constantFrom("", "AAAA==", "a+b/", "has space", "ünïcode", "AA.AA", "\u0000"),
  fc.string({ minLength: 1, maxLength: 30 }).filter((s) => !/^[A-Za-z0-9_-]+$/.test(s)),
);
const bytesText = (n: number) => fc.constant("A".repeat(n));

/** A WebAuthn response with one field broken: the wrong kind, not base64url, too long, or missing. */
function brokenResponse(template: typeof REGISTRATION | typeof ASSERTION, limits: Record<string, number>) {
  const inner = Object.keys(template.response);
  const top = ["id", "rawId", "type"];
  const badValue = (limit: number) => fc.oneof(notA("string"), notBase64url, bytesText(limit + 1));
  return fc.oneof(
    notA("object"),
    fc.constantFrom(...top).chain((k) =>
      (k === "type" ? fc.oneof(notA("string"), fc.constantFrom("", "public_key", "password")) : badValue(1364)).map((v) => ({
        ...template,
        [k]: v,
      })),
    ),
    fc.constantFrom(...top, "response").map((k) => Object.fromEntries(Object.entries(template).filter(([key]) => key !== k))),
    fc.constantFrom(...inner).chain((k) => badValue(limits[k] ?? 0).map((v) => ({ ...template, response: { ...template.response, [k]: v } }))),
    fc
      .constantFrom(...inner)
      .map((k) => ({ ...template, response: Object.fromEntries(Object.entries(template.response).filter(([key]) => key !== k)) })),
    notA("object").map((v) => ({ ...template, response: v })),
  );
}

const badRegistration = brokenResponse(REGISTRATION, { clientDataJSON: 4096, attestationObject: 32_768 });
const badAssertion = brokenResponse(ASSERTION, { clientDataJSON: 4096, authenticatorData: 4096, signature: 1024 });

const BODY_ENDPOINTS: readonly BodyEndpoint[] = [
  {
    name: "POST /users/{user}/passkeys",
    method: "POST",
    path: () => "/users/me/passkeys",
    token: () => fx.member.token,
    base: () => ({ name: "Laptop", response: REGISTRATION }),
    bad: { name: fc.oneof(notA("string"), textLongerThan(64), fc.constant(""), fc.constant("two\nlines")), response: badRegistration },
    required: ["response"],
  },
  {
    name: "POST /users/login/passkey",
    method: "POST",
    path: () => "/users/login/passkey",
    token: () => undefined,
    base: () => ({ response: ASSERTION }),
    bad: { response: badAssertion },
    required: ["response"],
  },
];

const ENDPOINTS: readonly EndpointCall[] = [
  { name: "POST /users/login/passkey/options", method: "POST", path: () => "/users/login/passkey/options", as: "public" },
  { name: "POST /users/login/passkey", method: "POST", path: () => "/users/login/passkey", body: () => ({ response: ASSERTION }), as: "public" },
  { name: "POST /users/{user}/passkeys/options", method: "POST", path: () => "/users/me/passkeys/options", as: "member" },
  { name: "POST /users/{user}/passkeys", method: "POST", path: () => "/users/me/passkeys", body: () => ({ response: REGISTRATION }), as: "member" },
  { name: "GET /users/{user}/passkeys", method: "GET", path: () => "/users/me/passkeys", as: "member" },
  { name: "DELETE /users/{user}/passkeys/{id}", method: "DELETE", path: () => `/users/me/passkeys/${fx.passkeyId}`, as: "member" },
];

accountRequestProperties(BODY_ENDPOINTS, ENDPOINTS, () => fx, checks);

describe("Origin", () => {
  foreignOrigins(
    "a session cookie from a foreign Origin, or with none, on every write → 403, nothing changed",
    ENDPOINTS.filter((e) => e.as !== "public"),
    () => fx,
    checks,
    RUNS.some,
  );

  it("passwordless sign-in from a foreign Origin → 403 on both steps, nothing changed (login CSRF)", async () => {
    await fc.assert(
      fc.asyncProperty(
        foreignOrigin.filter((o) => o !== ""),
        fc.constantFrom(...ENDPOINTS.filter((e) => e.as === "public")),
        async (origin, endpoint) => {
          const body = endpoint.body?.();
          await rejectedWithoutChange(() => call(endpoint.method, endpoint.path(), { headers: { Origin: origin }, ...(body ? { body } : {}) }), {
            status: 403,
          });
        },
      ),
      { numRuns: RUNS.some },
    );
  });
});

describe("path parameters", () => {
  /** Each would succeed for the owner (or the member, on its own passkey) with a real segment; the hostile one makes it a 404. */
  const PATH_ENDPOINTS: readonly PathEndpoint[] = [
    { name: "POST /users/{user}/passkeys/options", method: "POST", path: (s) => `/users/${s}/passkeys/options`, as: "owner" },
    {
      name: "POST /users/{user}/passkeys",
      method: "POST",
      path: (s) => `/users/${s}/passkeys`,
      body: () => ({ response: REGISTRATION }),
      as: "owner",
    },
    { name: "GET /users/{user}/passkeys", method: "GET", path: (s) => `/users/${s}/passkeys`, as: "owner" },
    {
      name: "DELETE /users/{user}/passkeys/{id} (hostile user)",
      method: "DELETE",
      path: (s) => `/users/${s}/passkeys/${fx.passkeyId}`,
      as: "owner",
    },
    { name: "DELETE /users/{user}/passkeys/{id} (hostile id)", method: "DELETE", path: (s) => `/users/me/passkeys/${s}`, as: "member" },
  ];
  segmentsNamingNobody(
    "$name: a segment that names nothing → 404",
    PATH_ENDPOINTS,
    () => hostileSegment(fx.knownRefs, { uuids: true }),
    () => fx,
    checks,
    RUNS.some,
  );
});

describe("wrong methods", () => {
  wrongWriteMethods(
    () => ({
      "/users/login/passkey/options": ["POST"],
      "/users/login/passkey": ["POST"],
      "/users/me/passkeys/options": ["POST"],
      "/users/me/passkeys": ["GET", "POST"],
      [`/users/me/passkeys/${fx.passkeyId}`]: ["DELETE"],
    }),
    () => fx.member.token,
    RUNS.some,
  );
});

// ---------------------------------------------------------------------------------------------------------------
// Well-formed but false: what passes the schema, on a live challenge, and no authenticator made
// ---------------------------------------------------------------------------------------------------------------

const bytes = (max: number) => fc.uint8Array({ minLength: 1, maxLength: max });
const b64 = (max: number) => bytes(max).map((b) => base64url(b));

/** CBOR a hostile client could send as an attestation object: maps with every format name and junk statements. */
const junkAttestation = fc.oneof(
  bytes(400),
  fc
    .record({
      fmt: fc.oneof(fc.constantFrom("none", "packed", "fido-u2f", "tpm", "android-key", "android-safetynet", "apple"), fc.string({ maxLength: 12 })),
      attStmt: fc.dictionary(fc.constantFrom("alg", "sig", "x5c", "ver", "response", "certInfo", "pubArea"), fc.oneof(bytes(64), fc.integer())),
      authData: bytes(300),
    })
    .map(({ fmt, attStmt, authData }) =>
      encodeCBOR(
        new Map<string, CBORType>([
          ["fmt", fmt],
          ["attStmt", new Map(Object.entries(attStmt))],
          ["authData", authData],
        ]),
      ),
    ),
);

/**
 * How the clientDataJSON around a live challenge is written: as the browser writes it for the ceremony (`null`), or
 * with junk for its type and origin.
 */
const clientDataShape = fc.option(fc.record({ type: fc.string(), origin: fc.string(), tokenBinding: fc.jsonValue() }), { nil: null });

const clientData = (challenge: string, type: string, shape: { type: string; origin: string; tokenBinding: unknown } | null) =>
  base64urlText(JSON.stringify(shape === null ? { type, challenge, origin: "http://localhost:8787", crossOrigin: false } : { ...shape, challenge }));

describe("well-formed but false → refused, never a 5xx, nothing changed", () => {
  const refused = (send: () => Promise<Response>, status: number, message: string) => rejectedWithoutChange(send, { status, message });

  it("POST /users/{user}/passkeys: junk attestation objects on a live challenge → 400", async () => {
    // Creation options are limited to 10 a minute per user: a fresh user every 9 runs.
    let user = await createUser();
    let used = 0;
    await fc.assert(
      fc.asyncProperty(junkAttestation, clientDataShape, async (attestation, shape) => {
        if (++used % 9 === 0) user = await createUser();
        const options = await creationOptions(user.token);
        const response = {
          id: "AAAA",
          rawId: "AAAA",
          type: "public-key",
          response: {
            clientDataJSON: clientData(options.challenge, "webauthn.create", shape),
            attestationObject: base64url(attestation),
          },
        };
        await refused(() => call("POST", "/users/me/passkeys", { token: user.token, body: { response } }), 400, PasskeyMessages.registrationRefused);
      }),
      { numRuns: RUNS.many },
    );
  });

  it("POST /users/login/passkey: junk authenticator data and signatures on a live challenge → 401", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.boolean(),
        clientDataShape,
        b64(120),
        b64(300),
        fc.option(b64(64), { nil: undefined }),
        async (known, shape, authenticatorData, signature, junkHandle) => {
          const options = await loginOptions();
          // The registered passkey with its own user handle reaches the signature check; an unknown one stops before.
          const userHandle = known ? fx.authenticator.userHandle : junkHandle;
          const response = {
            id: known ? fx.authenticator.credentialId : "AAAA",
            rawId: known ? fx.authenticator.credentialId : "AAAA",
            type: "public-key",
            response: {
              clientDataJSON: clientData(options.challenge, "webauthn.get", shape),
              authenticatorData,
              signature,
              ...(userHandle === undefined ? {} : { userHandle }),
            },
          };
          await refused(() => call("POST", "/users/login/passkey", { body: { response } }), 401, PasskeyMessages.incorrectPasskey);
        },
      ),
      { numRuns: RUNS.many },
    );
    const stored = await env.DB.prepare("SELECT suspect_at FROM passkeys WHERE id = ?").bind(fx.passkeyId).first<{ suspect_at: string | null }>();
    expect(stored?.suspect_at, "junk never marks a passkey suspect").toBeNull();
  });
});
