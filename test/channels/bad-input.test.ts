/**
 * Bad input on a user's channel switches (docs/channels.md, "Channel preferences"; docs/api.md, Conventions), through
 * the shared harness (test/fixtures/bad-input.ts, test/fixtures/stored-state.ts; docs/testing.md, "Bad input and
 * permissions, in depth").
 *
 * | endpoint                                    | body | path | query | credentials | > 1 MiB |
 * |---------------------------------------------|------|------|-------|-------------|---------|
 * | GET, PUT /users/{user}/notifications/chann… | yes  | yes  | yes   | yes, Origin | yes     |
 *
 * The body is a JSON array of switches, so its properties are written here rather than by the object-body harness.
 * Every rejected request must leave every table as it was.
 */

import * as fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { TEMPLATE_IDS } from "../../src/notifications/templates";
import { malformedJson, notA, POLLUTERS, textLongerThan, textWithin } from "../fixtures/arbitraries";
import {
  badCredentials,
  type EndpointCall,
  foreignOrigins,
  hostileSegment,
  knownUserRefs,
  oversizedBodies,
  type PathEndpoint,
  queryIgnored,
  RAW_PATH_BODY,
  RUNS,
  rawPaths,
  segmentsNamingNobody,
  wrongMethods,
} from "../fixtures/bad-input";
import { quiesce } from "../fixtures/d1-state";
import { stateChecks } from "../fixtures/stored-state";
import { call, createUser, owner, type TestUser } from "../helpers";

const checks = stateChecks("all");

interface Fixtures {
  admin: { token: string; id: string };
  member: TestUser;
  knownRefs: Set<string>;
}
let fx: Fixtures;

beforeAll(async () => {
  const admin = await owner();
  const member = await createUser();
  fx = { admin, member, knownRefs: await knownUserRefs() };
  await quiesce(2);
});

const PATH = "/users/me/notifications/channels";
const good = { template_id: TEMPLATE_IDS.test, channel: "push", enabled: false };

/** One switch broken in one field: a wrong type, a missing field, an unknown key, a channel that is none of the forms. */
const badSwitch = fc.oneof(
  notA("object"),
  fc.constantFrom("template_id", "channel", "enabled").map((field) => {
    const { [field as keyof typeof good]: _gone, ...rest } = good;
    return rest;
  }),
  fc.oneof(notA("string"), textWithin(0, 40), fc.constant(TEMPLATE_IDS.test.slice(1))).map((template_id) => ({ ...good, template_id })),
  fc
    .oneof(
      notA("string"),
      fc.constantFrom("sms", "EMAIL", "target:", "target:not-a-uuid", " push", "push ", "webhook", "inbox", `target:${TEMPLATE_IDS.test}x`),
      textLongerThan(43, 500),
    )
    .map((channel) => ({ ...good, channel })),
  notA("boolean").map((enabled) => ({ ...good, enabled })),
  fc.constant({ ...good, extra: 1 }),
);

describe("JSON bodies", () => {
  it("malformed JSON text → 400", async () => {
    await fc.assert(
      fc.asyncProperty(malformedJson([good]), async (raw) => {
        await checks.rejectedWithoutChange(
          () => call("PUT", PATH, { token: fx.member.token, raw, headers: { "Content-Type": "application/json" } }),
          {
            status: 400,
          },
        );
      }),
      { numRuns: RUNS.few },
    );
  });

  it("a body that is not an array, an empty one, or more than 100 switches → 400", async () => {
    const bodies = fc.oneof(
      notA("array"),
      fc.constantFrom(...POLLUTERS),
      fc.constant([]),
      fc.integer({ min: 101, max: 300 }).map((n) => Array.from({ length: n }, () => good)),
    );
    await fc.assert(
      fc.asyncProperty(bodies, async (body) => {
        await checks.rejectedWithoutChange(() => call("PUT", PATH, { token: fx.member.token, body }), { status: 400 });
      }),
      { numRuns: RUNS.some },
    );
  });

  it("one bad switch among good ones → 400 naming it, and nothing changes", async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 3 }), badSwitch, async (at, bad) => {
        const body: unknown[] = [good, good, good];
        body.splice(at, 0, bad);
        const error = await checks.rejectedWithoutChange(() => call("PUT", PATH, { token: fx.member.token, body }), { status: 400 });
        expect((error.validations ?? []).some((v) => v.field === String(at) || v.field.startsWith(`${at}.`))).toBe(true);
      }),
      { numRuns: RUNS.some },
    );
  });
});

const AUTHED: readonly EndpointCall[] = [
  { name: "GET /users/{user}/notifications/channels", method: "GET", path: () => `/users/${fx.member.id}/notifications/channels`, as: "member" },
  {
    name: "PUT /users/{user}/notifications/channels",
    method: "PUT",
    path: () => `/users/${fx.member.id}/notifications/channels`,
    body: () => [good],
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
  foreignOrigins("a valid session cookie from a foreign or missing Origin cannot change anything → 403", AUTHED, () => fx, checks, RUNS.some);
});

describe("path parameters", () => {
  const USER_PATHS: readonly PathEndpoint[] = [
    { name: "GET /users/{user}/notifications/channels", method: "GET", path: (s) => `/users/${s}/notifications/channels`, as: "owner" },
    {
      name: "PUT /users/{user}/notifications/channels",
      method: "PUT",
      path: (s) => `/users/${s}/notifications/channels`,
      body: () => [good],
      as: "owner",
    },
  ];
  segmentsNamingNobody(
    "$name: a {user} that names nobody → 404",
    USER_PATHS,
    () => fc.oneof(hostileSegment(fx.knownRefs, { uuids: false }), fc.uuid()),
    () => fx,
    checks,
    RUNS.few,
  );
  rawPaths(
    [
      "/users/%00/notifications/channels",
      "/users/me%00/notifications/channels",
      "/users/%/notifications/channels",
      "/users/me/notifications/channels%00",
      "/users/me/notifications//channels",
      "/users/me/notifications/channels/..",
    ],
    () => ({ token: fx.member.token, body: RAW_PATH_BODY, inboxes: [fx.member.token] }),
    checks,
  );
});

describe("query strings", () => {
  queryIgnored(() => [{ path: `/users/${fx.member.id}/notifications/channels`, token: fx.admin.token }], checks, RUNS.some);
});

describe("wrong methods", () => {
  wrongMethods(
    () => ({ [PATH]: ["GET", "PUT"] }),
    () => fx.member.token,
    checks,
    RUNS.some,
  );
});

describe("the request the fuzz corrupted was valid", () => {
  it("PUT with three good switches → 200", async () => {
    expect((await call("PUT", PATH, { token: fx.member.token, body: [good, good, good] })).status).toBe(200);
  });
});
