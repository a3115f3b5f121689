/**
 * Bad input on the export (docs/privacy.md, "The export"; docs/api.md, Conventions), through the shared harness
 * (test/fixtures/bad-input.ts, test/fixtures/stored-state.ts; docs/testing.md, "Bad input and permissions, in depth").
 *
 * | endpoint                  | body | path | query | credentials | limit |
 * |---------------------------|------|------|-------|-------------|-------|
 * | GET /users/{user}/export  | —    | yes  | yes   | yes         | yes   |
 *
 * Every rejected request must leave every table as it was. An export that succeeds writes its audit entry, and the
 * export is limited to 10 a minute per caller, so the requests that succeed are few and come last.
 */

import * as fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { Messages } from "../../src/http/errors";
import {
  badCredentials,
  type EndpointCall,
  hostileSegment,
  knownUserRefs,
  type PathEndpoint,
  RAW_PATH_BODY,
  RUNS,
  rawPaths,
  segmentsNamingNobody,
  wrongMethods,
} from "../fixtures/bad-input";
import { quiesce } from "../fixtures/d1-state";
import { untilLimited } from "../fixtures/rate-limits";
import { stateChecks } from "../fixtures/stored-state";
import { call, createUser, expectError, owner, type TestUser } from "../helpers";

const checks = stateChecks("all");

interface Fixtures {
  admin: { token: string; id: string };
  member: TestUser;
  other: TestUser;
  knownRefs: Set<string>;
}
let fx: Fixtures;

beforeAll(async () => {
  const admin = await owner();
  const [member, other] = await Promise.all([createUser(), createUser()]);
  fx = { admin, member, other, knownRefs: await knownUserRefs() };
  await quiesce(2);
});

const AUTHED: readonly EndpointCall[] = [
  { name: "GET /users/{user}/export", method: "GET", path: () => `/users/${fx.member.id}/export`, as: "member" },
];

describe("credentials", () => {
  badCredentials(AUTHED, () => fx, checks, RUNS.few);
});

describe("path parameters", () => {
  const USER_PATHS: readonly PathEndpoint[] = [{ name: "GET /users/{user}/export", method: "GET", path: (s) => `/users/${s}/export`, as: "owner" }];
  segmentsNamingNobody(
    "$name: a {user} that names nobody → 404",
    USER_PATHS,
    () => fc.oneof(hostileSegment(fx.knownRefs, { uuids: false }), fc.uuid()),
    () => fx,
    checks,
    RUNS.few,
  );
  rawPaths(
    ["/users/%00/export", "/users/me%00/export", "/users/%/export", "/users/me/export%00", "/users/me//export", "/users/me/export/.."],
    () => ({ token: fx.member.token, body: RAW_PATH_BODY, inboxes: [fx.member.token] }),
    checks,
  );
  it("a member naming another member → 404, as for a user that does not exist, and nothing changed", async () => {
    await checks.rejectedWithoutChange(() => call("GET", `/users/${fx.other.id}/export`, { token: fx.member.token }), {
      status: 404,
      message: Messages.notFoundOrNoAccess,
    });
  });
});

describe("wrong methods", () => {
  wrongMethods(
    () => ({ "/users/me/export": ["GET"] }),
    () => fx.member.token,
    checks,
    RUNS.some,
  );
});

describe("the limit, and the request the fuzz corrupted was valid", () => {
  it("a query string is ignored; past ten exports within a minute the next is a 429 with Retry-After, and writes nothing", async () => {
    const first = await call("GET", `/users/${fx.other.id}/export?format=xml&__proto__=1`, { token: fx.other.token });
    expect(first.status).toBe(200);
    expect((await first.json()) as { user_id: string }).toMatchObject({ user_id: fx.other.id });
    const refused = await untilLimited(
      10,
      () => call("GET", "/users/me/export", { token: fx.other.token }),
      async (res) => {
        expect(res.status).toBe(200);
        await res.arrayBuffer();
      },
    );
    expect(Number(refused.headers.get("Retry-After"))).toBeGreaterThan(0);
    await expectError(refused, 429);
    await checks.rejectedWithoutChange(() => call("GET", "/users/me/export", { token: fx.other.token }), { status: 429 });
  });
});
