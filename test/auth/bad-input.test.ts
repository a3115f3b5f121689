/**
 * Bad input on the sign-in endpoints of src/auth/routes.ts: signing in with a password (A3), signing out, and the
 * password check (A6) (docs/api.md: Sign-in, accounts and authorization, Signing in with a password; docs/security.md
 * for the password check's rate limit). Every endpoint gets property-based junk — malformed JSON, wrong JSON types,
 * missing fields, huge and unicode values and credentials — and must answer a 4xx in the error shape (docs/api.md,
 * Conventions) without changing the account tables. The harness is shared with the other bad-input suites
 * (test/fixtures/bad-input.ts, test/fixtures/stored-state.ts; docs/testing.md, "Bad input and permissions, in
 * depth"); password reset by passcode, also in src/auth/, has its own suite: test/auth/password-reset-bad-input.test.ts.
 *
 * | endpoint                      | body | path | query | credentials | > 1 MiB |
 * |-------------------------------|------|------|-------|-------------|---------|
 * | POST /users/login             | yes  |      |       | (public)    | yes     |
 * | POST /users/logout            |      |      |       | yes, Origin | yes     |
 * | POST /users/validate-password | yes  |      |       | yes         | yes     |
 *
 * Logout ignores its body, and is fuzzed on what it does read; "hostile but valid" properties at the end check that
 * odd-yet-legal values (any e-mail and password, any password to check) are answered normally instead of being
 * mistaken for attacks.
 *
 * State is fingerprinted from the account tables only, as in the account suite (test/users/bad-input.test.ts): the
 * fixtures' accounts, and any a property makes, enqueue notices in the background, so notification tables change on
 * their own here (test/fixtures/stored-state.ts).
 */
import * as fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { anyText, badEmail, codePoints, notA, textLongerThan, textWithin } from "../fixtures/arbitraries";
import {
  accountRequestProperties,
  type BodyEndpoint,
  type EndpointCall,
  foreignOrigin,
  ACCOUNT_RUNS as RUNS,
  STRONG_PASSWORD,
  VALIDATION_FAILED,
  wrongWriteMethods,
} from "../fixtures/bad-input";
import { expectRejected } from "../fixtures/error-shape";
import { stateChecks } from "../fixtures/stored-state";
import { call, createUser, json, owner, type TestUser } from "../helpers";

/** The account tables (see above), read whole. */
const checks = stateChecks("accounts");
const { rejectedWithoutChange, answeredWithoutChange } = checks;

// ---------------------------------------------------------------------------------------------------------------
// Fixtures and endpoint tables
// ---------------------------------------------------------------------------------------------------------------

interface Fixtures {
  admin: { token: string; id: string };
  /** Signs in, out, and has passwords checked. */
  member: TestUser;
}
let fx: Fixtures;

beforeAll(async () => {
  fx = { admin: await owner(), member: await createUser() };
});

const BODY_ENDPOINTS: readonly BodyEndpoint[] = [
  {
    name: "POST /users/login",
    method: "POST",
    path: () => "/users/login",
    token: () => undefined,
    // A real account with a wrong password: if validation let a corrupted body through, it would still be a 401.
    base: () => ({ email: fx.member.email, password: "not-the-password" }),
    bad: { email: badEmail, password: fc.oneof(notA("string"), textLongerThan(1024)) },
    required: ["email", "password"],
  },
  {
    name: "POST /users/validate-password",
    method: "POST",
    path: () => "/users/validate-password",
    token: () => fx.member.token,
    base: () => ({ password: STRONG_PASSWORD }),
    bad: { password: fc.oneof(notA("string"), textLongerThan(4096)) },
    required: ["password"],
  },
];

/** Every endpoint, with a request that would succeed (given the fixtures) but for the one thing a test breaks. */
const ENDPOINTS: readonly EndpointCall[] = [
  {
    name: "POST /users/login",
    method: "POST",
    path: () => "/users/login",
    body: () => ({ email: fx.member.email, password: fx.member.password }),
    as: "public",
  },
  { name: "POST /users/logout", method: "POST", path: () => "/users/logout", as: "owner" },
  { name: "POST /users/validate-password", method: "POST", path: () => "/users/validate-password", body: () => ({ password: "x" }), as: "owner" },
];

accountRequestProperties(BODY_ENDPOINTS, ENDPOINTS, () => fx, checks);

describe("credentials", () => {
  it("POST /users/logout by cookie from a foreign or missing Origin → 403, the session survives", async () => {
    await fc.assert(
      fc.asyncProperty(foreignOrigin, async (o) => {
        const headers: Record<string, string> = { Cookie: `service_session_token=${fx.member.token}` };
        if (o) headers.Origin = o;
        await rejectedWithoutChange(() => call("POST", "/users/logout", { headers }), { status: 403 });
      }),
      { numRuns: RUNS.few },
    );
    expect((await call("GET", "/users/me", { token: fx.member.token })).status).toBe(200);
  });
});

describe("wrong methods", () => {
  // DELETE /users/<word> is not a wrong method: it is DELETE /users/{user} for a user named <word> (a 404).
  wrongWriteMethods(
    () => ({
      "/users/login": ["POST", "DELETE"],
      "/users/logout": ["POST", "DELETE"],
      "/users/validate-password": ["POST", "DELETE"],
    }),
    () => fx.admin.token,
    RUNS.some,
  );
});

describe("hostile but legal values are answered normally", () => {
  it("POST /users/login: any e-mail and password that are not an account's → 401 (or 429), nothing written", async () => {
    const email = fc.oneof(fc.emailAddress(), fc.constant(fx.member.email), fc.constant(fx.member.email.toUpperCase()));
    await fc.assert(
      fc.asyncProperty(email, textWithin(0, 1024), async (e, password) => {
        fc.pre(password !== fx.member.password);
        // fast-check's RFC 5322 addresses include forms zod's e-mail rule refuses: those are a 400.
        await rejectedWithoutChange(() => call("POST", "/users/login", { body: { email: e, password } }), { status: [400, 401, 429] });
      }),
      { numRuns: RUNS.few },
    );
  });

  it("POST /users/validate-password: any string → 200 {valid, details} up to the 4096 limit, 400 beyond", async () => {
    // validate-password allows 10 checks a minute per user (docs/security.md): a fresh user every 9 runs.
    let used = 0;
    let token = fx.member.token;
    const nextToken = async () => {
      if (++used % 9 === 0) token = (await createUser()).token;
      return token;
    };
    await fc.assert(
      fc.asyncProperty(anyText, async (password) => {
        const caller = await nextToken();
        const res = await answeredWithoutChange(() => call("POST", "/users/validate-password", { token: caller, body: { password } }));
        if (codePoints(password) > 4096) {
          await expectRejected(res, { status: 400, message: VALIDATION_FAILED });
          return;
        }
        expect(res.status).toBe(200);
        const result = await json<{ valid: unknown; details: unknown }>(res);
        expect(result.valid).toBeTypeOf("boolean");
        expect(result.details).toBeTypeOf("string");
        expect(result.valid, "details is empty exactly when valid").toBe(result.details === "");
        if (result.valid) expect([...password.normalize("NFKC")].length).toBeGreaterThanOrEqual(8);
      }),
      { numRuns: RUNS.many },
    );
  });
});
