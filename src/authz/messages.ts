import type { Action, ResourceType } from "./catalog";

/**
 * The details of authorization refusals (403 `Forbidden.`, src/http/errors.ts `Messages.forbidden`). Clients compare
 * these strings, so they are written once here and imported by the code that throws them and the tests; docs/api.md
 * (Conventions) describes the error shape they go in.
 */
export const AuthzMessages = {
  noPermission: (action: Action, type: ResourceType | "*") => `You do not have permission to ${action} this ${type}.`,
  scopeMissing: (type: ResourceType, action: Action) => `This credential's scopes do not include ${type}:${action}.`,
} as const;
