/**
 * Bad input on the Web Push endpoints of src/push/routes.ts (docs/api.md, "Web Push"; docs/push.md). Every endpoint
 * gets property-based junk — malformed JSON, wrong JSON types, missing fields, huge and unicode values, endpoints that
 * are no push service's (private addresses, other schemes, look-alike hosts), keys of the wrong length or off the
 * curve, hostile path segments and credentials — and must answer a 4xx in the error shape (docs/api.md, Conventions)
 * without changing the account tables, push_subscriptions among them. The harness is shared with the other bad-input
 * suites (test/fixtures/bad-input.ts, test/fixtures/stored-state.ts; docs/testing.md, "Bad input and permissions, in
 * depth").
 *
 * | endpoint                                   | body | path | credentials | Origin | > 1 MiB | query |
 * |--------------------------------------------|------|------|-------------|--------|---------|-------|
 * | GET /notifications/push/public-key         |      |      | (public)    |        |         | yes   |
 * | POST /users/{user}/push-subscriptions      | yes  | yes  | yes         | yes    | yes     |       |
 * | GET /users/{user}/push-subscriptions       |      | yes  | yes         |        |         | yes   |
 * | DELETE /users/{user}/push-subscriptions/{id} |    | yes  | yes         | yes    | yes     |       |
 *
 * At the end the valid base request of the add, sent as is, succeeds, so every refusal before it was about the input.
 */
import * as fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { notA, textLongerThan } from "../fixtures/arbitraries";
import {
  accountRequestProperties,
  type BodyEndpoint,
  type EndpointCall,
  foreignOrigins,
  hostileSegment,
  knownUserRefs,
  type PathEndpoint,
  queryIgnored,
  ACCOUNT_RUNS as RUNS,
  segmentsNamingNobody,
  wrongWriteMethods,
} from "../fixtures/bad-input";
import { stateChecks } from "../fixtures/stored-state";
import { call, createUser, json, owner, type TestUser } from "../helpers";
import { type PushBrowser, subscribeBrowser } from "../peers";

const checks = stateChecks("accounts");

interface Fixtures {
  admin: { token: string; id: string };
  /** Holds one subscription; the requests below would succeed for it but for what each test breaks. */
  member: TestUser;
  subscriptionId: string;
  /** A browser not subscribed yet: the base request of the add. */
  browser: PushBrowser;
  knownRefs: Set<string>;
}
let fx: Fixtures;

beforeAll(async () => {
  const admin = await owner();
  const [member, held, browser] = await Promise.all([createUser(), subscribeBrowser(), subscribeBrowser()]);
  const res = await call("POST", "/users/me/push-subscriptions", { token: member.token, body: held.subscription });
  expect(res.status, await res.clone().text()).toBe(201);
  fx = { admin, member, browser, subscriptionId: (await json<{ id: string }>(res)).id, knownRefs: await knownUserRefs() };
});

/** Endpoints no push service has: other schemes, private and metadata addresses, look-alikes, junk. */
const notAPushEndpoint = fc.oneof(
  fc.constantFrom(
    "",
    "not a url",
    "javascript:alert(1)",
    "http://169.254.169.254/latest/meta-data/",
    "https://127.0.0.1/push",
    "https://fcm.googleapis.com.evil.test/fcm/send/x",
    "https://user:pass@fcm.googleapis.com/fcm/send/x",
    "file:///etc/passwd",
  ),
  textLongerThan(2048, 4000),
  fc.webUrl().filter((u) => !u.startsWith("http://127.0.0.1")),
);

/** Unpadded base64url text that is not `bytes` bytes, or not base64url at all. */
const notKeyBytes = (bytes: number) =>
  fc.oneof(
    notA("string"),
    fc.constantFrom("", "AAAA==", "a+b/", "ünïcode", "A".repeat(Math.ceil((bytes * 4) / 3) + 4)),
    fc
      .uint8Array({ minLength: 1, maxLength: 100 })
      .filter((b) => b.length !== bytes)
      .map((b) => btoa(String.fromCharCode(...b)).replace(/=+$/, "")),
  );

/** 65 bytes that start as a point does but lie off the curve (a random x and y almost never solve the equation). */
const offCurve = fc.uint8Array({ minLength: 64, maxLength: 64 }).map((xy) =>
  btoa(String.fromCharCode(4, ...xy))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, ""),
);

const BODY_ENDPOINTS: readonly BodyEndpoint[] = [
  {
    name: "POST /users/{user}/push-subscriptions",
    method: "POST",
    path: () => "/users/me/push-subscriptions",
    token: () => fx.member.token,
    base: () => ({ ...fx.browser.subscription, name: "Laptop" }),
    bad: {
      endpoint: fc.oneof(notA("string"), notAPushEndpoint),
      keys: fc.oneof(
        notA("object"),
        notKeyBytes(65).map((p256dh) => ({ ...fx.browser.subscription.keys, p256dh })),
        offCurve.map((p256dh) => ({ ...fx.browser.subscription.keys, p256dh })),
        notKeyBytes(16).map((auth) => ({ ...fx.browser.subscription.keys, auth })),
        fc.constant(null).map(() => ({ p256dh: fx.browser.subscription.keys.p256dh })),
      ),
      name: fc.oneof(notA("string"), textLongerThan(64), fc.constant(""), fc.constant("two\nlines"), fc.constant("bidi\u202Eevil")),
    },
    required: ["endpoint", "keys"],
  },
];

const ENDPOINTS: readonly EndpointCall[] = [
  { name: "GET /notifications/push/public-key", method: "GET", path: () => "/notifications/push/public-key", as: "public" },
  {
    name: "POST /users/{user}/push-subscriptions",
    method: "POST",
    path: () => "/users/me/push-subscriptions",
    body: () => fx.browser.subscription,
    as: "member",
  },
  { name: "GET /users/{user}/push-subscriptions", method: "GET", path: () => "/users/me/push-subscriptions", as: "member" },
  {
    name: "DELETE /users/{user}/push-subscriptions/{id}",
    method: "DELETE",
    path: () => `/users/me/push-subscriptions/${fx.subscriptionId}`,
    as: "member",
  },
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
});

describe("path parameters", () => {
  /** Each would succeed for the owner (or the member, on its own subscription) with a real segment; the hostile one makes it a 404. */
  const PATH_ENDPOINTS: readonly PathEndpoint[] = [
    {
      name: "POST /users/{user}/push-subscriptions",
      method: "POST",
      path: (s) => `/users/${s}/push-subscriptions`,
      body: () => fx.browser.subscription,
      as: "owner",
    },
    { name: "GET /users/{user}/push-subscriptions", method: "GET", path: (s) => `/users/${s}/push-subscriptions`, as: "owner" },
    {
      name: "DELETE /users/{user}/push-subscriptions/{id} (hostile user)",
      method: "DELETE",
      path: (s) => `/users/${s}/push-subscriptions/${fx.subscriptionId}`,
      as: "owner",
    },
    {
      name: "DELETE /users/{user}/push-subscriptions/{id} (hostile id)",
      method: "DELETE",
      path: (s) => `/users/me/push-subscriptions/${s}`,
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

describe("queries and methods", () => {
  queryIgnored(
    () => [
      { path: "/notifications/push/public-key", token: undefined },
      { path: "/users/me/push-subscriptions", token: fx.member.token },
    ],
    checks,
    RUNS.some,
  );

  wrongWriteMethods(
    () => ({
      "/notifications/push/public-key": ["GET"],
      "/users/me/push-subscriptions": ["GET", "POST"],
      [`/users/me/push-subscriptions/${fx.subscriptionId}`]: ["DELETE"],
    }),
    () => fx.member.token,
    RUNS.some,
  );
});

describe("the base request", () => {
  it("POST /users/{user}/push-subscriptions's base request → 201", async () => {
    const res = await call("POST", "/users/me/push-subscriptions", { token: fx.member.token, body: BODY_ENDPOINTS[0]?.base() });
    expect(res.status, await res.clone().text()).toBe(201);
  });
});
