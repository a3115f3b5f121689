/**
 * Bad input on the notification-target endpoints of src/targets/routes.ts (docs/api.md, "Notification targets";
 * docs/targets.md). Every endpoint gets property-based junk — malformed JSON, wrong JSON types, missing fields, huge
 * and unicode values, hostile path segments, credentials and Origins — and must answer a 4xx in the error shape
 * (docs/api.md, Conventions) without changing the account tables, notification_targets among them. The harness is
 * shared with the other bad-input suites (test/fixtures/bad-input.ts, test/fixtures/stored-state.ts; docs/testing.md,
 * "Bad input and permissions, in depth").
 *
 * | endpoint                                          | body | path | credentials | Origin | > 1 MiB |
 * |---------------------------------------------------|------|------|-------------|--------|---------|
 * | POST /users/{user}/notification-targets           | yes  | yes  | yes         | yes    | yes     |
 * | GET /users/{user}/notification-targets            |      | yes  | yes         |        |         |
 * | DELETE /users/{user}/notification-targets/{id}    |      | yes  | yes         | yes    | yes     |
 * | POST /users/{user}/notification-targets/{id}/verify | yes | yes | yes        | yes    | yes     |
 *
 * "Well-formed but refused" at the end: URLs the outbound allow-list refuses (docs/targets.md, "Outbound safety") are
 * a 400 naming `url` and store nothing, and cost nothing of the rate limit a new target is held to. The last test
 * sends the base request as is, which must succeed.
 */
import { env } from "cloudflare:workers";
import * as fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { TARGET_KINDS } from "../../src/db/schema";
import { TargetMessages } from "../../src/targets/messages";
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
  ACCOUNT_RUNS as RUNS,
  segmentsNamingNobody,
  VALIDATION_FAILED,
  wrongWriteMethods,
} from "../fixtures/bad-input";
import { stateChecks } from "../fixtures/stored-state";
import { call, createUser, owner, type TestUser } from "../helpers";
import { addTarget, standInPath, standInUrl } from "./stand-ins";

const checks = stateChecks("accounts");
const { rejectedWithoutChange } = checks;

interface Fixtures {
  admin: { token: string; id: string };
  /** Holds one unverified target; the requests below would succeed for it but for what each test breaks. */
  member: TestUser;
  targetId: string;
  knownRefs: Set<string>;
}
let fx: Fixtures;

beforeAll(async () => {
  const admin = await owner();
  const member = await createUser();
  const { target } = await addTarget(member.token, "slack");
  fx = { admin, member, targetId: target.id, knownRefs: await knownUserRefs() };
});

const createBody = () => ({ kind: "discord", url: standInUrl(standInPath("discord")), name: "Team channel" });

const BODY_ENDPOINTS: readonly BodyEndpoint[] = [
  {
    name: "POST /users/{user}/notification-targets (add)",
    method: "POST",
    path: () => "/users/me/notification-targets",
    token: () => fx.member.token,
    base: createBody,
    bad: {
      kind: fc.oneof(notA("string"), fc.constantFrom("", "Slack", "email", "push", "webhook ", "teams\u0000")),
      url: fc.oneof(notA("string"), fc.constant(""), textLongerThan(2048, 10_000)),
      name: fc.oneof(notA("string"), textLongerThan(64), fc.constant(""), fc.constant("two\nlines"), fc.constant("bidi \u202Egnp.exe")),
    },
    required: ["kind", "url", "name"],
  },
  {
    name: "POST /users/{user}/notification-targets/{id}/verify",
    method: "POST",
    path: () => `/users/me/notification-targets/${fx.targetId}/verify`,
    token: () => fx.member.token,
    base: () => ({ code: "123456" }),
    bad: { code: fc.oneof(notA("string"), fc.constantFrom("", "12345", "1234567", "abcdef", " 123456", "12345\u0000", "１２３４５６", "-12345")) },
    required: ["code"],
  },
];

const ENDPOINTS: readonly EndpointCall[] = [
  { name: "POST /users/{user}/notification-targets", method: "POST", path: () => "/users/me/notification-targets", body: createBody, as: "member" },
  { name: "GET /users/{user}/notification-targets", method: "GET", path: () => "/users/me/notification-targets", as: "member" },
  {
    name: "DELETE /users/{user}/notification-targets/{id}",
    method: "DELETE",
    path: () => `/users/me/notification-targets/${fx.targetId}`,
    as: "member",
  },
  {
    name: "POST /users/{user}/notification-targets/{id}/verify",
    method: "POST",
    path: () => `/users/me/notification-targets/${fx.targetId}/verify`,
    body: () => ({ code: "123456" }),
    as: "member",
  },
];

accountRequestProperties(BODY_ENDPOINTS, ENDPOINTS, () => fx, checks);

describe("Origin", () => {
  foreignOrigins(
    "a session cookie from a foreign Origin, or with none, on every write → 403, nothing changed",
    ENDPOINTS,
    () => fx,
    checks,
    RUNS.some,
  );
});

describe("path parameters", () => {
  /** Each would reach the target for the member with a real segment; the hostile one makes it a 404. */
  const PATH_ENDPOINTS: readonly PathEndpoint[] = [
    {
      name: "POST /users/{user}/notification-targets",
      method: "POST",
      path: (s) => `/users/${s}/notification-targets`,
      body: createBody,
      as: "member",
    },
    { name: "GET /users/{user}/notification-targets", method: "GET", path: (s) => `/users/${s}/notification-targets`, as: "member" },
    {
      name: "DELETE /users/{user}/notification-targets/{id} (hostile user)",
      method: "DELETE",
      path: (s) => `/users/${s}/notification-targets/${fx.targetId}`,
      as: "member",
    },
    {
      name: "DELETE /users/{user}/notification-targets/{id} (hostile id)",
      method: "DELETE",
      path: (s) => `/users/me/notification-targets/${s}`,
      as: "member",
    },
    {
      name: "POST /users/{user}/notification-targets/{id}/verify (hostile id)",
      method: "POST",
      path: (s) => `/users/me/notification-targets/${s}/verify`,
      body: () => ({ code: "123456" }),
      as: "member",
    },
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
      "/users/me/notification-targets": ["GET", "POST"],
      [`/users/me/notification-targets/${fx.targetId}`]: ["DELETE"],
      [`/users/me/notification-targets/${fx.targetId}/verify`]: ["POST"],
    }),
    () => fx.member.token,
    RUNS.some,
  );
});

describe('well-formed but refused (docs/targets.md, "Outbound safety")', () => {
  /** URLs a user might give that are not the stand-ins' origin, the only one this suite's deployment allows. */
  const elsewhere = fc.oneof(
    fc.webUrl({ validSchemes: ["https", "http"], withQueryParameters: true }),
    fc.constantFrom(
      "https://hooks.slack.com/services/T000/B000/XXXX",
      "http://127.0.0.1/hook",
      "http://localhost:8787/api/v2/users",
      "https://169.254.169.254/latest/meta-data/",
      "https://[::1]/hook",
      "https://2130706433/hook",
      "file:///etc/passwd",
      "javascript:alert(1)",
      "not a url",
      `${env.TARGETS_URL}.evil.test/slack/x`,
      env.TARGETS_URL.replace("http://", "https://"),
      `${env.TARGETS_URL.replace("http://", "http://user:pass@")}/slack/x`,
    ),
  );

  it("a URL the allow-list refuses → 400 naming url, nothing stored, no rate limit spent", async () => {
    // A fresh member: it may add 10 targets a minute, and the runs below are more than that.
    const member = await createUser();
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...TARGET_KINDS), elsewhere, async (kind, url) => {
        fc.pre(!url.startsWith(`${env.TARGETS_URL}/`));
        const error = await rejectedWithoutChange(
          () => call("POST", "/users/me/notification-targets", { token: member.token, body: { kind, url, name: "Elsewhere" } }),
          { status: 400, message: VALIDATION_FAILED },
        );
        expect(error.validations?.map((v) => v.field)).toEqual(["url"]);
      }),
      { numRuns: RUNS.many },
    );
    // Every refusal above came before the limit: a real target can still be added.
    const res = await call("POST", "/users/me/notification-targets", { token: member.token, body: createBody() });
    expect(res.status, await res.clone().text()).toBe(201);
  });

  it("a well-formed code for another user's target, or a target that is not there → 404, nothing counted", async () => {
    const stranger = await createUser();
    for (const id of [fx.targetId, crypto.randomUUID()]) {
      const error = await rejectedWithoutChange(
        () => call("POST", `/users/me/notification-targets/${id}/verify`, { token: stranger.token, body: { code: "123456" } }),
        { status: 404 },
      );
      expect(error.message).not.toBe(TargetMessages.incorrectCode);
    }
  });
});

describe("the base requests were valid", () => {
  baseRequestsSucceed(BODY_ENDPOINTS, [["POST /users/{user}/notification-targets", 201]]);
});
