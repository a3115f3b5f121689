import * as fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  ACTIONS,
  type Action,
  EXTERNAL_SCOPES,
  isAction,
  isKnownScope,
  isResourceType,
  RESOURCE_ACTIONS,
  RESOURCE_TYPES,
  type ResourceType,
} from "../../src/authz/catalog";
import { type AuthzObject, authorize, type Subject, scopeAllows } from "../../src/authz/evaluate";
import { ASSIGNABLE_SITE_ROLES, isOrgRole, isSiteRole, ORG_ROLES, SITE_ROLES } from "../../src/authz/roles";
import { NASTY_STRINGS } from "../fixtures/arbitraries";

// The RBAC evaluator of docs/authorization.md, "How a request is decided" (src/authz/evaluate.ts): site level, then
// organization, then ownership; a deny at a level ends the walk; an API key's scopes intersect with its roles.
// test/authz/authcheck.test.ts has the first examples; this file goes through each role's table, unknown and hostile
// role names, and scope narrowing.

const subject = (over: Partial<Subject> = {}): Subject => ({ id: "u1", siteRoles: [], orgRoles: {}, scopes: ["all"], isSystem: false, ...over });
const can = (s: Subject, action: Action, object: AuthzObject) => authorize(s, action, object);

/** Every (type, action) pair the catalogue defines. */
const PAIRS: [ResourceType, Action][] = RESOURCE_TYPES.flatMap((type) =>
  RESOURCE_ACTIONS[type].map((action): [ResourceType, Action] => [type, action]),
);

/** The pairs a site role grants everywhere, straight from the table of docs/authorization.md, "Site roles". */
const SITE_GRANTS: Record<"user-admin" | "auditor" | "member", string[]> = {
  "user-admin": [
    "user:create",
    "user:read",
    "user:update",
    "user:delete",
    "user:read_personal",
    "user:update_personal",
    "assign_role:assign",
    "assign_role:unassign",
    "assign_role:read",
    "notification_template:read",
    "organization:read",
    // Broadcasts (docs/broadcasts.md, "The endpoints"): owners and user admins.
    "notification_broadcast:create",
    "notification_broadcast:read",
    "organization_member:create",
    "organization_member:read",
    "organization_member:update",
    "organization_member:delete",
  ],
  auditor: [
    "user:read",
    "assign_role:read",
    "notification_template:read",
    "deployment_config:read",
    "organization:read",
    "organization_member:read",
    "audit_log:read",
  ],
  member: ["assign_role:read", "notification_template:read"],
};

describe('site roles (docs/authorization.md, "Site roles")', () => {
  it("owner: every action on every resource type, with or without an owner or organization", () => {
    const owner = subject({ siteRoles: ["owner"] });
    for (const [type, action] of PAIRS) {
      expect(can(owner, action, { type }), `${type}:${action}`).toBe(true);
      expect(can(owner, action, { type, ownerId: "someone-else" }), `${type}:${action} of another user`).toBe(true);
      expect(can(owner, action, { type, orgId: "not-a-member" }), `${type}:${action} in a foreign org`).toBe(true);
    }
    for (const action of ACTIONS) expect(can(owner, action, { type: "*" })).toBe(true);
  });

  for (const role of ["user-admin", "auditor", "member"] as const) {
    it(`${role}: exactly its site-wide grants, on anybody's objects`, () => {
      const s = subject({ siteRoles: role === "member" ? [] : [role] });
      for (const [type, action] of PAIRS) {
        const expected = SITE_GRANTS[role].includes(`${type}:${action}`);
        expect(can(s, action, { type, ownerId: "u2" }), `${role} ${type}:${action}`).toBe(expected);
      }
      for (const action of ACTIONS) expect(can(s, action, { type: "*" }), `${role} *:${action}`).toBe(false);
    });
  }

  it('member: on its own objects, the "own" grants of the member column (docs/authorization.md, "Site roles")', () => {
    const me = subject();
    const own: string[] = [
      "user:read",
      "user:read_personal",
      "user:update_personal",
      "api_key:create",
      "api_key:read",
      "api_key:update",
      "api_key:delete",
      "inbox_notification:read",
      "inbox_notification:update",
      "notification_preference:read",
      "notification_preference:update",
      "notification_message:create",
      // The user's own targets (docs/targets.md, "Who may do what").
      "notification_target:create",
      "notification_target:read",
      "notification_target:update",
      "notification_target:delete",
      ...SITE_GRANTS.member,
    ];
    for (const [type, action] of PAIRS) expect(can(me, action, { type, ownerId: "u1" }), `${type}:${action}`).toBe(own.includes(`${type}:${action}`));
  });

  it("member: cannot delete or rename its own account, nor delete or create inbox notifications", () => {
    const me = subject();
    for (const action of ["update", "delete", "create"] as const) expect(can(me, action, { type: "user", ownerId: "u1" })).toBe(false);
    for (const action of ["create", "delete"] as const) expect(can(me, action, { type: "inbox_notification", ownerId: "u1" })).toBe(false);
  });

  it("ownership is the exact id: another user's id, a prefix, a different case or an empty id are not the subject's", () => {
    const me = subject({ id: "0193b3a2-aaaa-7000-8000-000000000001" });
    for (const ownerId of [
      "0193b3a2-aaaa-7000-8000-000000000002",
      "0193b3a2",
      "0193B3A2-AAAA-7000-8000-000000000001",
      "",
      " 0193b3a2-aaaa-7000-8000-000000000001",
    ]) {
      expect(can(me, "read", { type: "api_key", ownerId }), JSON.stringify(ownerId)).toBe(false);
    }
    expect(can(me, "read", { type: "api_key", ownerId: me.id })).toBe(true);
    expect(can(me, "read", { type: "api_key" })).toBe(false); // no owner named: not the subject's
  });

  it("roles add up: auditor + user-admin has both tables", () => {
    const s = subject({ siteRoles: ["auditor", "user-admin"] });
    expect(can(s, "read", { type: "audit_log" })).toBe(true);
    expect(can(s, "delete", { type: "user" })).toBe(true);
    expect(can(s, "update", { type: "deployment_config" })).toBe(false);
  });

  it("a role listed twice, or `member` stored explicitly, changes nothing", () => {
    for (const [type, action] of PAIRS) {
      const plain = can(subject({ siteRoles: ["auditor"] }), action, { type, ownerId: "u1" });
      expect(can(subject({ siteRoles: ["auditor", "auditor", "member"] }), action, { type, ownerId: "u1" })).toBe(plain);
    }
  });
});

describe("unknown and hostile role names grant nothing", () => {
  const UNKNOWN = [
    "admin",
    "Owner",
    "OWNER",
    " owner",
    "owner ",
    "",
    "*",
    "site-owner",
    "organization-admin",
    "organization-member",
    "constructor",
    "__proto__",
    "toString",
    "hasOwnProperty",
    "valueOf",
    ...NASTY_STRINGS,
  ];

  it("as site roles: a subject holding only unknown roles is a plain member", () => {
    const unknown = subject({ siteRoles: UNKNOWN });
    const member = subject();
    for (const [type, action] of PAIRS) {
      for (const object of [{ type }, { type, ownerId: "u1" }, { type, ownerId: "u2" }] as AuthzObject[]) {
        expect(can(unknown, action, object), `${type}:${action} ${JSON.stringify(object)}`).toBe(can(member, action, object));
      }
    }
  });

  it("an organization role stored as a site role does not apply site-wide", () => {
    const s = subject({ siteRoles: ["organization-admin"] });
    expect(can(s, "update", { type: "organization" })).toBe(false);
    expect(can(s, "update", { type: "organization", anyOrg: true })).toBe(false);
  });

  it("a site role stored as an organization role does not apply in the organization", () => {
    const s = subject({ orgRoles: { org1: ["owner", "user-admin", "auditor", "__proto__", "constructor", "ORGANIZATION-ADMIN"] } });
    expect(can(s, "update", { type: "organization", orgId: "org1" })).toBe(false);
    expect(can(s, "delete", { type: "organization_member", orgId: "org1" })).toBe(false);
    expect(can(s, "read", { type: "audit_log", orgId: "org1" })).toBe(false);
    expect(can(s, "read", { type: "organization", orgId: "org1" })).toBe(true); // membership itself still counts
  });

  it("isSiteRole and isOrgRole know only their own tables, not Object.prototype", () => {
    for (const name of ["constructor", "__proto__", "toString", "hasOwnProperty", ""]) {
      expect(isSiteRole(name)).toBe(false);
      expect(isOrgRole(name)).toBe(false);
    }
    for (const name of Object.keys(SITE_ROLES)) expect([isSiteRole(name), isOrgRole(name)]).toEqual([true, false]);
    for (const name of Object.keys(ORG_ROLES)) expect([isSiteRole(name), isOrgRole(name)]).toEqual([false, true]);
    expect(ASSIGNABLE_SITE_ROLES).not.toContain("member");
  });

  it("isAction, isResourceType and isKnownScope refuse prototype names and near misses", () => {
    for (const name of ["constructor", "__proto__", "toString", "*", "", "READ", "User"]) {
      expect(isAction(name), name).toBe(false);
      expect(isResourceType(name), name).toBe(false);
      expect(isKnownScope(name), name).toBe(false);
    }
  });
});

describe('organization roles (docs/authorization.md, "Organization roles")', () => {
  const ORG_GRANTS: Record<keyof typeof ORG_ROLES, string[]> = {
    "organization-admin": [
      "organization:read",
      "organization:update",
      "organization_member:create",
      "organization_member:read",
      "organization_member:update",
      "organization_member:delete",
      "assign_role:assign",
      "assign_role:unassign",
      "assign_role:read",
      "audit_log:read",
    ],
    "organization-user-admin": [
      "organization:read",
      "organization_member:create",
      "organization_member:read",
      "organization_member:update",
      "organization_member:delete",
      "assign_role:assign",
      "assign_role:unassign",
      "assign_role:read",
    ],
    "organization-auditor": ["organization:read", "organization_member:read", "audit_log:read"],
    "organization-member": ["organization:read", "organization_member:read"],
  };

  for (const role of Object.keys(ORG_GRANTS) as (keyof typeof ORG_ROLES)[]) {
    it(`${role}: exactly its grants, inside its organization only`, () => {
      const s = subject({ orgRoles: { org1: role === "organization-member" ? [] : [role], org2: [] } });
      for (const [type, action] of PAIRS) {
        const site = SITE_GRANTS.member.includes(`${type}:${action}`);
        const expected = site || ORG_GRANTS[role].includes(`${type}:${action}`);
        expect(can(s, action, { type, orgId: "org1" }), `${role} ${type}:${action} in org1`).toBe(expected);
        expect(can(s, action, { type, orgId: "org2" }), `${role} ${type}:${action} in org2`).toBe(
          site || ORG_GRANTS["organization-member"].includes(`${type}:${action}`),
        );
        expect(can(s, action, { type, orgId: "org3" }), `${role} ${type}:${action} in org3`).toBe(site);
        // Without an organization named, an organization role grants nothing.
        expect(can(s, action, { type }), `${role} ${type}:${action} without org`).toBe(site);
      }
    });
  }

  it("a non-member of the organization gets nothing below the site level, not even on objects it owns", () => {
    const s = subject({ orgRoles: { org1: [] } });
    expect(can(s, "read", { type: "api_key", ownerId: "u1" })).toBe(true);
    expect(can(s, "read", { type: "api_key", ownerId: "u1", orgId: "org1" })).toBe(true);
    expect(can(s, "read", { type: "api_key", ownerId: "u1", orgId: "org-elsewhere" })).toBe(false);
  });

  it("a site-level grant does not need membership", () => {
    expect(can(subject({ siteRoles: ["user-admin"] }), "read", { type: "organization", orgId: "org9" })).toBe(true);
    expect(can(subject({ siteRoles: ["auditor"] }), "read", { type: "audit_log", orgId: "org9" })).toBe(true);
    expect(can(subject({ siteRoles: ["auditor"] }), "update", { type: "organization", orgId: "org9" })).toBe(false);
  });

  it("any_org: passes when one of the subject's organizations grants it, fails with none", () => {
    const s = subject({ orgRoles: { a: [], b: ["organization-auditor"], c: [] } });
    expect(can(s, "read", { type: "audit_log", anyOrg: true })).toBe(true);
    expect(can(s, "update", { type: "organization", anyOrg: true })).toBe(false);
    expect(can(subject(), "read", { type: "organization", anyOrg: true })).toBe(false);
  });

  it("any_org wins over a named organization the subject is not in", () => {
    const s = subject({ orgRoles: { a: ["organization-admin"] } });
    expect(can(s, "update", { type: "organization", anyOrg: true, orgId: "z" })).toBe(true);
  });

  it("organization ids named like Object.prototype members are not memberships", () => {
    const s = subject({ orgRoles: { org1: ["organization-admin"] } });
    for (const orgId of ["constructor", "__proto__", "toString", "valueOf", "hasOwnProperty", "isPrototypeOf", "__defineGetter__"]) {
      for (const [type, action] of PAIRS) {
        expect(can(s, action, { type, orgId }), `${orgId} ${type}:${action}`).toBe(SITE_GRANTS.member.includes(`${type}:${action}`));
      }
    }
  });

  it("…unless the subject really is a member of an organization with that id (an own key, as JSON.parse makes)", () => {
    const orgRoles = JSON.parse('{"__proto__": ["organization-admin"], "constructor": []}') as Record<string, string[]>;
    const s = subject({ orgRoles });
    expect(can(s, "update", { type: "organization", orgId: "__proto__" })).toBe(true);
    expect(can(s, "read", { type: "organization", orgId: "constructor" })).toBe(true);
    expect(can(s, "update", { type: "organization", orgId: "constructor" })).toBe(false);
    expect(can(s, "update", { type: "organization", orgId: "toString" })).toBe(false);
  });

  it("an organization role list full of unknown names is plain membership", () => {
    const s = subject({ orgRoles: { org1: ["admin", "", "*", "__proto__", "constructor", "organization-admin "] } });
    expect(can(s, "read", { type: "organization", orgId: "org1" })).toBe(true);
    expect(can(s, "update", { type: "organization", orgId: "org1" })).toBe(false);
  });
});

describe('system users (docs/authorization.md, "Site roles": service accounts send no custom notifications)', () => {
  it("cannot create notification messages at any level, whatever their roles", () => {
    for (const siteRoles of [[], ["owner"], ["user-admin", "auditor"]]) {
      const s = subject({ isSystem: true, siteRoles, orgRoles: { org1: ["organization-admin"] } });
      expect(can(s, "create", { type: "notification_message" })).toBe(false);
      expect(can(s, "create", { type: "notification_message", ownerId: "u1" })).toBe(false);
      expect(can(s, "create", { type: "notification_message", orgId: "org1" })).toBe(false);
      expect(can(s, "create", { type: "notification_message", anyOrg: true })).toBe(false);
    }
  });

  it("keep everything else their roles give", () => {
    const s = subject({ isSystem: true, siteRoles: ["owner"] });
    expect(can(s, "read", { type: "notification_message" })).toBe(true);
    expect(can(s, "delete", { type: "user" })).toBe(true);
    expect(can(subject({ isSystem: true }), "read", { type: "inbox_notification", ownerId: "u1" })).toBe(true);
  });
});

describe("scopes narrow, never widen", () => {
  it("`all` leaves the roles as they are", () => {
    for (const [type, action] of PAIRS) expect(scopeAllows(["all"], type, action)).toBe(true);
    expect(scopeAllows(["all"], "*", "read")).toBe(true);
  });

  it("no scopes: nothing, not even for an owner", () => {
    const s = subject({ siteRoles: ["owner"], scopes: [] });
    for (const [type, action] of PAIRS) expect(can(s, action, { type })).toBe(false);
  });

  it("`<type>:*` covers every action on that type and no other type", () => {
    const s = subject({ siteRoles: ["owner"], scopes: ["organization:*"] });
    for (const action of RESOURCE_ACTIONS.organization) expect(can(s, action, { type: "organization" })).toBe(true);
    expect(can(s, "read", { type: "organization_member" })).toBe(false);
    expect(can(s, "read", { type: "*" })).toBe(false);
  });

  it("a scope grants nothing the roles do not: a member's `user:*` key cannot delete users", () => {
    const s = subject({ scopes: ["user:*", "audit_log:read", "deployment_config:update"] });
    expect(can(s, "delete", { type: "user", ownerId: "u2" })).toBe(false);
    expect(can(s, "read", { type: "audit_log" })).toBe(false);
    expect(can(s, "update", { type: "deployment_config" })).toBe(false);
    expect(can(s, "read", { type: "user", ownerId: "u1" })).toBe(true);
  });

  it("a scoped key narrows ownership and organization grants too", () => {
    const s = subject({ orgRoles: { org1: ["organization-admin"] }, scopes: ["inbox_notification:read", "organization:read"] });
    expect(can(s, "read", { type: "inbox_notification", ownerId: "u1" })).toBe(true);
    expect(can(s, "update", { type: "inbox_notification", ownerId: "u1" })).toBe(false);
    expect(can(s, "create", { type: "api_key", ownerId: "u1" })).toBe(false);
    expect(can(s, "read", { type: "organization", orgId: "org1" })).toBe(true);
    expect(can(s, "update", { type: "organization", orgId: "org1" })).toBe(false);
  });

  it("malformed, padded, upper-case or wildcard scopes grant nothing", () => {
    const owner = (scopes: string[]) => subject({ siteRoles: ["owner"], scopes });
    for (const scope of [
      "ALL",
      "All",
      "all ",
      " all",
      "*",
      "*:*",
      "*:read",
      "user",
      "user:",
      ":read",
      "USER:READ",
      "user:read ",
      "user:*:read",
      "user:READ",
      "user:read,user:update",
      "__proto__",
      "constructor",
    ]) {
      const s = owner([scope]);
      expect(can(s, "read", { type: "user" }), scope).toBe(scope === "user:*" || scope === "user:read");
      expect(can(s, "delete", { type: "system" }), scope).toBe(false);
    }
  });

  it("the wildcard resource type needs the `all` scope", () => {
    for (const scope of EXTERNAL_SCOPES.filter((s) => s !== "all")) expect(scopeAllows([scope], "*", "read"), scope).toBe(false);
  });

  it("`system` is never offered as a scope", () => {
    // scopeAllows itself trusts the stored scopes (`system:*` would pass it): keys.ts refuses unknown ones at creation.
    expect(EXTERNAL_SCOPES.filter((s) => s.startsWith("system:"))).toEqual([]);
    for (const scope of ["system:*", "system:read", "system:delete"]) expect(isKnownScope(scope), scope).toBe(false);
    expect(EXTERNAL_SCOPES).toEqual([...EXTERNAL_SCOPES].sort());
  });
});

describe("the role tables themselves", () => {
  it("every permission names a resource type and actions the catalogue has for it (a typo would be a silent no-op)", () => {
    for (const def of [...Object.values(SITE_ROLES), ...Object.values(ORG_ROLES)]) {
      for (const p of [...def.site, ...def.org, ...def.user]) {
        if (p.type === "*") continue;
        expect(isResourceType(p.type), `${def.name}: ${p.type}`).toBe(true);
        for (const a of p.actions) if (a !== "*") expect(RESOURCE_ACTIONS[p.type] as readonly string[], `${def.name}: ${p.type}:${a}`).toContain(a);
      }
    }
  });

  it("organization roles have only organization-level permissions, site roles none", () => {
    for (const def of Object.values(ORG_ROLES)) expect([def.site, def.user]).toEqual([[], []]);
    for (const def of Object.values(SITE_ROLES)) expect(def.org).toEqual([]);
  });
});

describe("authorize: properties", () => {
  const roleName = fc.oneof(
    fc.constantFrom(...Object.keys(SITE_ROLES), ...Object.keys(ORG_ROLES)),
    fc.constantFrom(...NASTY_STRINGS),
    fc.string({ maxLength: 12 }),
  );
  const orgId = fc.oneof(fc.constantFrom("org1", "org2", "constructor", "__proto__", "toString"), fc.string({ maxLength: 8 }));
  const subjects = fc.record({
    id: fc.constantFrom("u1", "u2", "__proto__", ""),
    siteRoles: fc.array(roleName, { maxLength: 4 }),
    orgRoles: fc.dictionary(orgId, fc.array(roleName, { maxLength: 3 }), { maxKeys: 3 }),
    scopes: fc.oneof(fc.constant(["all"]), fc.array(fc.oneof(fc.constantFrom(...EXTERNAL_SCOPES), fc.string({ maxLength: 12 })), { maxLength: 4 })),
    isSystem: fc.boolean(),
  });
  const objects = fc.record(
    {
      type: fc.constantFrom<ResourceType | "*">("*", ...RESOURCE_TYPES),
      ownerId: fc.option(fc.constantFrom("u1", "u2", "__proto__", "", "constructor"), { nil: undefined }),
      orgId: fc.option(orgId, { nil: undefined }),
      anyOrg: fc.option(fc.boolean(), { nil: undefined }),
    },
    { requiredKeys: ["type"] },
  );
  const action = fc.constantFrom(...ACTIONS);

  it("never throws and always answers a boolean", () => {
    fc.assert(
      fc.property(subjects, action, objects, (s, a, o) => {
        expect(typeof authorize(s, a, o)).toBe("boolean");
      }),
      { numRuns: 2000 },
    );
  });

  it("scopes only narrow: whatever a scoped credential may do, the same subject with `all` may do", () => {
    fc.assert(
      fc.property(subjects, action, objects, (s, a, o) => {
        if (authorize(s, a, o)) expect(authorize({ ...s, scopes: ["all"] }, a, o)).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it("adding a site role never takes a permission away from a non-system subject", () => {
    fc.assert(
      fc.property(subjects, roleName, action, objects, (s, extra, a, o) => {
        const base = { ...s, isSystem: false };
        if (authorize(base, a, o)) expect(authorize({ ...base, siteRoles: [...base.siteRoles, extra] }, a, o)).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it("names that are no role change no decision", () => {
    const known = new Set([...Object.keys(SITE_ROLES), ...Object.keys(ORG_ROLES)]);
    const junk = fc.array(
      fc.oneof(fc.constantFrom(...NASTY_STRINGS), fc.string({ maxLength: 12 })).filter((n) => !known.has(n)),
      { minLength: 1, maxLength: 4 },
    );
    fc.assert(
      fc.property(subjects, junk, action, objects, (s, extra, a, o) => {
        const orgRoles = Object.fromEntries(Object.entries(s.orgRoles).map(([k, v]) => [k, [...v, ...extra]]));
        expect(authorize({ ...s, siteRoles: [...s.siteRoles, ...extra], orgRoles }, a, o)).toBe(authorize(s, a, o));
      }),
      { numRuns: 2000 },
    );
  });
});
