/**
 * Bad input on the notification endpoints: custom and test notifications, the dispatch methods, the notifier settings,
 * the template lists, the message log and a user's notification preferences (docs/api.md: Notifications, Notification
 * delivery; docs/email.md for what a title may hold). Every endpoint gets property-based junk — malformed JSON, wrong
 * JSON types, missing fields, huge and unicode values, hostile path segments, query strings and credentials — and must
 * answer a 4xx in the error shape (docs/api.md, Conventions) without changing state: neither D1 nor, where a request
 * could notify the caller, the caller's inbox. The harness is shared with the other bad-input suites
 * (test/fixtures/bad-input.ts, test/fixtures/stored-state.ts; docs/testing.md, "Bad input and permissions, in depth").
 *
 * | endpoint                                      | body | path | query | credentials | > 1 MiB |
 * |-----------------------------------------------|------|------|-------|-------------|---------|
 * | POST /notifications/custom                    | yes  |      |       | yes, Origin | yes     |
 * | GET /notifications/dispatch-methods           |      |      | yes   | yes         |         |
 * | GET, PUT /notifications/settings              | yes  |      | yes   | yes, Origin | yes     |
 * | GET /notifications/templates/*                |      |      | yes   | yes         |         |
 * | POST /notifications/test                      |      |      |       | yes, Origin | yes     |
 * | GET, PUT /users/{user}/notifications/prefer…  | yes  | yes  | yes   | yes, Origin | yes     |
 * | GET /notifications/messages                   |      |      | yes   | yes         |         |
 *
 * State is fingerprinted from every table (for notification_messages only the columns fixed at enqueue time, since
 * delivery updates status and payload in the background; test/fixtures/stored-state.ts) and, for the requests that
 * could notify the caller, from the caller's inbox. Fixtures are made in beforeAll and their background work (account
 * notices) is waited out before the first property runs; anything that legitimately changes state runs at the end of
 * the file.
 *
 * Test names use the endpoints' short labels, the keys of docs/api.md's endpoint tables: N1 custom notification, N2
 * dispatch methods, N7/N8 settings, N9/N10 custom/system templates, N11 test notification, N12/N13 preferences.
 */

import { env } from "cloudflare:workers";
import * as fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { NotificationsMessages } from "../../src/notifications/messages";
import { messagesQuery } from "../../src/notifications/schemas";
import { MANDATORY_TEMPLATE_IDS, TEMPLATE_IDS } from "../../src/notifications/templates";
import { refusedCharacter } from "../../src/text/display";
import { notA, textLongerThan, textWithin } from "../fixtures/arbitraries";
import {
  type BodyEndpoint,
  badCredentials,
  baseRequestsSucceed,
  type EndpointCall,
  foreignOrigins,
  hostileSegment,
  jsonBodyProperties,
  knownUserRefs,
  outOfRange,
  oversizedBodies,
  type PathEndpoint,
  query,
  queryIgnored,
  queryText,
  RAW_PATH_BODY,
  RUNS,
  rawPaths,
  rawQueries,
  repeatedKey,
  segmentsNamingNobody,
  UUID_LIKE,
  unknownKey,
  VALIDATION_FAILED,
  wrongMethods,
} from "../fixtures/bad-input";
import { quiesce } from "../fixtures/d1-state";
import { stateChecks } from "../fixtures/stored-state";
import { call, createUser, owner, type TestUser } from "../helpers";

/**
 * Every table, notification tables included, and, for each token given to a check, that caller's inbox. The storage
 * is this file's own (vitest gives each test file its own D1 and objects; docs/testing.md), so only this file's
 * fixtures start background work, which it waits out (quiesce) before comparing.
 */
const checks = stateChecks("all");
const { rejectedWithoutChange } = checks;

const INVALID_REQUEST_BODY = NotificationsMessages.invalidCustomBody;
const MANDATORY_TEMPLATES = MANDATORY_TEMPLATE_IDS;
const TEMPLATE_ID_SET = new Set<string>(Object.values(TEMPLATE_IDS));

// ---------------------------------------------------------------------------------------------------------------
// Arbitraries of this file's endpoints (the shared ones are in test/fixtures/bad-input.ts)
// ---------------------------------------------------------------------------------------------------------------

/** Whitespace that String.prototype.trim removes: a title or message made only of it counts as empty (POST /notifications/custom). */
const BLANKS = [
  " ",
  "\t",
  "\n",
  "\r",
  "\v",
  "\f",
  "\u00a0",
  "\u1680",
  "\u2002",
  "\u2009",
  "\u200a",
  "\u2028",
  "\u2029",
  "\u202f",
  "\u205f",
  "\u3000",
  "\ufeff",
];
const blankText = fc.string({ unit: fc.constantFrom(...BLANKS), maxLength: 40 });

/** `content` values POST /notifications/custom must reject: not an object, bad title or message, or nothing but whitespace in both. */
const badContent = fc.oneof(
  notA("object"),
  fc.oneof(notA("string"), textLongerThan(120)).map((title) => ({ title, message: "fine" })),
  fc.oneof(notA("string"), textLongerThan(2_000)).map((message) => ({ title: "fine", message })),
  fc.tuple(blankText, blankText).map(([title, message]) => ({ title, message })),
  blankText.map((title) => ({ title })),
  blankText.map((message) => ({ message })),
  fc.constant({}),
);

/**
 * Keys of `template_disabled_map` that name no template (prototype names have their own test below). A template id
 * in upper case is the same template, not an unknown key (UUIDs in any case: test/http/uuid-case.test.ts).
 */
const unknownTemplateKey = fc.oneof(
  fc.uuid(),
  textWithin(0, 64).filter((k) => !TEMPLATE_ID_SET.has(k.toLowerCase()) && !["__proto__", "constructor"].includes(k)),
  textLongerThan(64, 2_000),
);
const goodEntries = fc.dictionary(fc.constantFrom(TEMPLATE_IDS.test, TEMPLATE_IDS.custom, TEMPLATE_IDS.userCreated), fc.boolean(), { maxKeys: 3 });
/** `template_disabled_map` values PUT /users/{user}/notifications/preferences must reject, each with some valid entries around the bad one. */
const badPreferenceMap = fc.oneof(
  notA("object"),
  fc.tuple(goodEntries, fc.constantFrom(...Object.values(TEMPLATE_IDS)), notA("boolean")).map(([good, id, value]) => ({ ...good, [id]: value })),
  fc.tuple(goodEntries, unknownTemplateKey, fc.boolean()).map(([good, key, value]) => Object.fromEntries([...Object.entries(good), [key, value]])),
  fc.tuple(goodEntries, fc.constantFrom(...MANDATORY_TEMPLATES)).map(([good, id]) => ({ ...good, [id]: true })),
  fc.integer({ min: 201, max: 400 }).map((n) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, true]))),
);

// ---------------------------------------------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------------------------------------------

interface Fixtures {
  admin: { token: string; id: string };
  /** The caller of the notification and preference fuzz. */
  member: TestUser;
  knownRefs: Set<string>;
}
let fx: Fixtures;

beforeAll(async () => {
  const admin = await owner();
  const member = await createUser();
  const knownRefs = await knownUserRefs();
  const mandatory = await env.DB.prepare("SELECT id FROM notification_templates WHERE mandatory = 1 ORDER BY id").all<{ id: string }>();
  expect(mandatory.results.map((r) => r.id)).toEqual([...MANDATORY_TEMPLATES].sort());
  fx = { admin, member, knownRefs };
  // Creating the member notified the owner after the response; let that settle before anything is compared.
  await quiesce(2);
});

// ---------------------------------------------------------------------------------------------------------------
// JSON bodies
// ---------------------------------------------------------------------------------------------------------------

const BODY_ENDPOINTS: readonly BodyEndpoint[] = [
  {
    name: "N1 POST /notifications/custom",
    method: "POST",
    path: () => "/notifications/custom",
    token: () => fx.member.token,
    base: () => ({ content: { title: "Deploy finished", message: "All **green**." } }),
    bad: { content: badContent },
    required: ["content"],
    invalid: INVALID_REQUEST_BODY,
    inboxes: () => [fx.member.token],
  },
  {
    name: "N8 PUT /notifications/settings",
    method: "PUT",
    path: () => "/notifications/settings",
    token: () => fx.admin.token,
    // The current value: valid, a 304 that changes nothing (the notifier is never paused from this file).
    base: () => ({ notifier_paused: false }),
    bad: { notifier_paused: notA("boolean") },
    required: ["notifier_paused"],
  },
  {
    name: "N13 PUT /users/{user}/notifications/preferences",
    method: "PUT",
    path: () => "/users/me/notifications/preferences",
    token: () => fx.member.token,
    base: () => ({ template_disabled_map: { [TEMPLATE_IDS.test]: true } }),
    bad: { template_disabled_map: badPreferenceMap },
    required: ["template_disabled_map"],
  },
];

describe("JSON bodies", () => {
  jsonBodyProperties(BODY_ENDPOINTS, checks, { malformed: RUNS.few, notAnObject: RUNS.few, fields: RUNS.some, nesting: 5 });
});

// ---------------------------------------------------------------------------------------------------------------
// Body size, credentials, Origin
// ---------------------------------------------------------------------------------------------------------------

/** The inbox the member's requests must leave alone. */
const memberInbox = () => [fx.member.token];

/** Every endpoint of this file, with a request the member (or the owner) could make successfully. */
const AUTHED: readonly EndpointCall[] = [
  {
    name: "N1 POST /notifications/custom",
    method: "POST",
    path: () => "/notifications/custom",
    body: () => ({ content: { title: "hi" } }),
    as: "member",
    inboxes: memberInbox,
  },
  { name: "N2 GET /notifications/dispatch-methods", method: "GET", path: () => "/notifications/dispatch-methods", as: "member" },
  { name: "N7 GET /notifications/settings", method: "GET", path: () => "/notifications/settings", as: "member" },
  {
    name: "N8 PUT /notifications/settings",
    method: "PUT",
    path: () => "/notifications/settings",
    body: () => ({ notifier_paused: false }),
    as: "owner",
  },
  { name: "N9 GET /notifications/templates/custom", method: "GET", path: () => "/notifications/templates/custom", as: "member" },
  { name: "N10 GET /notifications/templates/system", method: "GET", path: () => "/notifications/templates/system", as: "member" },
  { name: "N11 POST /notifications/test", method: "POST", path: () => "/notifications/test", as: "owner" },
  { name: "GET /notifications/messages", method: "GET", path: () => "/notifications/messages", as: "owner" },
  {
    name: "N12 GET /users/{user}/notifications/preferences",
    method: "GET",
    path: () => `/users/${fx.member.id}/notifications/preferences`,
    as: "member",
  },
  {
    name: "N13 PUT /users/{user}/notifications/preferences",
    method: "PUT",
    path: () => `/users/${fx.member.id}/notifications/preferences`,
    body: () => ({ template_disabled_map: { [TEMPLATE_IDS.test]: true } }),
    as: "member",
  },
];

describe("body size", () => {
  oversizedBodies(
    AUTHED.filter((e) => e.method !== "GET"),
    () => fx,
    checks,
  );
});

describe("credentials", () => {
  badCredentials(AUTHED, () => fx, checks, RUNS.few);

  foreignOrigins("a valid session cookie from a foreign or missing Origin cannot change anything → 403", AUTHED, () => fx, checks, RUNS.many);
});

// ---------------------------------------------------------------------------------------------------------------
// Path parameters
// ---------------------------------------------------------------------------------------------------------------

describe("path parameters", () => {
  /** Path segments that name no user, and are no UUID. */
  const hostile = () => hostileSegment(fx.knownRefs, { uuids: false });

  const USER_PATHS: readonly PathEndpoint[] = [
    { name: "N12 GET /users/{user}/notifications/preferences", method: "GET", path: (s) => `/users/${s}/notifications/preferences`, as: "owner" },
    {
      name: "N13 PUT /users/{user}/notifications/preferences",
      method: "PUT",
      path: (s) => `/users/${s}/notifications/preferences`,
      body: () => ({ template_disabled_map: { [TEMPLATE_IDS.test]: true } }),
      as: "owner",
    },
  ];

  segmentsNamingNobody(
    "$name: a {user} that names nobody → 404",
    USER_PATHS,
    () => fc.oneof(hostile(), fc.uuid()),
    () => fx,
    checks,
    RUNS.few,
  );

  // Unencoded: the URL parser and the router see these as written (bad escapes, NUL escapes, case, empty segments).
  const RAW_PATHS = [
    "/notifications/settings%00",
    "/notifications/settings/",
    "/notifications/templates/%00",
    "/notifications/templates/SYSTEM",
    "/notifications/templates/..%2fsystem",
    "/notifications/templates/",
    "/notifications/custom%00",
    "/notifications/test/..;",
    "/notifications/messages/%00",
    "/notifications/dispatch-methods/%2e%2e%2f",
    "/users/%00/notifications/preferences",
    "/users/me%00/notifications/preferences",
    "/users/%/notifications/preferences",
    "/users/me/notifications/preferences%00",
    "/users/me/notifications//preferences",
  ] as const;
  rawPaths(RAW_PATHS, () => ({ token: fx.member.token, body: RAW_PATH_BODY, inboxes: memberInbox() }), checks);
});

// ---------------------------------------------------------------------------------------------------------------
// Query strings
// ---------------------------------------------------------------------------------------------------------------

describe("query strings", () => {
  // Every parameter the route accepts, read from its schema: an "unknown" key is never one of them.
  const MESSAGE_KEYS = Object.keys(messagesQuery.shape);
  const invalidMessagesQuery = fc.oneof(
    fc.tuple(unknownKey(MESSAGE_KEYS), queryText).map(([k, v]) => [[k, v] as const]),
    queryText
      .filter((v) => !["pending", "leased", "sent", "temporary_failure", "permanent_failure", "inhibited"].includes(v))
      .map((v) => [["status", v] as const]),
    queryText.filter((v) => !["smtp", "webhook", "inbox"].includes(v)).map((v) => [["method", v] as const]),
    fc
      .tuple(
        fc.constantFrom("user_id", "template_id"),
        queryText.filter((v) => !UUID_LIKE.test(v)),
      )
      .map(([k, v]) => [[k, v] as const]),
    queryText.filter(outOfRange(1, 100)).map((v) => [["limit", v] as const]),
    queryText.filter(outOfRange(0, 1_000_000)).map((v) => [["offset", v] as const]),
    repeatedKey(MESSAGE_KEYS),
  );

  it("GET /notifications/messages: unknown parameters and bad values → 400 Validation failed.", async () => {
    await fc.assert(
      fc.asyncProperty(invalidMessagesQuery, async (pairs) => {
        await rejectedWithoutChange(() => call("GET", `/notifications/messages?${query(pairs)}`, { token: fx.admin.token }), {
          status: 400,
          message: VALIDATION_FAILED,
        });
      }),
      { numRuns: RUNS.some },
    );
  });

  rawQueries(
    "raw junk query strings on the messages list are a 200 or a 400, never a 5xx",
    [{ path: "/notifications/messages", token: () => fx.admin.token, statuses: [200, 400] }],
    memberInbox,
    checks,
    RUNS.some,
  );

  queryIgnored(
    () => [
      { path: "/notifications/dispatch-methods", token: fx.member.token },
      { path: "/notifications/settings", token: fx.member.token },
      { path: "/notifications/templates/custom", token: fx.member.token },
      { path: "/notifications/templates/system", token: fx.member.token },
      { path: `/users/${fx.member.id}/notifications/preferences`, token: fx.admin.token },
    ],
    checks,
    RUNS.some,
  );
});

// ---------------------------------------------------------------------------------------------------------------
// Wrong methods
// ---------------------------------------------------------------------------------------------------------------

describe("wrong methods", () => {
  wrongMethods(
    () => ({
      "/notifications/custom": ["POST"],
      "/notifications/dispatch-methods": ["GET"],
      "/notifications/settings": ["GET", "PUT"],
      "/notifications/templates/custom": ["GET"],
      "/notifications/templates/system": ["GET"],
      "/notifications/test": ["POST"],
      "/notifications/messages": ["GET"],
      "/users/me/notifications/preferences": ["GET", "PUT"],
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
  // "__proto__" once escaped the per-key check: copied onto a plain object, a key of that name (with a boolean value)
  // is swallowed by the prototype setter, and the rest of the map was written, audited and answered 200.
  it.each(["__proto__", "constructor", "toString", "hasOwnProperty", "valueOf"])(
    "N13: a template_disabled_map key named %s is not a template → 400 naming it, nothing written",
    async (key) => {
      const error = await rejectedWithoutChange(
        () =>
          call("PUT", "/users/me/notifications/preferences", {
            token: fx.member.token,
            raw: `{"template_disabled_map": {"${key}": true, "${TEMPLATE_IDS.test}": true}}`,
          }),
        { status: 400, message: VALIDATION_FAILED },
      );
      expect(error.validations?.map((v) => v.field)).toEqual([`template_disabled_map.${key}`]);
    },
  );
});

// ---------------------------------------------------------------------------------------------------------------
// The fixtures were live: every base request above succeeds (so each rejection really was about the input)
// ---------------------------------------------------------------------------------------------------------------

describe("the requests the fuzz corrupted were valid", () => {
  baseRequestsSucceed(BODY_ENDPOINTS, [
    ["N8", 304],
    ["N13", 200],
    ["N1", 204],
  ]);

  it("N1: odd but legal content (unicode, markup, padding, limits) → 204", async () => {
    const user = await createUser();
    // Title and message may hold anything the displayed-text rule accepts (docs/api.md, "Displayed text").
    const title = fc
      .oneof(
        textWithin(1, 120),
        fc.constantFrom("<img src=x onerror=alert(1)>", "[x](javascript:alert(1))", "{{.Labels.x}}", "x".repeat(120), "  padded  "),
      )
      .filter((t) => refusedCharacter(t, "single") === undefined);
    await fc.assert(
      fc.asyncProperty(
        title.filter((t) => t.length <= 120 && t.trim() !== ""),
        fc.oneof(
          fc.constant(""),
          textWithin(0, 2000).filter((m) => m.length <= 2000 && refusedCharacter(m, "multi") === undefined),
        ),
        async (t, m) => {
          const res = await call("POST", "/notifications/custom", { token: user.token, body: { content: { title: t, message: m } } });
          expect(res.status, await res.clone().text()).toBe(204);
        },
      ),
      { numRuns: 10 },
    );
    await quiesce(2);
  });
});
