import type { Action, ResourceType } from "./catalog";

/** One row of a role's permission table. `*` matches any resource type or action; `negate` denies. */
export interface Permission {
  type: ResourceType | "*";
  actions: readonly (Action | "*")[];
  negate?: boolean;
}

/** Where a role's permissions apply: everywhere, inside one organization, or on objects the subject owns. */
export interface RoleDefinition {
  name: string;
  displayName: string;
  site: readonly Permission[];
  org: readonly Permission[];
  user: readonly Permission[];
}

const all = ["*"] as const;

/** Site roles of docs/authorization.md. `member` is implicit for every user. */
export const SITE_ROLES = {
  owner: {
    name: "owner",
    displayName: "Owner",
    site: [{ type: "*", actions: all }],
    org: [],
    user: [],
  },
  "user-admin": {
    name: "user-admin",
    displayName: "User Admin",
    site: [
      { type: "user", actions: ["create", "read", "update", "delete", "read_personal", "update_personal"] },
      // Limited to member-level roles by the role-change rules (only owners grant other site roles).
      { type: "assign_role", actions: ["assign", "unassign", "read"] },
      { type: "notification_template", actions: ["read"] },
      { type: "notification_broadcast", actions: ["create", "read"] },
      { type: "organization", actions: ["read"] },
      { type: "organization_member", actions: all },
    ],
    org: [],
    user: [],
  },
  auditor: {
    name: "auditor",
    displayName: "Auditor",
    site: [
      { type: "user", actions: ["read"] },
      { type: "assign_role", actions: ["read"] },
      { type: "notification_template", actions: ["read"] },
      { type: "deployment_config", actions: ["read"] },
      { type: "organization", actions: ["read"] },
      { type: "organization_member", actions: ["read"] },
      { type: "audit_log", actions: ["read"] },
    ],
    org: [],
    user: [],
  },
  member: {
    name: "member",
    displayName: "Member",
    site: [
      { type: "assign_role", actions: ["read"] },
      { type: "notification_template", actions: ["read"] },
    ],
    org: [],
    user: [
      { type: "user", actions: ["read", "read_personal", "update_personal"] },
      { type: "api_key", actions: all },
      { type: "inbox_notification", actions: ["read", "update"] },
      { type: "notification_preference", actions: ["read", "update"] },
      { type: "notification_message", actions: ["create"] },
      { type: "notification_target", actions: all },
    ],
  },
} as const satisfies Record<string, RoleDefinition>;

/**
 * Applied to service accounts on top of their roles: a site-level deny, so no role can give a system user what
 * docs/authorization.md withholds from it (sending custom notifications).
 */
export const SYSTEM_USER_RESTRICTIONS: readonly Permission[] = [{ type: "notification_message", actions: ["create"], negate: true }];

/** Organization roles of docs/authorization.md. `organization-member` is implicit for every member of the organization. */
export const ORG_ROLES = {
  "organization-admin": {
    name: "organization-admin",
    displayName: "Organization Admin",
    site: [],
    org: [
      { type: "organization", actions: ["read", "update"] },
      { type: "organization_member", actions: all },
      { type: "assign_role", actions: ["assign", "unassign", "read"] },
      { type: "audit_log", actions: ["read"] },
    ],
    user: [],
  },
  "organization-user-admin": {
    name: "organization-user-admin",
    displayName: "Organization User Admin",
    site: [],
    org: [
      { type: "organization", actions: ["read"] },
      { type: "organization_member", actions: all },
      { type: "assign_role", actions: ["assign", "unassign", "read"] },
    ],
    user: [],
  },
  "organization-auditor": {
    name: "organization-auditor",
    displayName: "Organization Auditor",
    site: [],
    org: [
      { type: "organization", actions: ["read"] },
      { type: "organization_member", actions: ["read"] },
      { type: "audit_log", actions: ["read"] },
    ],
    user: [],
  },
  "organization-member": {
    name: "organization-member",
    displayName: "Organization Member",
    site: [],
    org: [
      { type: "organization", actions: ["read"] },
      { type: "organization_member", actions: ["read"] },
    ],
    user: [],
  },
} as const satisfies Record<string, RoleDefinition>;

export type SiteRoleName = keyof typeof SITE_ROLES;
export type OrgRoleName = keyof typeof ORG_ROLES;

/** Site roles that can be stored on a user (`member` is implicit and never stored). */
export const ASSIGNABLE_SITE_ROLES = ["owner", "user-admin", "auditor"] as const;

export function isSiteRole(name: string): name is SiteRoleName {
  return Object.hasOwn(SITE_ROLES, name);
}

export function isOrgRole(name: string): name is OrgRoleName {
  return Object.hasOwn(ORG_ROLES, name);
}
