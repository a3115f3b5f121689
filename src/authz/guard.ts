import type { Context } from "hono";
import { forbidden, Messages } from "../http/errors";
import type { AppEnv } from "../http/types";
import type { Action, ResourceType } from "./catalog";
import { type AuthzObject, authorize, scopeAllows } from "./evaluate";
import { AuthzMessages } from "./messages";

/** Whether the authenticated caller may do `action` on `object`: every endpoint asks through here. */
export function can(c: Context<AppEnv>, action: Action, object: AuthzObject): boolean {
  return authorize(c.get("auth").subject, action, object);
}

/**
 * Throws 403 unless the caller may do `action` on `object`. When the credential's scopes leave the action out, the
 * answer says so, whatever the roles: the holder of a narrowed token learns which scope it lacks, not that it lacks a
 * role it may well have (docs/authorization.md, "API token scopes").
 */
export function assertCan(c: Context<AppEnv>, action: Action, object: AuthzObject, message?: string): void {
  if (can(c, action, object)) return;
  if (object.type !== "*" && !scopeAllows(c.get("auth").key.scopes, object.type, action)) {
    throw forbidden(Messages.forbidden, AuthzMessages.scopeMissing(object.type, action));
  }
  throw forbidden(Messages.forbidden, message ?? AuthzMessages.noPermission(action, object.type));
}

/**
 * Throws 403 unless the caller's credential carries a scope for `action` on `type`. For endpoints every signed-in
 * user may use (their roles need no grant), so that a narrowed API token still reaches only what its scopes name.
 */
export function assertScope(c: Context<AppEnv>, type: ResourceType, action: Action): void {
  if (!scopeAllows(c.get("auth").key.scopes, type, action)) {
    throw forbidden(Messages.forbidden, AuthzMessages.scopeMissing(type, action));
  }
}
