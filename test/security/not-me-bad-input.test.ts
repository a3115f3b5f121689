/**
 * Bad input on "This wasn't me", `POST /users/not-me` (docs/security.md, "This wasn't me"): public, its only input a
 * token that ends every session of an account. Property-based junk — malformed JSON, wrong JSON types, missing,
 * empty and over-long tokens, bodies over 1 MiB, hostile paths, wrong methods — must answer a 4xx in the error shape
 * (docs/api.md, Conventions) without changing state; so must every well-formed token that is not a live link: any
 * text, a real link altered in its body or its signature, one signed under another key, one expired, one naming no
 * account. The harness is shared with the other bad-input suites (test/fixtures/bad-input.ts,
 * test/fixtures/stored-state.ts; docs/testing.md, "Bad input and permissions, in depth").
 *
 * | endpoint           | body | path | query | credentials | > 1 MiB |
 * |--------------------|------|------|-------|-------------|---------|
 * | POST /users/not-me | yes  |      |       | (public)    | yes     |
 *
 * State is fingerprinted from every table (not_me_uses included; test/fixtures/stored-state.ts), and the member's
 * inbox. The link the base request uses is live for the whole file, so every rejection below is about the input;
 * that request runs last, and succeeds.
 */
import { env } from "cloudflare:workers";
import * as fc from "fast-check";
import { beforeAll, describe, it } from "vitest";
import { getConfig } from "../../src/config/config";
import type { Env } from "../../src/env";
import { signValue } from "../../src/lib/signed";
import { SecurityMessages } from "../../src/security/messages";
import { NOT_ME_LIFETIME_MS, type NotMeClaims, signNotMeToken } from "../../src/security/not-me-token";
import { anyText, notA, textLongerThan, textWithin } from "../fixtures/arbitraries";
import {
  type BodyEndpoint,
  baseRequestsSucceed,
  type EndpointCall,
  jsonBodyProperties,
  oversizedBodies,
  RAW_PATH_BODY,
  RUNS,
  rawPaths,
  wrongMethods,
} from "../fixtures/bad-input";
import { quiesce } from "../fixtures/d1-state";
import { stateChecks } from "../fixtures/stored-state";
import { call, createUser, owner, type TestUser } from "../helpers";

const checks = stateChecks("all");
const { rejectedWithoutChange } = checks;

interface Fixtures {
  admin: { token: string; id: string };
  /** The account the live link locks: its inbox, and every table, must stay as they were. */
  member: TestUser;
  /** A live link for the member, as a notice carries it. */
  token: string;
}
let fx: Fixtures;

const secret = () => getConfig(env as unknown as Env).SECRET_KEY;
const claimsFor = (userId: string, at = Date.now()): NotMeClaims => ({
  userId,
  eventId: crypto.randomUUID(),
  event: "new_sign_in",
  at,
  device: "Chrome 131 on macOS",
  place: "Amsterdam, Netherlands (203.0.113.0/24)",
});

beforeAll(async () => {
  const admin = await owner();
  const member = await createUser();
  // Signed as a notice signs it (src/security/notices.ts); the notice itself is not needed to hold the link.
  const token = await signNotMeToken(secret(), claimsFor(member.id));
  fx = { admin, member, token };
  // Creating the account notified the owner after the response; let that settle before anything is compared.
  await quiesce(2);
});

const report = (token: unknown) => () => call("POST", "/users/not-me", { body: { token } });
const REFUSED = { status: 400, message: SecurityMessages.badNotMeLink } as const;

// ---------------------------------------------------------------------------------------------------------------
// JSON bodies
// ---------------------------------------------------------------------------------------------------------------

const BODY_ENDPOINTS: readonly BodyEndpoint[] = [
  {
    name: "not-me POST /users/not-me",
    method: "POST",
    path: () => "/users/not-me",
    token: () => undefined,
    // A live link: only the corrupted field stands between it and every session of the member ending.
    base: () => ({ token: fx.token }),
    bad: { token: fc.oneof(notA("string"), fc.constant(""), textLongerThan(2048)) },
    required: ["token"],
    inboxes: () => [fx.member.token],
  },
];

describe("JSON bodies", () => {
  jsonBodyProperties(BODY_ENDPOINTS, checks, { malformed: RUNS.few, notAnObject: RUNS.few, fields: RUNS.some, nesting: 5 });
});

// ---------------------------------------------------------------------------------------------------------------
// Body size, raw paths, wrong methods
// ---------------------------------------------------------------------------------------------------------------

describe("body size", () => {
  const WRITES = [
    { name: "not-me POST /users/not-me", method: "POST", path: () => "/users/not-me", body: () => ({ token: fx.token }), as: "public" },
  ] as const satisfies readonly EndpointCall[];
  oversizedBodies(WRITES, () => fx, checks);
});

describe("paths", () => {
  // Unencoded: the URL parser and the router see these as written (NUL escapes, case, a trailing or doubled slash).
  const RAW_PATHS = ["/users/not-me%00", "/users/not-me/", "/users/NOT-ME", "/users//not-me", "/users/not-me/%2e%2e"] as const;
  rawPaths(RAW_PATHS, () => ({ token: fx.member.token, body: { ...RAW_PATH_BODY, token: fx.token }, inboxes: [fx.member.token] }), checks);
});

describe("wrong methods", () => {
  wrongMethods(
    () => ({ "/users/not-me": ["POST"] }),
    () => fx.member.token,
    checks,
    RUNS.many,
  );
});

// ---------------------------------------------------------------------------------------------------------------
// Well-formed tokens that are not a live link: one 400, and nothing ends
// ---------------------------------------------------------------------------------------------------------------

describe("a token that isn't a live link → 400 This link is not valid…, and nothing changes (docs/security.md, \"This wasn't me\")", () => {
  it("any text within the schema's length", async () => {
    await fc.assert(
      fc.asyncProperty(textWithin(1, 2048), async (token) => {
        await rejectedWithoutChange(report(token), REFUSED, [fx.member.token]);
      }),
      { numRuns: RUNS.some },
    );
  });

  it("the live link with one character of its body or its signature changed, cut, or lengthened", async () => {
    const [body = "", mac = ""] = fx.token.split(".");
    const altered = fc.oneof(
      // One character of the signature replaced by another hex digit.
      fc
        .tuple(fc.nat({ max: mac.length - 1 }), fc.constantFrom(..."0123456789abcdef"))
        .map(([i, c]) => `${body}.${mac.slice(0, i)}${c}${mac.slice(i + 1)}`),
      // One character of the body replaced by another base64url character.
      fc
        .tuple(fc.nat({ max: body.length - 1 }), fc.constantFrom(..."ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"))
        .map(([i, c]) => `${body.slice(0, i)}${c}${body.slice(i + 1)}.${mac}`),
      // Cut short, never to nothing: an empty token is the schema's to refuse (above).
      fc.integer({ min: 1, max: fx.token.length - 1 }).map((n) => fx.token.slice(0, n)),
      anyText.filter((s) => s.length > 0 && s.length <= 200).map((tail) => `${fx.token}${tail}`),
      fc.constantFrom(body, `${body}.`, `.${mac}`, `${mac}.${body}`, `${body}.${mac}.${mac}`, `${body}.${mac}.`, `${body}.${mac.toUpperCase()}`),
    );
    await fc.assert(
      fc.asyncProperty(
        altered.filter((token) => token !== fx.token),
        async (token) => {
          await rejectedWithoutChange(report(token), REFUSED, [fx.member.token]);
        },
      ),
      { numRuns: RUNS.many },
    );
  });

  it("the live link with a part after a second dot: a link has exactly one spelling", async () => {
    // Once, everything after a second dot was ignored, and these ended every session of the account.
    const [, mac = ""] = fx.token.split(".");
    for (const token of [`${fx.token}.`, `${fx.token}.${mac}`, `${fx.token}.x`]) {
      await rejectedWithoutChange(report(token), REFUSED, [fx.member.token]);
    }
  });

  it("signed under another key, expired, for no account, or signed for another purpose", async () => {
    const foreign = await signNotMeToken("another-deployment-secret-key-0123456789abcdef", claimsFor(fx.member.id));
    const expired = await signNotMeToken(secret(), claimsFor(fx.member.id, Date.now() - NOT_ME_LIFETIME_MS - 1_000));
    const nobody = await signNotMeToken(secret(), claimsFor(crypto.randomUUID()));
    const otherPurpose = await signValue(secret(), "session-binding", claimsFor(fx.member.id), Date.now() + 60_000);
    for (const token of [foreign, expired, nobody, otherPurpose]) {
      await rejectedWithoutChange(report(token), REFUSED, [fx.member.token]);
    }
  });
});

// ---------------------------------------------------------------------------------------------------------------
// The fixtures were live: the base request succeeds (so each rejection above really was about the input)
// ---------------------------------------------------------------------------------------------------------------

describe("the request the fuzz corrupted was valid", () => {
  baseRequestsSucceed(BODY_ENDPOINTS, [["not-me", 200]]);
});
