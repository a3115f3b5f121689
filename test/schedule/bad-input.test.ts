/**
 * Bad input on a user's notification schedule (docs/schedule.md, "The schedule"; docs/api.md, Conventions), through the
 * shared harness (test/fixtures/bad-input.ts, test/fixtures/stored-state.ts; docs/testing.md, "Bad input and
 * permissions, in depth").
 *
 * | endpoint                                   | body | path | query | credentials | > 1 MiB |
 * |--------------------------------------------|------|------|-------|-------------|---------|
 * | GET, PUT /users/{user}/notifications/sched… | yes  | yes  | yes   | yes, Origin | yes     |
 *
 * Every rejected request must leave every table as it was. The valid base request runs at the end of the file.
 */

import * as fc from "fast-check";
import { beforeAll, describe } from "vitest";
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
import { createUser, owner, type TestUser } from "../helpers";

const checks = stateChecks("all");

const CLOCK = /^([01]\d|2[0-3]):[0-5]\d$/;
const DAYS = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];

/** Times a range must refuse: "25:00", "7:00", "24:00", junk and other types. */
const badTime = fc.oneof(
  notA("string"),
  fc.constantFrom("25:00", "24:00", "7:00", "07:60", "07:00:00", "0700", " 07:00", "07:00 ", "noon", ""),
  textWithin(0, 8).filter((t) => !CLOCK.test(t)),
);
const badDays = fc.oneof(
  notA("array"),
  fc.constant("mon-fri"),
  fc.constant([]),
  fc.constant(["mon", "mon"]),
  fc.array(
    textWithin(0, 10).filter((d) => !DAYS.includes(d)),
    { minLength: 1, maxLength: 3 },
  ),
  fc.array(fc.constantFrom(...DAYS), { minLength: 8, maxLength: 10 }),
);
/** `quiet_hours` values to refuse: a bad range among good ones, 8 or more ranges, not an array. */
const badRanges = fc.oneof(
  notA("array"),
  badTime.map((start) => [{ start, end: "07:00" }]),
  badTime.map((end) => [{ start: "22:00", end }]),
  badDays.map((days) => [{ days, start: "22:00", end: "07:00" }]),
  fc.integer({ min: 8, max: 40 }).map((n) => Array.from({ length: n }, () => ({ start: "22:00", end: "07:00" }))),
  fc.constant([{ start: "22:00" }]),
);
const badDigest = fc.oneof(
  notA("string"),
  fc.constantFrom("0m", "0", "30s", "59s", "25h", "24h1m", "2d", "60", "daily@25:00", "daily@7:00", "daily", "weekly", "OFF", " off", "-1h"),
  textLongerThan(32, 200),
);
const badZone = fc.oneof(
  notA("string"),
  fc.constantFrom("Mars/Olympus_Mons", "+01:00", "GMT+1", "Europe/Berlin/", "", "../../etc/localtime", "Europe\\Berlin"),
  textLongerThan(64, 500),
);

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

const BODY_ENDPOINTS: readonly BodyEndpoint[] = [
  {
    name: "PUT /users/{user}/notifications/schedule",
    method: "PUT",
    path: () => "/users/me/notifications/schedule",
    token: () => fx.member.token,
    base: () => ({ timezone: "Europe/Berlin", quiet_hours: [{ days: ["mon", "fri"], start: "22:00", end: "07:00" }], digest: "daily@08:00" }),
    bad: { timezone: badZone, quiet_hours: badRanges, digest: badDigest },
    required: ["timezone", "quiet_hours", "digest"],
  },
];

describe("JSON bodies", () => {
  jsonBodyProperties(BODY_ENDPOINTS, checks, { malformed: RUNS.few, notAnObject: RUNS.few, fields: RUNS.some, nesting: 5 });
});

const AUTHED: readonly EndpointCall[] = [
  { name: "GET /users/{user}/notifications/schedule", method: "GET", path: () => `/users/${fx.member.id}/notifications/schedule`, as: "member" },
  {
    name: "PUT /users/{user}/notifications/schedule",
    method: "PUT",
    path: () => `/users/${fx.member.id}/notifications/schedule`,
    body: () => ({ timezone: "UTC", quiet_hours: [], digest: "off" }),
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
    { name: "GET /users/{user}/notifications/schedule", method: "GET", path: (s) => `/users/${s}/notifications/schedule`, as: "owner" },
    {
      name: "PUT /users/{user}/notifications/schedule",
      method: "PUT",
      path: (s) => `/users/${s}/notifications/schedule`,
      body: () => ({ timezone: "UTC", quiet_hours: [], digest: "off" }),
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
      "/users/%00/notifications/schedule",
      "/users/me%00/notifications/schedule",
      "/users/%/notifications/schedule",
      "/users/me/notifications/schedule%00",
      "/users/me/notifications//schedule",
      "/users/me/notifications/schedule/..",
    ],
    () => ({ token: fx.member.token, body: RAW_PATH_BODY, inboxes: [fx.member.token] }),
    checks,
  );
});

describe("query strings", () => {
  queryIgnored(() => [{ path: `/users/${fx.member.id}/notifications/schedule`, token: fx.admin.token }], checks, RUNS.some);
});

describe("wrong methods", () => {
  wrongMethods(
    () => ({ "/users/me/notifications/schedule": ["GET", "PUT"] }),
    () => fx.member.token,
    checks,
    RUNS.some,
  );
});

describe("the request the fuzz corrupted was valid", () => {
  baseRequestsSucceed(BODY_ENDPOINTS, [["PUT", 200]]);
});
