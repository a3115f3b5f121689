/**
 * Bad input on the inbox endpoints: the list, mark all as read, the watch socket and a notification's read status
 * (docs/api.md: Notifications, Watching the inbox; docs/inbox.md, Item states). Every endpoint gets property-based
 * junk — malformed JSON, wrong JSON types, missing fields, huge and unicode values, hostile path segments, query
 * strings, sub-protocols and credentials — and must answer a 4xx in the error shape (docs/api.md, Conventions) without
 * changing state: neither D1 nor the caller's inbox as GET /notifications/inbox shows it. The harness is shared with
 * the other bad-input suites (test/fixtures/bad-input.ts, test/fixtures/stored-state.ts; docs/testing.md, "Bad input
 * and permissions, in depth").
 *
 * | endpoint                                  | body | path | query | credentials | > 1 MiB | other                  |
 * |-------------------------------------------|------|------|-------|-------------|---------|------------------------|
 * | GET /notifications/inbox                  |      |      | yes   | yes         |         |                        |
 * | PUT /notifications/inbox/mark-all-as-read |      |      |       | yes, Origin | yes     |                        |
 * | GET /notifications/inbox/watch            |      |      | yes   | yes, Origin |         | upgrade, sub-protocols |
 * | PUT /notifications/inbox/{id}/read-status |      | yes  |       | yes, Origin | yes     |                        |
 *
 * State is fingerprinted from every table (for notification_messages only the columns fixed at enqueue time, since
 * delivery updates status and payload in the background; test/fixtures/stored-state.ts) and from the inboxes of the
 * caller and, where another member's ids are used, of that member. Fixtures are made in beforeAll and their background
 * work (account notices) is waited out before the first property runs; the one request that legitimately changes an
 * inbox (the read-status base request) runs at the end of the file.
 *
 * Test names use the endpoints' short labels, the keys of docs/api.md's endpoint tables: N3 list, N4 mark all as
 * read, N5 watch, N6 read status.
 */
import * as fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { InboxMessages } from "../../src/inbox/messages";
import { listInboxQuery, watchInboxQuery } from "../../src/inbox/schemas";
import { TEMPLATE_IDS } from "../../src/notifications/templates";
import { notA } from "../fixtures/arbitraries";
import {
  type BodyEndpoint,
  badCredential,
  badCredentials,
  baseRequestsSucceed,
  type EndpointCall,
  foreignOrigins,
  hostileSegment,
  jsonBodyProperties,
  knownUserRefs,
  NOT_FOUND,
  outOfRange,
  oversizedBodies,
  query,
  queryText,
  RAW_PATH_BODY,
  RUNS,
  rawPaths,
  rawQueries,
  repeatedKey,
  SIGNED_OUT,
  UUID_LIKE,
  unknownKey,
  VALIDATION_FAILED,
  wrongMethods,
} from "../fixtures/bad-input";
import { quiesce } from "../fixtures/d1-state";
import { stateChecks } from "../fixtures/stored-state";
import { call, createUser, json, owner, type TestUser } from "../helpers";
import { deliver, inbox } from "./inbox-helpers";

/**
 * Every table, and, for each token given to a check, that caller's inbox. The storage is this file's own (vitest gives
 * each test file its own D1 and objects; docs/testing.md), so only this file's fixtures start background work, which
 * it waits out (quiesce) before comparing.
 */
const checks = stateChecks("all");
const { rejectedWithoutChange, answeredWithoutChange } = checks;

// ---------------------------------------------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------------------------------------------

interface Fixtures {
  admin: { token: string; id: string };
  /** The caller of the fuzz; its inbox holds read and unread notifications. */
  member: TestUser;
  /** One of `member`'s unread notifications: the object of the read-status fuzz. */
  unreadId: string;
  /** Another member with notifications of its own: its ids are not the caller's. */
  other: TestUser;
  otherIds: string[];
  knownRefs: Set<string>;
}
let fx: Fixtures;

beforeAll(async () => {
  const admin = await owner();
  const [member, other] = await Promise.all([createUser(), createUser()]);
  // The member's inbox: three notifications, the oldest already read.
  const delivered = [
    await deliver(member.id),
    await deliver(member.id, { targets: [crypto.randomUUID()] }),
    await deliver(member.id, { templateId: TEMPLATE_IDS.custom }),
  ];
  await inbox(member.id).setReadStatus(delivered[0]?.id ?? "", true);
  const otherDelivered = [await deliver(other.id), await deliver(other.id)];
  fx = {
    admin,
    member,
    unreadId: delivered[2]?.id ?? "",
    other,
    otherIds: otherDelivered.map((d) => d.id),
    knownRefs: await knownUserRefs(),
  };
  // Creating those accounts notified the owner after each response; let that settle before anything is compared.
  await quiesce(2);
});

// ---------------------------------------------------------------------------------------------------------------
// JSON bodies
// ---------------------------------------------------------------------------------------------------------------

const BODY_ENDPOINTS: readonly BodyEndpoint[] = [
  {
    name: "N6 PUT /notifications/inbox/{id}/read-status",
    method: "PUT",
    path: () => `/notifications/inbox/${fx.unreadId}/read-status`,
    token: () => fx.member.token,
    base: () => ({ is_read: true }),
    bad: { is_read: notA("boolean") },
    required: ["is_read"],
    inboxes: () => [fx.member.token],
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

/** Every endpoint of this file, with a request the member could make successfully. */
const AUTHED: readonly EndpointCall[] = [
  { name: "N3 GET /notifications/inbox", method: "GET", path: () => "/notifications/inbox", as: "member", inboxes: memberInbox },
  {
    name: "N4 PUT /notifications/inbox/mark-all-as-read",
    method: "PUT",
    path: () => "/notifications/inbox/mark-all-as-read",
    as: "member",
    inboxes: memberInbox,
  },
  {
    name: "N5 GET /notifications/inbox/watch (upgrade)",
    method: "GET",
    path: () => "/notifications/inbox/watch",
    headers: { Upgrade: "websocket" },
    as: "member",
    inboxes: memberInbox,
  },
  {
    name: "N6 PUT /notifications/inbox/{id}/read-status",
    method: "PUT",
    path: () => `/notifications/inbox/${fx.unreadId}/read-status`,
    body: () => ({ is_read: true }),
    as: "member",
    inboxes: memberInbox,
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

  it("N5: a bad token offered as the herald.token.* sub-protocol → 401, no socket", async () => {
    await fc.assert(
      fc.asyncProperty(badCredential(fx.member), async (credential) => {
        const token = Object.values(credential)[0]?.replace(/^Bearer |^service_session_token=/, "") ?? "";
        fc.pre(/^[\x21-\x7e]+$/.test(token) && !token.includes(","));
        await rejectedWithoutChange(
          () =>
            call("GET", "/notifications/inbox/watch", {
              headers: { Upgrade: "websocket", "Sec-WebSocket-Protocol": `herald.v1, herald.token.${token}` },
            }),
          { status: 401, message: SIGNED_OUT },
          [fx.member.token],
        );
      }),
      { numRuns: RUNS.few },
    );
  });

  foreignOrigins(
    "a valid session cookie from a foreign or missing Origin cannot change anything (or open a watch) → 403",
    AUTHED,
    () => fx,
    checks,
    RUNS.many,
  );
});

// ---------------------------------------------------------------------------------------------------------------
// Path parameters
// ---------------------------------------------------------------------------------------------------------------

describe("path parameters", () => {
  /** Path segments that are no UUID (so never the caller's notification). */
  const hostile = () => hostileSegment(fx.knownRefs, { uuids: false });

  it("N6: an id that is not a UUID → 400 naming `id`; the inbox is untouched", async () => {
    await fc.assert(
      fc.asyncProperty(hostile(), fc.boolean(), async (segment, isRead) => {
        const error = await rejectedWithoutChange(
          () => call("PUT", `/notifications/inbox/${segment}/read-status`, { token: fx.member.token, body: { is_read: isRead } }),
          { status: 400, message: VALIDATION_FAILED },
          [fx.member.token],
        );
        expect(error.validations?.map((v) => v.field)).toEqual(["id"]);
      }),
      { numRuns: RUNS.some },
    );
  });

  it("N6: a UUID that is not one of the caller's notifications (random, or another user's) → 404; no inbox changes", async () => {
    const id = fc.oneof(
      fc.uuid(),
      fc.constantFrom(...fx.otherIds),
      fc.constantFrom(...fx.otherIds).map((s) => s.toUpperCase()),
    );
    await fc.assert(
      fc.asyncProperty(id, fc.boolean(), async (notificationId, isRead) => {
        await rejectedWithoutChange(
          () => call("PUT", `/notifications/inbox/${notificationId}/read-status`, { token: fx.member.token, body: { is_read: isRead } }),
          { status: 404, message: NOT_FOUND },
          [fx.member.token, fx.other.token],
        );
      }),
      { numRuns: RUNS.few },
    );
  });

  // Unencoded: the URL parser and the router see these as written (bad escapes, NUL escapes, case, empty segments).
  const RAW_PATHS = [
    "/notifications/inbox/%00/read-status",
    "/notifications/inbox/%ZZ/read-status",
    "/notifications/inbox/%/read-status",
    "/notifications/inbox//read-status",
    "/notifications/inbox/%2e%2e/read-status",
    "/notifications/inbox/mark-all-as-read%00",
    "/notifications/inbox/MARK-ALL-AS-READ",
    "/notifications/inbox/mark-all-as-read/",
    "/notifications/inbox/watch%00",
    "/notifications/inbox/%00",
  ] as const;
  rawPaths(RAW_PATHS, () => ({ token: fx.member.token, body: RAW_PATH_BODY, inboxes: memberInbox() }), checks);
});

// ---------------------------------------------------------------------------------------------------------------
// Query strings
// ---------------------------------------------------------------------------------------------------------------

describe("query strings", () => {
  const uuidListEntry = fc.oneof(fc.uuid(), fc.constantFrom(TEMPLATE_IDS.test, TEMPLATE_IDS.custom));
  /** A `targets`/`templates` value with at least one entry that is not a UUID, more than 16 ids, or over 2048 characters. */
  const badUuidList = fc.oneof(
    fc
      .tuple(fc.array(uuidListEntry, { maxLength: 3 }), queryText, fc.nat({ max: 3 }))
      .filter(([, bad]) =>
        bad
          .split(",")
          .map((s) => s.trim())
          .some((s) => s !== "" && !UUID_LIKE.test(s)),
      )
      .map(([good, bad, at]) => [...good.slice(0, at), bad, ...good.slice(at)].join(",")),
    fc.uniqueArray(fc.uuid(), { minLength: 17, maxLength: 40 }).map((ids) => ids.join(",")),
    fc.integer({ min: 2_049, max: 20_000 }).map((n) => `${crypto.randomUUID()},`.padEnd(n, ",")),
  );

  // Every parameter the route accepts, read from its schema: an "unknown" key is never one of them.
  const INBOX_KEYS = Object.keys(listInboxQuery.shape);
  const invalidInboxQuery = fc.oneof(
    fc.tuple(unknownKey(INBOX_KEYS), queryText).map(([k, v]) => [[k, v] as const]),
    fc.tuple(fc.constantFrom("targets", "templates"), badUuidList).map(([k, v]) => [[k, v] as const]),
    queryText.filter((v) => !["all", "read", "unread"].includes(v)).map((v) => [["read_status", v] as const]),
    queryText.filter((v) => !UUID_LIKE.test(v)).map((v) => [["starting_before", v] as const]),
    queryText.filter(outOfRange(1, 100)).map((v) => [["limit", v] as const]),
    repeatedKey(INBOX_KEYS),
  );

  it("N3: unknown parameters and bad values → 400 Validation failed.; the inbox is untouched", async () => {
    await fc.assert(
      fc.asyncProperty(invalidInboxQuery, async (pairs) => {
        await rejectedWithoutChange(
          () => call("GET", `/notifications/inbox?${query(pairs)}`, { token: fx.member.token }),
          { status: 400, message: VALIDATION_FAILED },
          [fx.member.token],
        );
      }),
      { numRuns: RUNS.many },
    );
  });

  it("N3: starting_before that is not one of the caller's notifications → 400 naming starting_before", async () => {
    const cursor = fc.oneof(fc.uuid(), fc.constantFrom(...fx.otherIds));
    await fc.assert(
      fc.asyncProperty(cursor, async (id) => {
        const error = await rejectedWithoutChange(
          () => call("GET", `/notifications/inbox?starting_before=${id}`, { token: fx.member.token }),
          { status: 400 },
          [fx.member.token],
        );
        expect(error.validations?.map((v) => v.field)).toEqual(["starting_before"]);
      }),
      { numRuns: RUNS.few },
    );
  });

  const WATCH_KEYS = Object.keys(watchInboxQuery.shape);
  const invalidWatchQuery = fc.oneof(
    fc.tuple(unknownKey(WATCH_KEYS), queryText).map(([k, v]) => [[k, v] as const]),
    fc.tuple(fc.constantFrom("targets", "templates"), badUuidList).map(([k, v]) => [[k, v] as const]),
    queryText.filter((v) => !["all", "read", "unread"].includes(v)).map((v) => [["read_status", v] as const]),
    queryText.filter((v) => !["markdown", "plaintext"].includes(v)).map((v) => [["format", v] as const]),
    queryText.filter((v) => !["true", "false"].includes(v)).map((v) => [["sync_read_state", v] as const]),
    fc.constantFrom("starting_before", "limit").map((k) => [[k, "1"]] as const),
    repeatedKey(WATCH_KEYS),
  );

  it("N5: bad parameters → 400 JSON before any upgrade, with or without Upgrade: websocket", async () => {
    await fc.assert(
      fc.asyncProperty(invalidWatchQuery, fc.boolean(), async (pairs, upgrade) => {
        await rejectedWithoutChange(
          () =>
            call("GET", `/notifications/inbox/watch?${query(pairs)}`, { token: fx.member.token, headers: upgrade ? { Upgrade: "websocket" } : {} }),
          { status: 400, message: VALIDATION_FAILED },
          [fx.member.token],
        );
      }),
      { numRuns: RUNS.many },
    );
  });

  it("N5: valid parameters without a WebSocket upgrade → 400", async () => {
    const validQuery = fc.record(
      {
        read_status: fc.constantFrom("all", "read", "unread"),
        format: fc.constantFrom("markdown", "plaintext"),
        sync_read_state: fc.constantFrom("true", "false"),
        templates: fc.constant(TEMPLATE_IDS.test),
      },
      { requiredKeys: [] },
    );
    const notUpgrade = fc.constantFrom<Record<string, string>>(
      {},
      { Upgrade: "h2c" },
      { Upgrade: "websocket2" },
      { Connection: "Upgrade" },
      { Upgrade: "" },
    );
    await fc.assert(
      fc.asyncProperty(validQuery, notUpgrade, async (params, headers) => {
        await rejectedWithoutChange(
          () => call("GET", `/notifications/inbox/watch?${query(Object.entries(params))}`, { token: fx.member.token, headers }),
          { status: 400, message: InboxMessages.websocketOnly },
          [fx.member.token],
        );
      }),
      { numRuns: RUNS.few },
    );
  });

  it("N5: offered sub-protocols without herald.v1 → 400, no socket", async () => {
    const protocols = fc
      .array(
        fc.oneof(
          fc.constantFrom("herald.v2", "HERALD.V1", "herald.v1 ", "chat", "herald", "herald.v1;", "v1.herald"),
          fc.string({ unit: fc.constantFrom(..."abcdefghijklmnopqrstuvwxyz.-_0123456789"), minLength: 1, maxLength: 20 }),
        ),
        { minLength: 1, maxLength: 4 },
      )
      .map((list) => list.join(", "))
      .filter(
        (h) =>
          !h
            .split(",")
            .map((p) => p.trim())
            .some((p) => p === "herald.v1" || p.startsWith("herald.token.")),
      );
    await fc.assert(
      fc.asyncProperty(protocols, async (offered) => {
        await rejectedWithoutChange(
          () =>
            call("GET", "/notifications/inbox/watch", {
              token: fx.member.token,
              headers: { Upgrade: "websocket", "Sec-WebSocket-Protocol": offered },
            }),
          { status: 400 },
          [fx.member.token],
        );
      }),
      { numRuns: RUNS.few },
    );
  });

  rawQueries(
    "raw junk query strings on N3 and N5 are a 200 or a 400, never a 5xx",
    [
      { path: "/notifications/inbox", token: () => fx.member.token, statuses: [200, 400] },
      { path: "/notifications/inbox/watch", token: () => fx.member.token, statuses: [400] },
    ],
    memberInbox,
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
      "/notifications/inbox": ["GET"],
      "/notifications/inbox/mark-all-as-read": ["PUT"],
      "/notifications/inbox/watch": ["GET"],
      [`/notifications/inbox/${fx.unreadId}/read-status`]: ["PUT"],
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
  it("N6: setting a notification to the state it is in → 200, the inbox unchanged (read_at kept), any case of the id", async () => {
    const states = await json<{ notifications: { id: string; read_at: string | null }[] }>(
      await call("GET", "/notifications/inbox", { token: fx.member.token }),
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...states.notifications), fc.boolean(), async (n, upper) => {
        const id = upper ? n.id.toUpperCase() : n.id;
        const res = await answeredWithoutChange(
          () => call("PUT", `/notifications/inbox/${id}/read-status`, { token: fx.member.token, body: { is_read: n.read_at !== null } }),
          [fx.member.token],
        );
        expect(res.status).toBe(200);
        expect((await json<{ notification: { id: string; read_at: string | null } }>(res)).notification).toMatchObject({
          id: n.id,
          read_at: n.read_at,
        });
      }),
      { numRuns: RUNS.few },
    );
  });

  it("N3: odd but valid filters (case, spaces, duplicates, stray commas, 16 ids, limits 1–100) → 200 with a subset", async () => {
    const all = await json<{ notifications: { id: string }[]; unread_count: number }>(
      await call("GET", "/notifications/inbox?limit=100", { token: fx.member.token }),
    );
    const allIds = new Set(all.notifications.map((n) => n.id));
    // At most 16 entries in all: the limit counts entries as sent, duplicates included.
    const ids = fc.array(fc.oneof(fc.uuid(), fc.constantFrom(TEMPLATE_IDS.test, TEMPLATE_IDS.custom)), { maxLength: 16 });
    const list = fc.tuple(ids, fc.boolean(), fc.boolean(), fc.constantFrom("", " ", "  "), fc.constantFrom("", ",", ", ,")).map(
      ([l, upper, dup, pad, stray]) =>
        `${stray}${(dup ? [...l, ...l] : l)
          .slice(0, 16)
          .map((id) => `${pad}${upper ? id.toUpperCase() : id}${pad}`)
          .join(",")}${stray}`,
    );
    const params = fc.record(
      { targets: list, templates: list, read_status: fc.constantFrom("all", "read", "unread"), limit: fc.integer({ min: 1, max: 100 }).map(String) },
      { requiredKeys: [] },
    );
    await fc.assert(
      fc.asyncProperty(params, async (p) => {
        const res = await answeredWithoutChange(
          () => call("GET", `/notifications/inbox?${query(Object.entries(p))}`, { token: fx.member.token }),
          [fx.member.token],
        );
        expect(res.status, await res.clone().text()).toBe(200);
        const body = await json<{ notifications: { id: string }[]; unread_count: number }>(res);
        expect(body.unread_count).toBe(all.unread_count);
        for (const n of body.notifications) expect(allIds.has(n.id)).toBe(true);
      }),
      { numRuns: RUNS.some },
    );
  });
});

// ---------------------------------------------------------------------------------------------------------------
// The fixtures were live: the base request above succeeds (so each rejection really was about the input)
// ---------------------------------------------------------------------------------------------------------------

describe("the requests the fuzz corrupted were valid", () => {
  baseRequestsSucceed(BODY_ENDPOINTS, [["N6", 200]]);
});
