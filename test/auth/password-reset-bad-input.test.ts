/**
 * Bad input on password reset by one-time passcode: the passcode request (A5) and the password change with a passcode
 * (A4), both public (docs/api.md, Password reset by one-time passcode). Every endpoint gets property-based junk —
 * malformed JSON, wrong JSON types, missing fields, huge and unicode values, hostile paths — and must answer a 4xx in
 * the error shape (docs/api.md, Conventions) without changing state. A4's rules are checked beside the junk: a
 * password against the policy, an e-mail nobody has, a wrong code (only the try counter moves, and the fifth wrong
 * try burns the code), the current password again (no try spent). The harness is shared with the other bad-input
 * suites (test/fixtures/bad-input.ts, test/fixtures/stored-state.ts; docs/testing.md, "Bad input and permissions, in
 * depth"); the sign-in endpoints of src/auth/ have theirs in test/auth/bad-input.test.ts.
 *
 * | endpoint                        | body | path | query | credentials | > 1 MiB |
 * |---------------------------------|------|------|-------|-------------|---------|
 * | POST /users/otp/change-password | yes  |      |       | (public)    | yes     |
 * | POST /users/otp/request         | yes  |      |       | (public)    | yes     |
 *
 * State is fingerprinted from every table (one_time_passcodes and login_conversions included; for
 * notification_messages only the columns fixed at enqueue time; test/fixtures/stored-state.ts), and the raw-path and
 * wrong-method requests, sent with a member's token as in the other suites, from that member's inbox too. Fixtures
 * are made in beforeAll and their background work (account notices) is waited out before the first property runs;
 * the two requests that legitimately change state (A4 resets a password, A5 mails a passcode) run at the end of the
 * file.
 *
 * Test names use the endpoints' short labels, the keys of docs/api.md's endpoint tables: A4 passcode change, A5
 * passcode request.
 */
import { env } from "cloudflare:workers";
import * as fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { AuthMessages } from "../../src/auth/messages";
import { issuePasscode } from "../../src/auth/otp";
import { getConfig } from "../../src/config/config";
import { database } from "../../src/db/client";
import type { Env } from "../../src/env";
import { badEmail, notA, textLongerThan, textWithin } from "../fixtures/arbitraries";
import {
  type BodyEndpoint,
  baseRequestsSucceed,
  type EndpointCall,
  jsonBodyProperties,
  oversizedBodies,
  RAW_PATH_BODY,
  RUNS,
  rawPaths,
  STRONG_PASSWORD,
  wrongMethods,
} from "../fixtures/bad-input";
import { quiesce, sleep } from "../fixtures/d1-state";
import { expectRejected } from "../fixtures/error-shape";
import { stateChecks } from "../fixtures/stored-state";
import { call, createUser, owner, type TestUser } from "../helpers";

/**
 * Every table, and, for each token given to a check, that caller's inbox. The storage is this file's own (vitest gives
 * each test file its own D1 and objects; docs/testing.md), so only this file's fixtures start background work, which
 * it waits out (quiesce) before comparing.
 */
const checks = stateChecks("all");
const { snapshot, rejectedWithoutChange, answeredWithoutChange } = checks;

const INCORRECT_OTP = AuthMessages.incorrectPasscode;

// ---------------------------------------------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------------------------------------------

interface Fixtures {
  admin: { token: string; id: string };
  /** A signed-in member: the raw-path and wrong-method requests carry its token, as in the other suites, and leave its inbox alone. */
  member: TestUser;
  /** A password user with a live one-time passcode: the passcode change's base request would reset its password. */
  reset: { user: TestUser; code: string };
  /** A password user the passcode request's base request names. */
  otpUser: TestUser;
}
let fx: Fixtures;

beforeAll(async () => {
  const admin = await owner();
  const [member, resetUser, otpUser] = await Promise.all([createUser(), createUser(), createUser()]);
  const code = await issuePasscode(database(env.DB), getConfig(env as unknown as Env), resetUser.id);
  fx = { admin, member, reset: { user: resetUser, code }, otpUser };
  // Creating those accounts notified the owner after each response; let that settle before anything is compared.
  await quiesce(2);
});

// ---------------------------------------------------------------------------------------------------------------
// JSON bodies
// ---------------------------------------------------------------------------------------------------------------

const BODY_ENDPOINTS: readonly BodyEndpoint[] = [
  {
    name: "A4 POST /users/otp/change-password",
    method: "POST",
    path: () => "/users/otp/change-password",
    token: () => undefined,
    // The right e-mail, its live code and a strong new password: only the corrupted field stands between it and a reset.
    base: () => ({ email: fx.reset.user.email, one_time_passcode: fx.reset.code, password: STRONG_PASSWORD }),
    bad: {
      email: badEmail,
      one_time_passcode: fc.oneof(notA("string"), fc.constant(""), textLongerThan(128)),
      password: fc.oneof(notA("string"), textLongerThan(1024)),
    },
    required: ["email", "one_time_passcode", "password"],
  },
  {
    name: "A5 POST /users/otp/request",
    method: "POST",
    path: () => "/users/otp/request",
    token: () => undefined,
    base: () => ({ email: fx.otpUser.email }),
    bad: { email: badEmail },
    required: ["email"],
  },
];

describe("JSON bodies", () => {
  jsonBodyProperties(BODY_ENDPOINTS, checks, { malformed: RUNS.few, notAnObject: RUNS.few, fields: RUNS.some, nesting: 5 });
});

// ---------------------------------------------------------------------------------------------------------------
// Body size, raw paths
// ---------------------------------------------------------------------------------------------------------------

describe("body size", () => {
  const WRITES = [
    {
      name: "A4 POST /users/otp/change-password",
      method: "POST",
      path: () => "/users/otp/change-password",
      body: () => ({ email: fx.reset.user.email, one_time_passcode: fx.reset.code, password: STRONG_PASSWORD }),
      as: "public",
    },
    { name: "A5 POST /users/otp/request", method: "POST", path: () => "/users/otp/request", body: () => ({ email: fx.otpUser.email }), as: "public" },
  ] as const satisfies readonly EndpointCall[];

  oversizedBodies(WRITES, () => fx, checks);
});

describe("paths", () => {
  // Unencoded: the URL parser and the router see these as written (bad escapes, NUL escapes, case, empty segments).
  const RAW_PATHS = ["/users/otp/request%00", "/users/otp/%00", "/users/otp/change-password/"] as const;
  rawPaths(RAW_PATHS, () => ({ token: fx.member.token, body: RAW_PATH_BODY, inboxes: [fx.member.token] }), checks);
});

// ---------------------------------------------------------------------------------------------------------------
// Wrong methods
// ---------------------------------------------------------------------------------------------------------------

describe("wrong methods", () => {
  wrongMethods(
    () => ({
      "/users/otp/request": ["POST"],
      "/users/otp/change-password": ["POST"],
    }),
    () => fx.member.token,
    checks,
    RUNS.many,
  );
});

// ---------------------------------------------------------------------------------------------------------------
// Hostile but legal values: answered normally, and nothing changes that should not
// ---------------------------------------------------------------------------------------------------------------

describe("hostile but legal values are answered normally", () => {
  it("A5: any well-formed e-mail that is nobody's → 204 (or 400 for forms the schema refuses), nothing stored or sent", async () => {
    const email = fc.oneof(
      fc.emailAddress(),
      fc
        .tuple(fc.string({ unit: "grapheme", minLength: 1, maxLength: 20 }), fc.uuid())
        .map(([local, id]) => `${local.replace(/[@\s]/g, "x")}.${id.slice(0, 8)}@nobody.herald.test`),
    );
    const before = await snapshot();
    await fc.assert(
      fc.asyncProperty(email, async (e) => {
        const res = await answeredWithoutChange(() => call("POST", "/users/otp/request", { body: { email: e } }));
        if (res.status === 204) {
          expect(await res.text()).toBe("");
          return;
        }
        await expectRejected(res, { status: [400, 429] });
      }),
      { numRuns: RUNS.some },
    );
    // What depends on the account runs after the response: give it time, then nothing may have been written.
    await sleep(200);
    expect(await snapshot()).toEqual(before);
  });

  it("A4: an e-mail nobody has, with a well-formed code and a strong password → 400 Incorrect email or one-time passcode.", async () => {
    await fc.assert(
      fc.asyncProperty(fc.uuid(), fc.oneof(fc.uuid(), textWithin(1, 128)), async (id, code) => {
        await rejectedWithoutChange(
          () =>
            call("POST", "/users/otp/change-password", {
              body: { email: `nobody-${id.slice(0, 8)}@herald.test`, one_time_passcode: code, password: STRONG_PASSWORD },
            }),
          { status: 400, message: INCORRECT_OTP },
        );
      }),
      { numRuns: 6 },
    );
  });

  it("A4: a password against the policy, even with the right code → 400 Invalid password.; the code is not spent", async () => {
    const { user, code } = fx.reset;
    const weak = fc.oneof(
      fc.constantFrom(
        "password",
        "12345678",
        "short",
        "aaaaaaaaaaaa",
        "\u0000".repeat(9),
        `${user.username}-2024`,
        `${user.email.split("@")[0]}!x`,
        "Tr0ub4dor&3-".repeat(25),
      ),
      textWithin(0, 7).filter((p) => [...p.normalize("NFKC")].length < 8),
    );
    await fc.assert(
      fc.asyncProperty(weak, async (password) => {
        const error = await rejectedWithoutChange(
          () => call("POST", "/users/otp/change-password", { body: { email: user.email, one_time_passcode: code, password } }),
          { status: 400, message: AuthMessages.invalidPassword },
        );
        expect(error.validations?.map((v) => v.field)).toEqual(["password"]);
      }),
      { numRuns: RUNS.few },
    );
  });

  it("A4: wrong codes for a real account → 400; only the try counter moves, and a burned code stays burned", async () => {
    const victim = await createUser();
    await issuePasscode(database(env.DB), getConfig(env as unknown as Env), victim.id);
    await quiesce(2);
    const attempts = async () =>
      (await env.DB.prepare("SELECT attempts FROM one_time_passcodes WHERE user_id = ?").bind(victim.id).first<{ attempts: number }>())?.attempts;
    for (let i = 1; i <= 7; i++) {
      const before = await snapshot();
      await expectRejected(
        await call("POST", "/users/otp/change-password", {
          body: { email: victim.email, one_time_passcode: crypto.randomUUID(), password: STRONG_PASSWORD },
        }),
        { status: 400, message: INCORRECT_OTP },
      );
      const after = await snapshot();
      expect({ ...after, one_time_passcodes: [] }).toEqual({ ...before, one_time_passcodes: [] });
      expect(await attempts()).toBe(Math.min(i, 5));
    }
  });

  it("A4: the right code with the current password → 400 New password cannot match old password.; the code is not spent", async () => {
    // Bad input changes nothing, and a code burns after five *wrong* tries (docs/api.md, Password reset by one-time
    // passcode). This try was not wrong.
    // Once, a try was spent before the same-password check (attempts went 0 → 1); this keeps it from coming back.
    const user = await createUser();
    const code = await issuePasscode(database(env.DB), getConfig(env as unknown as Env), user.id);
    await quiesce(2);
    await rejectedWithoutChange(
      () => call("POST", "/users/otp/change-password", { body: { email: user.email, one_time_passcode: code, password: user.password } }),
      { status: 400, message: AuthMessages.samePassword },
    );
  });
});

// ---------------------------------------------------------------------------------------------------------------
// The fixtures were live: every base request above succeeds (so each rejection really was about the input)
// ---------------------------------------------------------------------------------------------------------------

describe("the requests the fuzz corrupted were valid", () => {
  baseRequestsSucceed(BODY_ENDPOINTS, [
    ["A4", 204],
    ["A5", 204],
  ]);
});
