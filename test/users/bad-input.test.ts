/**
 * Bad input on the account endpoints: the first user, accounts, roles, status, passwords, API tokens and login
 * sessions (docs/api.md: Sign-in, accounts and authorization, Searching users, Bootstrapping the first user). Every
 * endpoint gets property-based junk — malformed JSON, wrong JSON types, missing fields, huge and unicode values,
 * hostile path segments, query strings and credentials — and must answer a 4xx in the error shape (docs/api.md,
 * Conventions) without changing the account tables. The harness is shared with the other bad-input suites
 * (test/fixtures/bad-input.ts, test/fixtures/stored-state.ts; docs/testing.md, "Bad input and permissions, in
 * depth"); sign-in and the authorization endpoints have theirs in test/auth/ and test/authz/.
 *
 * Coverage, by what each endpoint actually reads:
 *
 * | endpoint                               | body | path | query | credentials | > 1 MiB |
 * |----------------------------------------|------|------|-------|-------------|---------|
 * | GET /users/first, POST /users/first    | yes  |      | yes   | (public)    | yes     |
 * | POST /users, GET /users                | yes  |      | yes   | yes         | yes     |
 * | GET, DELETE /users/{user}              |      | yes  | yes   | yes         | yes     |
 * | PUT /users/{user}/roles                | yes  | yes  |       | yes         | yes     |
 * | PUT /users/{user}/status/{action}      |      | yes  |       | yes         | yes     |
 * | PUT /users/{user}/password             | yes  | yes  |       | yes         | yes     |
 * | POST, GET /users/{user}/keys/tokens    | yes  | yes  | yes   | yes         | yes     |
 * | DELETE /users/{user}/keys/{id}         |      | yes  |       | yes         | yes     |
 * | GET, DELETE /users/{user}/keys/sessions |     | yes  | yes   | yes         | yes     |
 *
 * Endpoints that take no input of a kind (the status actions have no body) are fuzzed on what they do read; a few
 * "hostile but valid" properties at the end check that odd-yet-legal search texts are answered normally (2xx, never
 * 5xx) instead of being mistaken for attacks.
 *
 * State is fingerprinted from the account tables only: account changes made while arranging fixtures enqueue
 * notices in the background, so notification tables change on their own here (test/fixtures/stored-state.ts).
 */
import * as fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { EXTERNAL_SCOPES } from "../../src/authz/catalog";
import { UserMessages } from "../../src/users/messages";
import { endSessionsQuery, listUsersQuery } from "../../src/users/schemas";
import { parseUserSearch } from "../../src/users/search";
import { anyText, badBoundedString, badEmail, invalidBodies, malformedJson, notA, textLongerThan, textWithin } from "../fixtures/arbitraries";
import {
  accountRequestProperties,
  BAD_JSON,
  type BodyEndpoint,
  type EndpointCall,
  hostileSegment,
  knownUserRefs,
  outOfRange,
  type PathEndpoint,
  query,
  queryIgnored,
  queryText,
  ACCOUNT_RUNS as RUNS,
  rawPaths,
  rawQuery,
  repeatedKey,
  STRONG_PASSWORD,
  segmentsNamingNobody,
  unknownKey,
  VALIDATION_FAILED,
  wrongWriteMethods,
} from "../fixtures/bad-input";
import { assertErrorShape, expectRejected } from "../fixtures/error-shape";
import { stateChecks } from "../fixtures/stored-state";
import { call, createUser, expectError, json, OWNER, owner, type TestUser } from "../helpers";

/** The account tables (see above), read whole. */
const checks = stateChecks("accounts");
const { snapshot, rejectedWithoutChange, answeredWithoutChange } = checks;

/** wrangler.toml `TOKEN_MAX_LIFETIME = "720h"`, in seconds. */
const TOKEN_MAX_LIFETIME_S = 720 * 60 * 60;

// ---------------------------------------------------------------------------------------------------------------
// Arbitraries
// ---------------------------------------------------------------------------------------------------------------

/** Values an enum of strings rejects. */
const notOneOf = (values: readonly string[]) =>
  fc.oneof(
    notA("string"),
    anyText.filter((s) => !values.includes(s)),
  );

const USERNAME = /^[a-zA-Z0-9]+(?:-[a-zA-Z0-9]+)*$/;
const badUsername = fc.oneof(
  notA("string"),
  anyText.filter((s) => !(USERNAME.test(s) && s.length <= 32)),
  fc.integer({ min: 33, max: 100_000 }).map((n) => "a".repeat(n)),
);

const TOKEN_NAME = /^[a-zA-Z0-9][a-zA-Z0-9 _.-]*$/;
const badTokenName = fc.oneof(
  notA("string"),
  anyText.filter((s) => !(TOKEN_NAME.test(s) && s.length <= 64)),
  fc.integer({ min: 65, max: 100_000 }).map((n) => "t".repeat(n)),
);

const badLifetime = fc.oneof(
  notA("number"),
  fc
    .oneof(fc.integer({ max: 0 }), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.integer({ min: TOKEN_MAX_LIFETIME_S + 1 }))
    .filter((n) => !(Number.isInteger(n) && n > 0 && n <= TOKEN_MAX_LIFETIME_S)),
);

const unknownScope = anyText.filter((s) => !EXTERNAL_SCOPES.includes(s));
const badScopes = fc.oneof(
  notA("array"),
  fc.constant([]),
  fc.tuple(fc.array(fc.constantFrom(...EXTERNAL_SCOPES), { maxLength: 3 }), unknownScope).map(([ok, bad]) => [...ok, bad]),
  fc.array(notA("string"), { minLength: 1, maxLength: 3 }),
  fc.array(fc.constantFrom(...EXTERNAL_SCOPES), { minLength: 101, maxLength: 200 }),
);

const SITE_ROLES = ["owner", "user-admin", "auditor"] as const;
const badRoles = fc.oneof(
  notA("array"),
  fc.tuple(fc.array(fc.constantFrom(...SITE_ROLES), { maxLength: 2 }), notOneOf(SITE_ROLES)).map(([ok, bad]) => [...ok, bad]),
  fc.array(fc.constantFrom(...SITE_ROLES), { minLength: 11, maxLength: 40 }),
);

// ---------------------------------------------------------------------------------------------------------------
// Fixtures and endpoint tables
// ---------------------------------------------------------------------------------------------------------------

interface Fixtures {
  admin: { token: string; id: string };
  /** Acts on itself: its password, tokens and self-service endpoints are fuzzed. */
  member: TestUser;
  /** A member the owner acts on: a successful roles/status/delete on it would show in the snapshot. */
  target: TestUser;
  /** A named token of `target`, the object of the key-deletion fuzz. */
  targetKeyId: string;
  /** Lower-cased ids and usernames of every user: generated path segments must never name one of them. */
  knownRefs: Set<string>;
}
let fx: Fixtures;

const BODY_ENDPOINTS: readonly BodyEndpoint[] = [
  {
    name: "POST /users/first",
    method: "POST",
    path: () => "/users/first",
    token: () => undefined,
    base: () => ({ email: "second-owner@herald.test", username: "second-owner", password: STRONG_PASSWORD }),
    bad: { email: badEmail, username: badUsername, name: badBoundedString(0, 128), password: badBoundedString(1, 1024) },
    required: ["email", "username", "password"],
  },
  {
    name: "POST /users",
    method: "POST",
    path: () => "/users",
    token: () => fx.admin.token,
    // Valid as is: a validation gap on any one field would create this user and show in the snapshot.
    base: () => ({ email: "fuzz-created@herald.test", username: "fuzz-created", password: STRONG_PASSWORD }),
    bad: {
      email: badEmail,
      username: badUsername,
      name: badBoundedString(0, 128),
      password: badBoundedString(1, 1024),
      login_type: notOneOf(["password", "oidc", "github", "none"]),
      service_account: notA("boolean"),
      user_status: notOneOf(["active", "suspended"]),
    },
    required: ["email", "username", "password"],
  },
  {
    name: "PUT /users/{user}/roles",
    method: "PUT",
    path: () => `/users/${fx.target.id}/roles`,
    token: () => fx.admin.token,
    base: () => ({ roles: ["auditor"] }),
    bad: { roles: badRoles },
    required: ["roles"],
  },
  {
    name: "PUT /users/{user}/password",
    method: "PUT",
    path: () => "/users/me/password",
    token: () => fx.member.token,
    // Correct old password and a strong new one: only the corrupted field stands between this body and a change.
    base: () => ({ old_password: fx.member.password, password: STRONG_PASSWORD }),
    bad: { old_password: fc.oneof(notA("string"), textLongerThan(1024)), password: badBoundedString(1, 1024) },
    required: ["old_password", "password"],
    // The schema lets old_password be absent (an administrator's reset of someone else's needs none); for your own
    // password the handler then refuses it as incorrect.
    ruleMessages: [UserMessages.oldPasswordIncorrect],
  },
  {
    name: "POST /users/{user}/keys/tokens",
    method: "POST",
    path: () => "/users/me/keys/tokens",
    token: () => fx.member.token,
    base: () => ({ token_name: "fuzz-token", lifetime: 3600, scopes: ["user:read"] }),
    bad: { token_name: badTokenName, lifetime: badLifetime, scopes: badScopes },
    required: ["token_name"],
    // Scope names and the deployment's lifetime cap are checked by the handler, after the schema.
    ruleMessages: [UserMessages.invalidScopes, UserMessages.lifetimeTooLong(TOKEN_MAX_LIFETIME_S)],
  },
];

/** Every endpoint, with a request that would succeed (given the fixtures) but for the one thing a test breaks. */
const ENDPOINTS: readonly EndpointCall[] = [
  { name: "GET /users/first", method: "GET", path: () => "/users/first", as: "public" },
  {
    name: "POST /users/first",
    method: "POST",
    path: () => "/users/first",
    body: () => ({ email: "x@herald.test", username: "x", password: STRONG_PASSWORD }),
    as: "public",
  },
  {
    name: "POST /users",
    method: "POST",
    path: () => "/users",
    body: () => ({ email: "made@herald.test", username: "made", password: STRONG_PASSWORD }),
    as: "owner",
  },
  { name: "GET /users", method: "GET", path: () => "/users", as: "owner" },
  { name: "GET /users/{user}", method: "GET", path: () => `/users/${fx.target.id}`, as: "owner" },
  { name: "DELETE /users/{user}", method: "DELETE", path: () => `/users/${fx.target.id}`, as: "owner" },
  { name: "PUT /users/{user}/roles", method: "PUT", path: () => `/users/${fx.target.id}/roles`, body: () => ({ roles: ["owner"] }), as: "owner" },
  { name: "PUT /users/{user}/status/suspend", method: "PUT", path: () => `/users/${fx.target.id}/status/suspend`, as: "owner" },
  { name: "PUT /users/{user}/status/activate", method: "PUT", path: () => `/users/${fx.target.id}/status/activate`, as: "owner" },
  {
    name: "PUT /users/{user}/password",
    method: "PUT",
    path: () => `/users/${fx.target.id}/password`,
    body: () => ({ password: STRONG_PASSWORD }),
    as: "owner",
  },
  {
    name: "POST /users/{user}/keys/tokens",
    method: "POST",
    path: () => `/users/${fx.target.id}/keys/tokens`,
    body: () => ({ token_name: "t" }),
    as: "owner",
  },
  { name: "GET /users/{user}/keys/tokens", method: "GET", path: () => `/users/${fx.target.id}/keys/tokens`, as: "owner" },
  { name: "DELETE /users/{user}/keys/{id}", method: "DELETE", path: () => `/users/${fx.target.id}/keys/${fx.targetKeyId}`, as: "owner" },
  { name: "GET /users/{user}/keys/sessions", method: "GET", path: () => `/users/${fx.target.id}/keys/sessions`, as: "owner" },
  { name: "DELETE /users/{user}/keys/sessions", method: "DELETE", path: () => `/users/${fx.target.id}/keys/sessions`, as: "owner" },
];

// ---------------------------------------------------------------------------------------------------------------
// Before the first user exists (this file has its own empty D1, so this must run before anything bootstraps)
// ---------------------------------------------------------------------------------------------------------------

describe("before bootstrap: POST /users/first", () => {
  // Based on the real first owner's details: a validation gap would create exactly the account the rest expects.
  const first: BodyEndpoint = {
    name: "POST /users/first (empty deployment)",
    method: "POST",
    path: () => "/users/first",
    token: () => undefined,
    base: () => ({ ...OWNER }),
    bad: {
      email: badEmail,
      username: badUsername,
      name: badBoundedString(0, 128),
      // Schema-valid but against the policy (common, personal, weak, over 256 code points): still a 400.
      password: fc.oneof(
        badBoundedString(1, 1024),
        fc.constantFrom("password", "12345678", "short", `${OWNER.username}-12345`, "aaaaaaaaaaaa", "\u0000".repeat(9), "Tr0ub4dor&3-".repeat(25)),
      ),
    },
    required: ["email", "username", "password"],
  };

  it("rejects malformed, mistyped and policy-violating bodies and creates nobody", async (context) => {
    const probe = await call("GET", "/users/first");
    if (probe.status !== 404) context.skip(); // storage was not fresh; the after-bootstrap tests still cover the endpoint
    await expectRejected(probe, { status: 404 });
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          invalidBodies(first).map((b) => b.body),
          notA("object"),
        ),
        async (body) => {
          await rejectedWithoutChange(() => call("POST", "/users/first", { body }), { status: 400 });
        },
      ),
      { numRuns: RUNS.many },
    );
    await fc.assert(
      fc.asyncProperty(malformedJson(OWNER), async (raw) => {
        await rejectedWithoutChange(() => call("POST", "/users/first", { raw }), { status: 400, message: BAD_JSON });
      }),
      { numRuns: RUNS.few },
    );
    expect((await snapshot()).users).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// After bootstrap
// ---------------------------------------------------------------------------------------------------------------

describe("bad input on every endpoint", () => {
  beforeAll(async () => {
    const admin = await owner();
    const member = await createUser();
    const target = await createUser();
    const key = await call("POST", `/users/${target.id}/keys/tokens`, { token: admin.token, body: { token_name: "fuzz-target-key" } });
    expect(key.status).toBe(201);
    const targetKeyId = (await json<{ key: string }>(key)).key.slice(0, 10);
    fx = { admin, member, target, targetKeyId, knownRefs: await knownUserRefs() };
  });

  accountRequestProperties(BODY_ENDPOINTS, ENDPOINTS, () => fx, checks);

  describe("path parameters", () => {
    /** Each request would succeed for the owner with a real segment; the hostile one must make it a 404. */
    const PATH_ENDPOINTS: readonly PathEndpoint[] = [
      { name: "GET /users/{user}", method: "GET", path: (s) => `/users/${s}`, as: "owner" },
      { name: "DELETE /users/{user}", method: "DELETE", path: (s) => `/users/${s}`, as: "owner" },
      { name: "PUT /users/{user}/roles", method: "PUT", path: (s) => `/users/${s}/roles`, body: () => ({ roles: ["auditor"] }), as: "owner" },
      { name: "PUT /users/{user}/status/suspend", method: "PUT", path: (s) => `/users/${s}/status/suspend`, as: "owner" },
      { name: "PUT /users/{user}/status/activate", method: "PUT", path: (s) => `/users/${s}/status/activate`, as: "owner" },
      {
        name: "PUT /users/{user}/password",
        method: "PUT",
        path: (s) => `/users/${s}/password`,
        body: () => ({ password: STRONG_PASSWORD }),
        as: "owner",
      },
      {
        name: "POST /users/{user}/keys/tokens",
        method: "POST",
        path: (s) => `/users/${s}/keys/tokens`,
        body: () => ({ token_name: "fuzz" }),
        as: "owner",
      },
      { name: "GET /users/{user}/keys/tokens", method: "GET", path: (s) => `/users/${s}/keys/tokens`, as: "owner" },
      { name: "GET /users/{user}/keys/sessions", method: "GET", path: (s) => `/users/${s}/keys/sessions`, as: "owner" },
      { name: "DELETE /users/{user}/keys/sessions", method: "DELETE", path: (s) => `/users/${s}/keys/sessions`, as: "owner" },
      { name: "DELETE /users/{user}/keys/{id} (hostile user)", method: "DELETE", path: (s) => `/users/${s}/keys/${fx.targetKeyId}`, as: "owner" },
      { name: "DELETE /users/{user}/keys/{id} (hostile id)", method: "DELETE", path: (s) => `/users/${fx.target.id}/keys/${s}`, as: "owner" },
    ];

    segmentsNamingNobody(
      "$name: a segment that names nobody → 404 for the owner",
      PATH_ENDPOINTS,
      () => hostileSegment(fx.knownRefs, { uuids: true }),
      () => fx,
      checks,
      RUNS.some,
    );

    // Unencoded: the URL parser and the router see these as written (dot segments, bad escapes, raw NUL escapes).
    const RAW_PATHS = [
      "/users/%00",
      "/users/%ZZ",
      "/users/%E0%A4%A",
      "/users/%",
      "/users/..",
      "/users/../..",
      "/users/%2e%2e",
      "/users/..%2f..%2fauth%2fscopes",
      "/users/me%00",
      "/users/%00/keys/tokens",
      "/users/me/keys/%00",
      "/users/me/keys/..",
      "/users/me/keys/../..",
      "/users/;DROP%20TABLE%20users",
      "/users/'%20OR%20'1'='1",
      "/users//roles",
      "/users/me/status/%73uspend",
      "/users/me/status/SUSPEND",
      "/users/me/status/",
      "/users/me/status/suspend%00",
      "/users/me/keys/tokens/..;",
    ] as const;
    rawPaths(RAW_PATHS, () => ({ token: fx.admin.token, body: { roles: ["auditor"], password: STRONG_PASSWORD, token_name: "raw" } }), checks);
  });

  describe("query strings", () => {
    // Every parameter the route accepts, read from its schema: an "unknown" key is never one of them.
    const KNOWN = Object.keys(listUsersQuery.shape);

    /** Parameter sets GET /users must refuse (unknown parameters, bad values → 400; docs/api.md, Conventions). */
    const invalidQuery = fc.oneof(
      fc.tuple(unknownKey(KNOWN), queryText).map(([k, v]) => [[k, v] as const]),
      queryText.filter(outOfRange(1, 100)).map((v) => [["limit", v] as const]),
      queryText.filter(outOfRange(0, 1_000_000)).map((v) => [["offset", v] as const]),
      queryText.filter((v) => v !== "active" && v !== "suspended").map((v) => [["status", v] as const]),
      textLongerThan(256, 2_000).map((v) => [["q", v] as const]),
      repeatedKey(KNOWN),
    );

    it("GET /users: unknown parameters and bad values → 400 Validation failed.", async () => {
      await fc.assert(
        fc.asyncProperty(invalidQuery, fc.boolean(), async (pairs, asMember) => {
          const token = asMember ? fx.member.token : fx.admin.token;
          await rejectedWithoutChange(() => call("GET", `/users?${query(pairs)}`, { token }), { status: 400, message: VALIDATION_FAILED });
        }),
        { numRuns: RUNS.many },
      );
    });

    it("GET /users: raw junk query strings are a 200 or a 400, never a 5xx", async () => {
      await fc.assert(
        fc.asyncProperty(rawQuery, async (raw) => {
          const res = await answeredWithoutChange(() => call("GET", `/users?${raw}`, { token: fx.admin.token }));
          expect([200, 400]).toContain(res.status);
          if (res.status === 400) assertErrorShape(await res.json());
        }),
        { numRuns: RUNS.some },
      );
    });

    it("DELETE /users/{user}/keys/sessions: unknown parameters and bad except_current values → 400, no session ended", async () => {
      const bad = fc.oneof(
        fc.tuple(unknownKey(Object.keys(endSessionsQuery.shape)), queryText).map(([k, v]) => [[k, v] as const]),
        queryText.filter((v) => v !== "true" && v !== "false").map((v) => [["except_current", v] as const]),
        fc.constant([
          ["except_current", "true"],
          ["except_current", "false"],
        ] as const),
      );
      await fc.assert(
        fc.asyncProperty(bad, async (pairs) => {
          await rejectedWithoutChange(() => call("DELETE", `/users/me/keys/sessions?${query(pairs)}`, { token: fx.member.token }), {
            status: 400,
            message: VALIDATION_FAILED,
          });
        }),
        { numRuns: RUNS.some },
      );
    });

    queryIgnored(
      () => [
        { path: "/users/first", token: undefined },
        { path: `/users/${fx.target.id}`, token: fx.admin.token },
        { path: "/users/me/keys/tokens", token: fx.member.token },
      ],
      checks,
      RUNS.some,
    );
  });

  describe("wrong methods", () => {
    // DELETE /users/<word> is not a wrong method: it is DELETE /users/{user} for a user named <word> (a 404).
    wrongWriteMethods(
      () => ({
        "/users/first": ["GET", "POST", "DELETE"],
        [`/users/${fx.target.id}/roles`]: ["PUT"],
        [`/users/${fx.target.id}/keys/${fx.targetKeyId}`]: ["DELETE"],
      }),
      () => fx.admin.token,
      RUNS.some,
    );
  });

  describe("hostile but legal values are answered normally", () => {
    it("GET /users?q=: any search text ≤ 256 → 200 with only matching users, or 400 naming q (Coder's search syntax); members still see only themselves", async () => {
      // Up to the full 256 code points (small and large alike). NUL is left to its own test below.
      const searchText = fc.oneof(
        textWithin(0, 256),
        fc.string({ unit: "binary", maxLength: 256, size: "max" }),
        fc.string({ unit: "grapheme-ascii", maxLength: 256, size: "max" }),
      );
      await fc.assert(
        fc.asyncProperty(
          searchText.filter((q) => !q.includes("\u0000")),
          fc.boolean(),
          async (q, asMember) => {
            const token = asMember ? fx.member.token : fx.admin.token;
            const res = await answeredWithoutChange(() => call("GET", `/users?q=${encodeURIComponent(q)}`, { token }));
            const parsed = parseUserSearch(q);
            if (!parsed.ok) {
              const body = await expectError(res, 400, UserMessages.invalidSearch);
              expect(body.validations?.every((v) => v.field === "q")).toBe(true);
              return;
            }
            expect(res.status).toBe(200);
            const list = await json<{ users: { id: string; username: string; name: string; email: string }[]; count: number }>(res);
            expect(Array.isArray(list.users)).toBe(true);
            expect(list.count).toBe(list.users.length);
            // LIKE wildcards (% _ \) in q are literal: every hit really contains the free text.
            for (const u of list.users) expect(`${u.username}\n${u.name}\n${u.email}`.toLowerCase()).toContain(parsed.search.text);
            if (asMember) for (const u of list.users) expect(u.id).toBe(fx.member.id);
          },
        ),
        { numRuns: RUNS.some },
      );
    });

    it("GET /users?q=: a search text at the schema's own limit (256 characters) → 200, not a 500", async () => {
      // The schema accepts q up to 256; D1 refuses LIKE patterns over 50 bytes, which must not surface as a 5xx.
      for (const q of ["a".repeat(48), "a".repeat(49), "a".repeat(256), "é".repeat(128)]) {
        const res = await answeredWithoutChange(() => call("GET", `/users?q=${encodeURIComponent(q)}`, { token: fx.admin.token }));
        expect(res.status, `q of ${q.length} characters`).toBe(200);
        expect(await json<{ users: unknown[] }>(res)).toMatchObject({ users: [], count: 0 });
      }
    });

    it("GET /users?q=: a NUL in the search text is refused or matched literally, never cut off", async () => {
      // SQLite's LIKE stops reading a pattern at a NUL: "%r\0zzz%" would become "%r" and match "owner" (and
      // "t\0zzz" every address ending in .test). No user contains these texts, so a 200 must list nobody.
      for (const q of ["r\u0000zzz", "t\u0000zzz", "\u0000"]) {
        const res = await answeredWithoutChange(() => call("GET", `/users?q=${encodeURIComponent(q)}`, { token: fx.admin.token }));
        if (res.status === 400) {
          assertErrorShape(await res.json());
          continue;
        }
        expect(res.status).toBe(200);
        expect(await json<{ users: unknown[]; count: number }>(res), JSON.stringify(q)).toMatchObject({ users: [], count: 0 });
      }
    });
  });
});
