import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { TEMPLATE_IDS } from "../../src/notifications/templates";
import { notA, textLongerThan } from "../fixtures/arbitraries";
import { type BodyEndpoint, badCredentials, type EndpointCall, headerText, jsonBodyProperties, oversizedBodies } from "../fixtures/bad-input";
import { quiesce } from "../fixtures/d1-state";
import { stateChecks } from "../fixtures/stored-state";
import { call, createUser, owner, type TestUser } from "../helpers";

// Bad input to the broadcast and template-settings endpoints (docs/broadcasts.md): a 400 (401, 413) in the error shape,
// nothing stored, nothing sent — the broadcast tables, the templates and the member's inbox are compared whole.

const checks = stateChecks("all");

interface Fixture {
  admin: { token: string; id: string };
  member: TestUser;
}
let fx: Fixture;

beforeAll(async () => {
  fx = { admin: await owner(), member: await createUser() };
  await quiesce(2);
});

const uuidish = fc.oneof(notA("string"), fc.constantFrom("", "not-a-uuid", "00000000-0000-0000-0000-00000000000g"), textLongerThan(36, 200));

/** `audience` values the schema must reject: not one of the four shapes, two shapes at once, bad ids or roles. */
const badAudience = fc.oneof(
  notA("object"),
  fc.constant({}),
  fc.constant({ all: false }),
  fc.constant({ all: "true" }),
  fc.constant({ all: true, roles: ["auditor"] }),
  fc.constant({ user_ids: [] }),
  fc.array(fc.uuid(), { minLength: 1001, maxLength: 1001 }).map((user_ids) => ({ user_ids })),
  uuidish.map((id) => ({ user_ids: [id] })),
  fc.constant({ roles: [] }),
  fc.constantFrom("admin", "Owner", "organization-admin", "", "member ").map((role) => ({ roles: [role] })),
  uuidish.map((organization_id) => ({ organization_id })),
);

const badContent = fc.oneof(
  notA("object"),
  fc.constant({}),
  fc.constant({ title: "  ", message: "\n" }),
  fc.oneof(notA("string"), textLongerThan(120)).map((title) => ({ title, message: "fine" })),
  fc.constant({ title: "line\nbreak", message: "fine" }),
  fc.oneof(notA("string"), textLongerThan(2_000)).map((message) => ({ title: "fine", message })),
);

/** Durations the read-aware wait must reject: not a string, not a duration, negative, past 24 hours. */
const badWait = fc.oneof(notA("string"), fc.constantFrom("soon", "-5m", "25h", "1d1s", "15 minutes", "m15", "15x"), textLongerThan(32, 200));

const BODY_ENDPOINTS: readonly BodyEndpoint[] = [
  {
    name: "POST /notifications/broadcasts",
    method: "POST",
    path: () => "/notifications/broadcasts",
    token: () => fx.admin.token,
    base: () => ({
      audience: { user_ids: [fx.member.id] },
      content: { title: "All hands", message: "At **noon**." },
      targets: [],
      email_when_unread_after: "15m",
    }),
    bad: {
      audience: badAudience,
      content: badContent,
      targets: fc.oneof(
        notA("array"),
        uuidish.map((t) => [t]),
        fc.array(fc.uuid(), { minLength: 21, maxLength: 30 }),
      ),
      email_when_unread_after: badWait,
    },
    required: ["audience", "content"],
    inboxes: () => [fx.member.token],
  },
  {
    name: "PUT /notifications/templates/{id}/settings",
    method: "PUT",
    path: () => `/notifications/templates/${TEMPLATE_IDS.test}/settings`,
    token: () => fx.admin.token,
    base: () => ({ email_when_unread_after: "" }),
    bad: { email_when_unread_after: badWait },
    required: ["email_when_unread_after"],
  },
];

describe("JSON bodies", () => {
  jsonBodyProperties(BODY_ENDPOINTS, checks, { malformed: 10, notAnObject: 10, fields: 40, nesting: 5 });
});

const AUTHED: readonly EndpointCall[] = [
  {
    name: "POST /notifications/broadcasts",
    method: "POST",
    path: () => "/notifications/broadcasts",
    body: () => ({ audience: { user_ids: [fx.member.id] }, content: { title: "hi" } }),
    as: "owner",
    inboxes: () => [fx.member.token],
  },
  { name: "GET /notifications/broadcasts/{id}", method: "GET", path: () => `/notifications/broadcasts/${crypto.randomUUID()}`, as: "owner" },
  {
    name: "PUT /notifications/templates/{id}/settings",
    method: "PUT",
    path: () => `/notifications/templates/${TEMPLATE_IDS.test}/settings`,
    body: () => ({ email_when_unread_after: "" }),
    as: "owner",
  },
  {
    name: "GET /notifications/templates/{id}/settings",
    method: "GET",
    path: () => `/notifications/templates/${TEMPLATE_IDS.test}/settings`,
    as: "member",
  },
];

describe("body size and credentials", () => {
  oversizedBodies(
    AUTHED.filter((e) => e.body),
    () => fx,
    checks,
  );
  badCredentials(AUTHED, () => fx, checks, 10);
});

describe("headers and path parameters", () => {
  it("a malformed Idempotency-Key → 400 naming it, nothing stored or sent", async () => {
    const body = { audience: { user_ids: [fx.member.id] }, content: { title: "keyed" } };
    const badKey = fc.oneof(
      fc.constantFrom(" ", "has space", "tab\there", "x".repeat(256)),
      headerText.filter((k) => k.length > 0 && /[^\x21-\x7e]/.test(k.trim()) && k.trim() !== ""),
    );
    await fc.assert(
      fc.asyncProperty(badKey, async (key) => {
        const error = await checks.rejectedWithoutChange(
          () => call("POST", "/notifications/broadcasts", { token: fx.admin.token, body, headers: { "Idempotency-Key": key } }),
          { status: 400 },
          [fx.member.token],
        );
        expect(error.validations?.map((v) => v.field)).toEqual(["idempotency-key"]);
      }),
      { numRuns: 15 },
    );
  });

  it("ids that are not UUIDs → 400 naming `id`, on both routes", async () => {
    for (const id of ["nope", "1", "00000000-0000-0000-0000-00000000000g", "%00"]) {
      const read = await checks.rejectedWithoutChange(() => call("GET", `/notifications/broadcasts/${id}`, { token: fx.admin.token }), {
        status: 400,
      });
      expect(read.validations?.[0]?.field).toBe("id");
      const settings = await checks.rejectedWithoutChange(
        () => call("PUT", `/notifications/templates/${id}/settings`, { token: fx.admin.token, body: { email_when_unread_after: "15m" } }),
        { status: 400 },
      );
      expect(settings.validations?.[0]?.field).toBe("id");
    }
  });
});

describe("the requests the fuzz corrupted were valid", () => {
  it("the broadcast's base request → 202, the settings' → 200", async () => {
    const [broadcast, settings] = BODY_ENDPOINTS;
    for (const [endpoint, status] of [
      [broadcast, 202],
      [settings, 200],
    ] as const) {
      if (!endpoint) throw new Error("endpoint missing");
      const res = await call(endpoint.method, endpoint.path(), { token: endpoint.token(), body: endpoint.base() });
      expect(res.status, await res.clone().text()).toBe(status);
    }
  });
});
