/**
 * Bad input on the second-factor endpoints of src/auth/mfa/routes.ts (docs/api.md, "Second factor and step-up";
 * docs/second-factor.md). Every endpoint gets property-based junk — malformed JSON, wrong JSON types, missing fields,
 * huge and unicode values, hostile `{user}` segments and credentials — and must answer a 4xx in the error shape
 * (docs/api.md, Conventions) without changing the account tables, which include the factors, recovery codes and
 * waiting sign-ins (test/fixtures/stored-state.ts). The harness is shared with the other bad-input suites
 * (test/fixtures/bad-input.ts; docs/testing.md, "Bad input and permissions, in depth").
 *
 * | endpoint                                | body | path | credentials | > 1 MiB |
 * |-----------------------------------------|------|------|-------------|---------|
 * | POST /users/login/mfa                   | yes  |      | (public)    | yes     |
 * | POST /users/login/mfa/passkey-options   | yes  |      | (public)    | yes     |
 * | POST /users/me/step-up                  | yes  |      | yes, Origin | yes     |
 * | POST /users/me/step-up/passkey-options  |      |      | yes, Origin | yes     |
 * | GET /users/{user}/mfa                   |      | yes  | yes         |         |
 * | POST /users/{user}/mfa/totp             |      | yes  | yes, Origin | yes     |
 * | POST /users/{user}/mfa/totp/confirm     | yes  | yes  | yes, Origin | yes     |
 * | DELETE /users/{user}/mfa/totp           |      | yes  | yes, Origin | yes     |
 * | POST /users/{user}/mfa/recovery-codes   |      | yes  | yes, Origin | yes     |
 * | DELETE /users/{user}/mfa                |      | yes  | yes, Origin | yes     |
 *
 * Then hostile but well-formed `mfa_token`s, which must be refused without spending anyone's tries, and at the end
 * each body endpoint's base request, sent as is, succeeds: every rejection before it was about the input.
 */
import * as fc from "fast-check";
import { beforeAll, describe, it } from "vitest";
import { notA, textLongerThan } from "../fixtures/arbitraries";
import {
  accountRequestProperties,
  type BodyEndpoint,
  baseRequestsSucceed,
  type EndpointCall,
  foreignOrigins,
  hostileSegment,
  knownUserRefs,
  type PathEndpoint,
  RAW_PATH_BODY,
  ACCOUNT_RUNS as RUNS,
  rawPaths,
  segmentsNamingNobody,
  wrongMethods,
} from "../fixtures/bad-input";
import { stateChecks } from "../fixtures/stored-state";
import { call, createUser, owner, type TestUser } from "../helpers";
import { addPasskey, SoftAuthenticator } from "../passkeys/authenticator";
import { codeAt, type Enrolled, enrolTotp, forgetUsedStep, passwordStep } from "./mfa-helpers";

const checks = stateChecks("accounts");

interface Fixtures {
  admin: { token: string; id: string };
  /** Has an authenticator app pending: its confirmation is a body endpoint. */
  member: TestUser & { pendingSecret: string };
  /** Has an authenticator app on, and a sign-in waiting for its code. */
  enrolled: TestUser & Enrolled & { mfaToken: string };
  /** Has a passkey, and a sign-in waiting for its second step. */
  keyed: TestUser & { mfaToken: string };
  knownRefs: Set<string>;
}
let fx: Fixtures;

beforeAll(async () => {
  const admin = await owner();
  const [member, enrolledUser, keyedUser] = await Promise.all([createUser(), createUser(), createUser()]);
  await addPasskey(keyedUser.token, await SoftAuthenticator.create("ES256"));
  const keyedStep = await passwordStep(keyedUser);
  const begun = await call("POST", "/users/me/mfa/totp", { token: member.token });
  const { secret: pendingSecret } = (await begun.json()) as { secret: string };
  const enrolment = await enrolTotp(enrolledUser);
  await forgetUsedStep(enrolledUser.id);
  const { mfa_token } = await passwordStep(enrolledUser);
  fx = {
    admin,
    member: { ...member, pendingSecret },
    enrolled: { ...enrolledUser, ...enrolment, mfaToken: mfa_token },
    keyed: { ...keyedUser, mfaToken: keyedStep.mfa_token },
    knownRefs: await knownUserRefs(),
  };
});

const code = fc.oneof(notA("string"), textLongerThan(64), fc.constant(""));
/** Not an AuthenticationResponseJSON: another type, an empty object, or one with its parts of the wrong types. */
const passkey = fc.oneof(
  notA("object"),
  fc.constant({}),
  fc.record({ id: fc.integer(), rawId: fc.string(), type: fc.constant("public-key"), response: fc.string() }),
);
const mfaToken = fc.oneof(notA("string"), textLongerThan(128), fc.constant(""));

const BODY_ENDPOINTS: readonly BodyEndpoint[] = [
  {
    name: "second step POST /users/login/mfa",
    method: "POST",
    path: () => "/users/login/mfa",
    token: () => undefined,
    // A live token and the app's current code: if validation let a corrupted body through, a try would be spent.
    base: () => ({ mfa_token: fx.enrolled.mfaToken, code: codeAt(fx.enrolled.secret) }),
    bad: { mfa_token: mfaToken, code, passkey },
    required: ["mfa_token", "code"],
  },
  {
    name: "passkey options POST /users/login/mfa/passkey-options",
    method: "POST",
    path: () => "/users/login/mfa/passkey-options",
    token: () => undefined,
    // A live token of a user with a passkey: a corrupted body let through would store a challenge.
    base: () => ({ mfa_token: fx.keyed.mfaToken }),
    bad: { mfa_token: mfaToken },
    required: ["mfa_token"],
  },
  {
    name: "step-up POST /users/me/step-up",
    method: "POST",
    path: () => "/users/me/step-up",
    token: () => fx.member.token,
    base: () => ({ password: fx.member.password }),
    bad: { password: fc.oneof(notA("string"), textLongerThan(1024)), code, passkey },
    required: [],
  },
  {
    name: "confirm POST /users/{user}/mfa/totp/confirm",
    method: "POST",
    path: () => "/users/me/mfa/totp/confirm",
    token: () => fx.member.token,
    base: () => ({ code: codeAt(fx.member.pendingSecret) }),
    bad: { code },
    required: ["code"],
  },
];

/** Every endpoint, with a request that would succeed (given the fixtures) but for the one thing a test breaks. */
const ENDPOINTS: readonly EndpointCall[] = [
  { name: "POST /users/login/mfa", method: "POST", path: () => "/users/login/mfa", body: () => BODY_ENDPOINTS[0]?.base() ?? {}, as: "public" },
  {
    name: "POST /users/login/mfa/passkey-options",
    method: "POST",
    path: () => "/users/login/mfa/passkey-options",
    body: () => ({ mfa_token: fx.keyed.mfaToken }),
    as: "public",
  },
  { name: "POST /users/me/step-up", method: "POST", path: () => "/users/me/step-up", body: () => ({ password: fx.member.password }), as: "member" },
  { name: "POST /users/me/step-up/passkey-options", method: "POST", path: () => "/users/me/step-up/passkey-options", as: "member" },
  { name: "GET /users/{user}/mfa", method: "GET", path: () => "/users/me/mfa", as: "member" },
  { name: "POST /users/{user}/mfa/totp", method: "POST", path: () => "/users/me/mfa/totp", as: "member" },
  {
    name: "POST /users/{user}/mfa/totp/confirm",
    method: "POST",
    path: () => "/users/me/mfa/totp/confirm",
    body: () => ({ code: codeAt(fx.member.pendingSecret) }),
    as: "member",
  },
  { name: "DELETE /users/{user}/mfa/totp", method: "DELETE", path: () => "/users/me/mfa/totp", as: "member" },
  { name: "POST /users/{user}/mfa/recovery-codes", method: "POST", path: () => `/users/${fx.enrolled.id}/mfa/recovery-codes`, as: "member" },
  { name: "DELETE /users/{user}/mfa", method: "DELETE", path: () => `/users/${fx.enrolled.id}/mfa`, as: "owner" },
];

accountRequestProperties(BODY_ENDPOINTS, ENDPOINTS, () => fx, checks);

describe("credentials", () => {
  foreignOrigins(
    "a valid session cookie from a foreign or missing Origin cannot change anything → 403",
    ENDPOINTS.filter((e) => e.as !== "public"),
    () => fx,
    checks,
    RUNS.few,
  );
});

describe("path parameters", () => {
  const USER_PATHS: readonly PathEndpoint[] = [
    { name: "GET /users/{user}/mfa", method: "GET", path: (s) => `/users/${s}/mfa`, as: "member" },
    { name: "POST /users/{user}/mfa/totp", method: "POST", path: (s) => `/users/${s}/mfa/totp`, as: "member" },
    {
      name: "POST /users/{user}/mfa/totp/confirm",
      method: "POST",
      path: (s) => `/users/${s}/mfa/totp/confirm`,
      body: () => ({ code: "123456" }),
      as: "member",
    },
    { name: "DELETE /users/{user}/mfa/totp", method: "DELETE", path: (s) => `/users/${s}/mfa/totp`, as: "member" },
    { name: "POST /users/{user}/mfa/recovery-codes", method: "POST", path: (s) => `/users/${s}/mfa/recovery-codes`, as: "member" },
    { name: "DELETE /users/{user}/mfa", method: "DELETE", path: (s) => `/users/${s}/mfa`, as: "owner" },
  ];

  segmentsNamingNobody(
    "$name: a {user} that names nobody → 404",
    USER_PATHS,
    () => hostileSegment(fx.knownRefs, { uuids: true }),
    () => fx,
    checks,
    RUNS.few,
  );

  // Unencoded: the URL parser and the router see these as written.
  const RAW_PATHS = [
    "/users/%ZZ/mfa",
    "/users/me/mfa%00",
    "/users/me/mfa/totp/",
    "/users/me/mfa/%00/confirm",
    "/users/login/mfa%00",
    "/users/me/step-up/",
    "/users/me/step-up/passkey-options%00",
    "/users/login/mfa/passkey-options/",
  ] as const;
  rawPaths(RAW_PATHS, () => ({ token: fx.member.token, body: { ...RAW_PATH_BODY, code: "123456", mfa_token: "x" } }), checks);
});

describe("wrong methods", () => {
  wrongMethods(
    () => ({
      "/users/login/mfa": ["POST"],
      "/users/login/mfa/passkey-options": ["POST"],
      "/users/me/step-up": ["POST"],
      "/users/me/step-up/passkey-options": ["POST"],
      "/users/me/mfa": ["GET", "DELETE"],
      "/users/me/mfa/totp": ["POST", "DELETE"],
      "/users/me/mfa/totp/confirm": ["POST"],
      "/users/me/mfa/recovery-codes": ["POST"],
    }),
    () => fx.member.token,
    checks,
    RUNS.some,
  );
});

describe("hostile but well-formed values", () => {
  it("any mfa_token that is not a live one → 401, and no sign-in's tries are spent", async () => {
    const live = () => fx.enrolled.mfaToken;
    const token = fc.oneof(
      fc.string({ unit: "binary", minLength: 1, maxLength: 128 }),
      fc.stringMatching(/^[0-9A-Za-z]{16}-[0-9A-Za-z]{32}$/),
      // The live token's id with another secret: refused, and its tries untouched (checked by the snapshot).
      fc.stringMatching(/^[0-9A-Za-z]{32}$/).map((secret) => `${live().slice(0, 16)}-${secret}`),
    );
    await fc.assert(
      fc.asyncProperty(token, async (mfaToken) => {
        fc.pre(mfaToken !== live());
        await checks.rejectedWithoutChange(() => call("POST", "/users/login/mfa", { body: { mfa_token: mfaToken, code: "123456" } }), {
          status: [401, 429],
        });
      }),
      { numRuns: RUNS.few },
    );
  });
});

describe("the base requests were valid", () => {
  baseRequestsSucceed(BODY_ENDPOINTS, [
    ["second step", 201],
    ["passkey options", 200],
    ["step-up", 204],
    ["confirm", 200],
  ]);
});
