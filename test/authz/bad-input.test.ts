/**
 * Bad input on the authorization endpoints: the scopes an API key may carry (A1) and the authorization checks (A2)
 * (docs/api.md: Sign-in, accounts and authorization, Authorization checks; docs/authorization.md). Every endpoint
 * gets property-based junk — malformed JSON, wrong JSON types, missing fields, huge and unicode values, query strings
 * and credentials — and must answer a 4xx in the error shape (docs/api.md, Conventions) without changing the account
 * tables. The harness is shared with the other bad-input suites (test/fixtures/bad-input.ts,
 * test/fixtures/stored-state.ts; docs/testing.md, "Bad input and permissions, in depth").
 *
 * | endpoint         | body | path | query | credentials | > 1 MiB |
 * |------------------|------|------|-------|-------------|---------|
 * | GET /auth/scopes |      |      | yes   | (public)    |         |
 * | POST /authcheck  | yes  |      |       | yes         | yes     |
 *
 * GET /auth/scopes has no body, and is fuzzed on what it does read; "hostile but valid" properties at the end check
 * that odd-yet-legal checks (any keys, actions, types and ids; keys named like Object.prototype members) are answered
 * 200 with one boolean each instead of being mistaken for attacks.
 *
 * State is fingerprinted from the account tables only, as in the account suite (test/users/bad-input.test.ts): the
 * fixtures' accounts, and any a property makes, enqueue notices in the background, so notification tables change on
 * their own here (test/fixtures/stored-state.ts).
 */
import * as fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { badBoundedString, notA, textWithin } from "../fixtures/arbitraries";
import {
  accountRequestProperties,
  type BodyEndpoint,
  type EndpointCall,
  queryIgnored,
  ACCOUNT_RUNS as RUNS,
  wrongWriteMethods,
} from "../fixtures/bad-input";
import { stateChecks } from "../fixtures/stored-state";
import { call, createUser, json, owner, type TestUser } from "../helpers";

/** The account tables (see above), read whole. */
const checks = stateChecks("accounts");
const { answeredWithoutChange } = checks;

// ---------------------------------------------------------------------------------------------------------------
// Arbitraries
// ---------------------------------------------------------------------------------------------------------------

const GOOD_CHECK = { action: "read", object: { resource_type: "user", owner_id: "me" } };
const checkKey = fc.string({ unit: "binary", maxLength: 20 });
const badCheck = fc.oneof(
  notA("object"),
  fc.constant({ object: GOOD_CHECK.object }),
  fc.constant({ action: "read" }),
  badBoundedString(1, 64).map((action) => ({ ...GOOD_CHECK, action })),
  notA("object").map((object) => ({ action: "read", object })),
  fc.constant({ action: "read", object: {} }),
  badBoundedString(1, 64).map((resource_type) => ({ action: "read", object: { resource_type } })),
  fc
    .tuple(fc.constantFrom("owner_id", "organization_id", "resource_id"), badBoundedString(0, 64))
    .map(([field, value]) => ({ action: "read", object: { resource_type: "user", [field]: value } })),
  notA("boolean").map((any_org) => ({ action: "read", object: { resource_type: "user", any_org } })),
);
/** `checks` values POST /authcheck must reject: wrong type, one bad check among good ones, over 100 checks, over-long keys. */
const badChecks = fc.oneof(
  notA("object"),
  fc
    .tuple(fc.dictionary(checkKey, fc.constant(GOOD_CHECK), { maxKeys: 4 }), checkKey, badCheck)
    .map(([good, key, bad]) => Object.fromEntries([...Object.entries(good), [key, bad]])),
  fc.integer({ min: 101, max: 300 }).map((n) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`c${i}`, GOOD_CHECK]))),
  fc.integer({ min: 257, max: 10_000 }).map((n) => ({ ["k".repeat(n)]: GOOD_CHECK })),
);

// ---------------------------------------------------------------------------------------------------------------
// Fixtures and endpoint tables
// ---------------------------------------------------------------------------------------------------------------

interface Fixtures {
  admin: { token: string; id: string };
  /** The caller of the checks. */
  member: TestUser;
}
let fx: Fixtures;

beforeAll(async () => {
  fx = { admin: await owner(), member: await createUser() };
});

const BODY_ENDPOINTS: readonly BodyEndpoint[] = [
  {
    name: "POST /authcheck",
    method: "POST",
    path: () => "/authcheck",
    token: () => fx.member.token,
    base: () => ({ checks: { own: GOOD_CHECK } }),
    bad: { checks: badChecks },
    required: ["checks"],
  },
];

/** Every endpoint, with a request that would succeed (given the fixtures) but for the one thing a test breaks. */
const ENDPOINTS: readonly EndpointCall[] = [
  { name: "GET /auth/scopes", method: "GET", path: () => "/auth/scopes", as: "public" },
  { name: "POST /authcheck", method: "POST", path: () => "/authcheck", body: () => ({ checks: { own: GOOD_CHECK } }), as: "owner" },
];

accountRequestProperties(BODY_ENDPOINTS, ENDPOINTS, () => fx, checks);

describe("query strings", () => {
  queryIgnored(() => [{ path: "/auth/scopes", token: undefined }], checks, RUNS.some);
});

describe("wrong methods", () => {
  wrongWriteMethods(
    () => ({
      "/auth/scopes": ["GET"],
      "/authcheck": ["POST"],
    }),
    () => fx.admin.token,
    RUNS.some,
  );
});

describe("hostile but legal values are answered normally", () => {
  it("POST /authcheck: odd keys, actions, types and ids → 200 with one boolean per check", async () => {
    const id = fc.oneof(textWithin(0, 64), fc.uuid(), fc.constant("me"), fc.constant(fx.member.id));
    const check = fc.record(
      {
        action: fc.oneof(textWithin(1, 64), fc.constantFrom("read", "update", "delete", "create", "assign")),
        object: fc.record(
          {
            resource_type: fc.oneof(textWithin(1, 64), fc.constantFrom("user", "api_key", "organization", "*", "system")),
            owner_id: id,
            organization_id: id,
            resource_id: id,
            any_org: fc.boolean(),
          },
          { requiredKeys: ["resource_type"] },
        ),
      },
      { noNullPrototype: true },
    );
    // "__proto__" is excluded here only because it has its own test below.
    const key = textWithin(0, 256).filter((k) => k !== "__proto__");
    await fc.assert(
      fc.asyncProperty(fc.dictionary(key, check, { maxKeys: 100, noNullPrototype: true }), async (checks) => {
        const res = await answeredWithoutChange(() => call("POST", "/authcheck", { token: fx.member.token, body: { checks } }));
        expect(res.status).toBe(200);
        const result = await json<Record<string, unknown>>(res);
        expect(Object.keys(result).sort()).toEqual(Object.keys(checks).sort());
        for (const value of Object.values(result)) expect(value).toBeTypeOf("boolean");
      }),
      { numRuns: RUNS.some },
    );
  });

  it("POST /authcheck: check keys named like Object.prototype members come back like any other key", async () => {
    // POST /authcheck answers 200 {"<key>": bool, ...}: one answer per check, whatever the client named it (docs/api.md, Authorization checks).
    const names = ["__proto__", "constructor", "toString", "hasOwnProperty", "valueOf"];
    const raw = `{"checks": {${names.map((n) => `"${n}": {"action": "read", "object": {"resource_type": "user", "owner_id": "me"}}`).join(", ")}}}`;
    const res = await answeredWithoutChange(() => call("POST", "/authcheck", { token: fx.member.token, raw }));
    expect(res.status).toBe(200);
    const result = JSON.parse(await res.text()) as Record<string, unknown>;
    expect(Object.keys(result).sort()).toEqual([...names].sort());
    expect(Object.values(result)).toEqual(names.map(() => true));
  });
});
