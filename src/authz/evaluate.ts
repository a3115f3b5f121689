import type { Action, ResourceType } from "./catalog";
import { isOrgRole, isSiteRole, ORG_ROLES, type Permission, type RoleDefinition, SITE_ROLES, SYSTEM_USER_RESTRICTIONS } from "./roles";

/** Who is asking: their roles, their organizations' roles and (for API keys) the key's scopes. */
export interface Subject {
  id: string;
  /** Stored site roles; `member` is implied. */
  siteRoles: readonly string[];
  /** Organization id → stored organization roles; membership itself implies `organization-member`. */
  orgRoles: Readonly<Record<string, readonly string[]>>;
  /** Scopes of the credential in use; `all` for login sessions. */
  scopes: readonly string[];
  isSystem: boolean;
}

/** What is acted upon. `ownerId` is the user who owns it; `orgId` the organization it lives in. */
export interface AuthzObject {
  type: ResourceType | "*";
  ownerId?: string | undefined;
  orgId?: string | undefined;
  /** Passes when the subject holds the permission in at least one of its organizations. */
  anyOrg?: boolean | undefined;
}

type Decision = "allow" | "deny" | undefined;

function decide(permissions: readonly Permission[], type: ResourceType | "*", action: Action): Decision {
  let allowed = false;
  for (const p of permissions) {
    if (p.type !== "*" && p.type !== type) continue;
    if (!p.actions.includes("*") && !p.actions.includes(action)) continue;
    if (p.negate) return "deny";
    allowed = true;
  }
  return allowed ? "allow" : undefined;
}

function roleDefinitions(names: readonly string[], implicit: RoleDefinition, known: (n: string) => RoleDefinition | undefined) {
  const defs: RoleDefinition[] = [implicit];
  for (const name of names) {
    const def = known(name);
    if (def && def !== implicit) defs.push(def);
  }
  return defs;
}

function siteDefinitions(subject: Subject): RoleDefinition[] {
  return roleDefinitions(subject.siteRoles, SITE_ROLES.member, (n) => (isSiteRole(n) ? SITE_ROLES[n] : undefined));
}

function orgDefinitions(roles: readonly string[]): RoleDefinition[] {
  return roleDefinitions(roles, ORG_ROLES["organization-member"], (n) => (isOrgRole(n) ? ORG_ROLES[n] : undefined));
}

/** A key's effective permission is its roles ∩ its scopes (docs/authorization.md, API token scopes). */
export function scopeAllows(scopes: readonly string[], type: ResourceType | "*", action: Action): boolean {
  if (scopes.includes("all")) return true;
  if (type === "*") return false;
  return scopes.includes(`${type}:*`) || scopes.includes(`${type}:${action}`);
}

/**
 * docs/authorization.md: the site level is consulted first, then the organization, then the user (ownership) level. A deny at a
 * level ends the walk — it wins over anything a lower level would allow.
 */
export function authorize(subject: Subject, action: Action, object: AuthzObject): boolean {
  if (!scopeAllows(subject.scopes, object.type, action)) return false;

  const sitePermissions = siteDefinitions(subject).flatMap((d) => d.site);
  if (subject.isSystem) sitePermissions.push(...SYSTEM_USER_RESTRICTIONS);
  const site = decide(sitePermissions, object.type, action);
  if (site) return site === "allow";

  if (object.anyOrg) {
    for (const roles of Object.values(subject.orgRoles)) {
      if (
        decide(
          orgDefinitions(roles).flatMap((d) => d.org),
          object.type,
          action,
        ) === "allow"
      )
        return true;
    }
  } else if (object.orgId !== undefined) {
    // Own keys only: the id comes from the request, and "constructor" or "__proto__" must not find Object's.
    const roles = Object.hasOwn(subject.orgRoles, object.orgId) ? subject.orgRoles[object.orgId] : undefined;
    if (roles === undefined) return false; // not a member: nothing below the site level applies
    const org = decide(
      orgDefinitions(roles).flatMap((d) => d.org),
      object.type,
      action,
    );
    if (org) return org === "allow";
  }

  if (object.ownerId !== undefined && object.ownerId === subject.id) {
    const user = decide(
      siteDefinitions(subject).flatMap((d) => d.user),
      object.type,
      action,
    );
    return user === "allow";
  }
  return false;
}
