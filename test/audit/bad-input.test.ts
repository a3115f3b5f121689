/**
 * Bad input on `GET /audit` (docs/security.md, "The audit log"; docs/api.md, Conventions): property-based junk in its
 * query — unknown and repeated parameters, `limit` and `offset` out of range or not whole numbers, and `q` with terms
 * without a key, unknown or repeated keys, empty, over-long or malformed values, and any text at all — plus raw query
 * strings, bad credentials and wrong methods. Each is a 4xx in the error shape (never a 5xx) and changes nothing: the
 * account tables, the audit log among them, are compared whole (test/fixtures/stored-state.ts). The harness is shared
 * with the other bad-input suites (test/fixtures/bad-input.ts; docs/testing.md, "Bad input and permissions, in depth").
 *
 * | endpoint   | body | path | query   | credentials | method |
 * |------------|------|------|---------|-------------|--------|
 * | GET /audit |      |      | yes, q  | yes         | yes    |
 */
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { AUDIT_SEARCH_KEYS, AuditMessages } from "../../src/audit/messages";
import { listAuditQuery } from "../../src/audit/schemas";
import { anyText, textLongerThan } from "../fixtures/arbitraries";
import {
  badCredentials,
  type EndpointCall,
  outOfRange,
  query,
  queryText,
  RUNS,
  rawQueries,
  repeatedKey,
  unknownKey,
  VALIDATION_FAILED,
  wrongMethods,
} from "../fixtures/bad-input";
import { stateChecks } from "../fixtures/stored-state";
import { call, createUser, owner, type TestUser } from "../helpers";

const checks = stateChecks("accounts");

interface Fixture {
  admin: { token: string; id: string };
  member: TestUser;
}
let fx: Fixture;

beforeAll(async () => {
  fx = { admin: await owner(), member: await createUser() };
});

const KEYS = Object.keys(listAuditQuery.shape);

describe("query parameters", () => {
  const invalid = fc.oneof(
    fc.tuple(unknownKey(KEYS), queryText).map(([k, v]) => [[k, v] as const]),
    queryText.filter(outOfRange(1, 100)).map((v) => [["limit", v] as const]),
    queryText.filter(outOfRange(0, 1_000_000)).map((v) => [["offset", v] as const]),
    textLongerThan(1_024, 5_000).map((v) => [["q", v] as const]),
    repeatedKey(KEYS),
  );
  it("unknown, repeated and out-of-range parameters, and a q over 1,024 characters → 400 Validation failed.", async () => {
    await fc.assert(
      fc.asyncProperty(invalid, async (pairs) => {
        await checks.rejectedWithoutChange(() => call("GET", `/audit?${query(pairs)}`, { token: fx.admin.token }), {
          status: 400,
          message: VALIDATION_FAILED,
        });
      }),
      { numRuns: RUNS.many },
    );
  });
});

describe("q", () => {
  /** A value with no whitespace (which would end the term). */
  const word = (min: number, max: number) => fc.string({ unit: "grapheme-ascii", minLength: min, maxLength: max }).filter((s) => !/\s/.test(s));
  const key = fc.constantFrom(...AUDIT_SEARCH_KEYS);
  const badTerm = fc.oneof(
    word(1, 40).filter((s) => s.indexOf(":") <= 0),
    fc
      .tuple(
        word(1, 20).filter((k) => !k.includes(":") && !(AUDIT_SEARCH_KEYS as readonly string[]).includes(k.toLowerCase())),
        word(0, 20),
      )
      .map(([k, v]) => `${k}:${v}`),
    key.map((k) => `${k}:`),
    fc
      .tuple(fc.constantFrom("action", "resource_type", "username", "ip"), fc.integer({ min: 65, max: 200 }))
      .map(([k, n]) => `${k}:${"a".repeat(n)}`),
    fc
      .tuple(
        fc.constantFrom("date_from", "date_to"),
        word(1, 30).filter((v) => !/^\d{4}-\d{2}-\d{2}$/.test(v)),
      )
      .map(([k, v]) => `${k}:${v}`),
    fc.constantFrom("date_from:2023-02-29", "date_to:2024-04-31", "date_from:2024-00-10", "date_from:2024-05-02 date_to:2024-05-01"),
    key.map((k) => `${k}:a ${k}:b`),
  );
  it("a term without a key, an unknown or repeated key, an empty, long or malformed value → 400 naming q", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.constantFrom("action:login", "ip:192.0.2.1"), { maxLength: 1 }), badTerm, async (good, bad) => {
        const q = [...good, bad].join(" ");
        const error = await checks.rejectedWithoutChange(() => call("GET", `/audit?q=${encodeURIComponent(q)}`, { token: fx.admin.token }), {
          status: 400,
          message: AuditMessages.invalidSearch,
        });
        expect(error.validations?.map((v) => v.field)).toContain("q");
      }),
      { numRuns: RUNS.many },
    );
  });

  it("any text as q → 200 or a 400 naming q, never a 5xx, nothing changed", async () => {
    await fc.assert(
      fc.asyncProperty(anyText, async (q) => {
        const res = await checks.answeredWithoutChange(() => call("GET", `/audit?${query([["q", q]])}`, { token: fx.admin.token }));
        expect([200, 400]).toContain(res.status);
        if (res.status === 400) {
          const body = await res.json<{ validations?: { field: string }[] }>();
          expect(body.validations?.map((v) => v.field)).toContain("q");
        }
      }),
      { numRuns: RUNS.many },
    );
  });

  rawQueries(
    "raw junk query strings are a 200 or a 400, never a 5xx",
    [{ path: "/audit", token: () => fx.admin.token, statuses: [200, 400] }],
    () => [],
    checks,
    RUNS.some,
  );
});

describe("credentials and methods", () => {
  const ENDPOINTS: readonly EndpointCall[] = [{ name: "GET /audit", method: "GET", path: () => "/audit", as: "owner" }];
  badCredentials(ENDPOINTS, () => fx, checks, RUNS.few);
  wrongMethods(
    () => ({ "/audit": ["GET"] }),
    () => fx.member.token,
    checks,
    RUNS.few,
  );
});
