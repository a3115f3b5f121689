import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { EXTERNAL_SCOPES, RESOURCE_ACTIONS } from "../../src/authz/catalog";
import { authorize, type Subject } from "../../src/authz/evaluate";
import { Messages } from "../../src/http/errors";
import { call, createUser, expectError, json, owner } from "../helpers";
import { deliver } from "../inbox/inbox-helpers";

const member = (over: Partial<Subject> = {}): Subject => ({
  id: "u1",
  siteRoles: [],
  orgRoles: { org1: [] },
  scopes: ["all"],
  isSystem: false,
  ...over,
});

describe('RBAC evaluation (docs/authorization.md, "How a request is decided")', () => {
  it("owner: everything, including the * resource type", () => {
    const s = member({ siteRoles: ["owner"] });
    expect(authorize(s, "delete", { type: "*" })).toBe(true);
    expect(authorize(s, "update", { type: "deployment_config" })).toBe(true);
  });

  it("member: its own objects only", () => {
    const s = member();
    expect(authorize(s, "read", { type: "inbox_notification", ownerId: "u1" })).toBe(true);
    expect(authorize(s, "read", { type: "inbox_notification", ownerId: "u2" })).toBe(false);
    expect(authorize(s, "delete", { type: "user", ownerId: "u1" })).toBe(false);
    expect(authorize(s, "update_personal", { type: "user", ownerId: "u1" })).toBe(true);
    expect(authorize(s, "read", { type: "notification_template" })).toBe(true);
    expect(authorize(s, "read", { type: "deployment_config" })).toBe(false);
  });

  it("an organization id that names an Object property is no membership (found by the bad-input fuzzer: was a 500)", () => {
    const s = member();
    for (const orgId of ["constructor", "__proto__", "toString", "hasOwnProperty"]) {
      expect(authorize(s, "read", { type: "organization", orgId })).toBe(false);
    }
  });

  it("organization level: membership and org roles, any_org", () => {
    const s = member({ orgRoles: { org1: [], org2: ["organization-admin"] } });
    expect(authorize(s, "read", { type: "organization", orgId: "org1" })).toBe(true);
    expect(authorize(s, "update", { type: "organization", orgId: "org1" })).toBe(false);
    expect(authorize(s, "update", { type: "organization", orgId: "org2" })).toBe(true);
    expect(authorize(s, "read", { type: "organization", orgId: "org3" })).toBe(false);
    expect(authorize(s, "update", { type: "organization", anyOrg: true })).toBe(true);
    expect(authorize(member(), "update", { type: "organization", anyOrg: true })).toBe(false);
  });

  it("a deny at the site level wins over an allow below it", () => {
    const system = member({ isSystem: true });
    expect(authorize(member(), "create", { type: "notification_message", ownerId: "u1" })).toBe(true);
    expect(authorize(system, "create", { type: "notification_message", ownerId: "u1" })).toBe(false);
    expect(authorize({ ...system, siteRoles: ["owner"] }, "create", { type: "notification_message", ownerId: "u1" })).toBe(false);
  });

  it("API-key scopes intersect with roles", () => {
    const s = member({ siteRoles: ["owner"], scopes: ["user:read"] });
    expect(authorize(s, "read", { type: "user" })).toBe(true);
    expect(authorize(s, "update", { type: "user" })).toBe(false);
    expect(authorize(s, "read", { type: "*" })).toBe(false);
    expect(authorize(member({ scopes: ["user:*"] }), "delete", { type: "user" })).toBe(false);
  });

  it("every listed scope is enforceable: it grants its own permission and nothing else", () => {
    for (const scope of EXTERNAL_SCOPES.filter((s) => s !== "all" && !s.endsWith(":*"))) {
      const [type, action] = scope.split(":") as [keyof typeof RESOURCE_ACTIONS, (typeof RESOURCE_ACTIONS)[keyof typeof RESOURCE_ACTIONS][number]];
      const s = member({ siteRoles: ["owner"], scopes: [scope] });
      expect(authorize(s, action, { type }), scope).toBe(true);
      const other = RESOURCE_ACTIONS[type].find((a) => a !== action);
      if (other) expect(authorize(s, other, { type }), `${scope} must not grant ${other}`).toBe(false);
    }
  });
});

describe("A2 POST /authcheck", () => {
  it("evaluates every check for the caller with owner_id me, organization_id, any_org, resource_id and *", async () => {
    const user = await createUser();
    const other = await createUser();
    const me = await json<{ organization_ids: string[] }>(await call("GET", "/users/me", { token: user.token }));
    const org = me.organization_ids[0];
    const res = await call("POST", "/authcheck", {
      token: user.token,
      body: {
        checks: {
          ownInbox: { action: "read", object: { resource_type: "inbox_notification", owner_id: "me" } },
          otherInbox: { action: "read", object: { resource_type: "inbox_notification", owner_id: other.id } },
          orgRead: { action: "read", object: { resource_type: "organization", organization_id: org } },
          orgUpdate: { action: "update", object: { resource_type: "organization", organization_id: org } },
          anyOrg: { action: "read", object: { resource_type: "organization_member", any_org: true } },
          ownUser: { action: "read", object: { resource_type: "user", resource_id: user.id } },
          otherUser: { action: "read", object: { resource_type: "user", resource_id: other.id } },
          ownKey: { action: "delete", object: { resource_type: "api_key", resource_id: user.token.slice(0, 10) } },
          otherKey: { action: "delete", object: { resource_type: "api_key", resource_id: other.token.slice(0, 10) } },
          missing: { action: "read", object: { resource_type: "user", resource_id: crypto.randomUUID() } },
          wildcard: { action: "read", object: { resource_type: "*" } },
          unknownType: { action: "read", object: { resource_type: "spaceship" } },
          unknownAction: { action: "launch", object: { resource_type: "user", owner_id: "me" } },
          create: { action: "create", object: { resource_type: "api_key", owner_id: "me" } },
        },
      },
    });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({
      ownInbox: true,
      otherInbox: false,
      orgRead: true,
      orgUpdate: false,
      anyOrg: true,
      ownUser: true,
      otherUser: false,
      ownKey: true,
      otherKey: false,
      missing: false,
      wildcard: false,
      unknownType: false,
      unknownAction: false,
      create: true,
    });
  });

  it("resource_id finds the caller's own inbox notifications", async () => {
    const user = await createUser();
    const other = await createUser();
    const mine = await deliver(user.id);
    const theirs = await deliver(other.id);
    const res = await call("POST", "/authcheck", {
      token: user.token,
      body: {
        checks: {
          mine: { action: "update", object: { resource_type: "inbox_notification", resource_id: mine.id } },
          theirs: { action: "read", object: { resource_type: "inbox_notification", resource_id: theirs.id } },
        },
      },
    });
    expect(await json(res)).toEqual({ mine: true, theirs: false });
  });

  it("owner passes the * check and reads other users", async () => {
    const admin = await owner();
    const user = await createUser();
    const res = await call("POST", "/authcheck", {
      token: admin.token,
      body: {
        checks: {
          all: { action: "delete", object: { resource_type: "*" } },
          u: { action: "read", object: { resource_type: "user", resource_id: user.id } },
        },
      },
    });
    expect(await json(res)).toEqual({ all: true, u: true });
  });

  it("requires resource_type and action per check, naming the key, and at most 100 checks", async () => {
    const user = await createUser();
    const body = await expectError(
      await call("POST", "/authcheck", {
        token: user.token,
        body: { checks: { k1: { object: { resource_type: "user" } }, k2: { action: "read", object: {} } } },
      }),
      400,
      Messages.validation,
    );
    expect(body.validations?.map((v) => v.field).sort()).toEqual(["checks.k1.action", "checks.k2.object.resource_type"]);
    const many = Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`c${i}`, { action: "read", object: { resource_type: "user" } }]));
    await expectError(await call("POST", "/authcheck", { token: user.token, body: { checks: many } }), 400);
    const hundred = Object.fromEntries(
      Array.from({ length: 100 }, (_, i) => [`c${i}`, { action: "read", object: { resource_type: "user", owner_id: "me" } }]),
    );
    expect((await call("POST", "/authcheck", { token: user.token, body: { checks: hundred } })).status).toBe(200);
    await expectError(await call("POST", "/authcheck", { body: { checks: {} } }), 401);
  });

  it("a scoped token's answers are limited to its scopes", async () => {
    const user = await createUser();
    const { key } = await json<{ key: string }>(
      await call("POST", "/users/me/keys/tokens", { token: user.token, body: { token_name: "ro", scopes: ["user:read"] } }),
    );
    const res = await call("POST", "/authcheck", {
      token: key,
      body: {
        checks: {
          read: { action: "read", object: { resource_type: "user", owner_id: "me" } },
          key: { action: "create", object: { resource_type: "api_key", owner_id: "me" } },
        },
      },
    });
    expect(await json(res)).toEqual({ read: true, key: false });
  });
});

describe("A6 POST /users/validate-password", () => {
  it("requires authentication and answers {valid, details}", async () => {
    await expectError(await call("POST", "/users/validate-password", { body: { password: "x" } }), 401);
    const user = await createUser();
    const weak = await json<{ valid: boolean; details: string }>(
      await call("POST", "/users/validate-password", { token: user.token, body: { password: "password1" } }),
    );
    expect(weak.valid).toBe(false);
    expect(weak.details.length).toBeGreaterThan(5);
    const own = await json<{ valid: boolean; details: string }>(
      await call("POST", "/users/validate-password", { token: user.token, body: { password: `${user.username}-Zebra-Quartz-91` } }),
    );
    expect(own.valid).toBe(false);
    const strong = await call("POST", "/users/validate-password", { token: user.token, body: { password: "violet-anchor-mountain-73" } });
    expect(strong.status).toBe(200);
    expect(await json(strong)).toEqual({ valid: true, details: "" });
    await expectError(await call("POST", "/users/validate-password", { token: user.token, body: {} }), 400, Messages.validation);
    expect(env.DB).toBeDefined();
  });
});
