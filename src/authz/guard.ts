import type { Context } from "hono";
import { forbidden } from "../http/errors";
import type { AppEnv } from "../http/types";
import type { Action } from "./catalog";
import { authorize, type AuthzObject } from "./evaluate";

/** Whether the authenticated caller may do `action` on `object`: every endpoint asks through here. */
export function can(c: Context<AppEnv>, action: Action, object: AuthzObject): boolean {
  return authorize(c.var.auth.subject, action, object);
}

/** Throws 403 unless the caller may do `action` on `object`. */
export function assertCan(c: Context<AppEnv>, action: Action, object: AuthzObject, message?: string): void {
  if (!can(c, action, object)) {
    throw forbidden("Forbidden.", message ?? `You do not have permission to ${action} this ${object.type}.`);
  }
}
