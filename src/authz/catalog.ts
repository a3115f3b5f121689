/**
 * The vocabulary of docs/authorization.md: actions, resource types and which actions make sense on each type. The scope catalogue
 * (`GET /auth/scopes`) and the role table are both derived from this, so a scope can only name something a check can ask about.
 */
export const ACTIONS = ["create", "read", "update", "delete", "read_personal", "update_personal", "assign", "unassign"] as const;
export type Action = (typeof ACTIONS)[number];

const crud: readonly Action[] = ["create", "read", "update", "delete"];

export const RESOURCE_ACTIONS = {
  user: [...crud, "read_personal", "update_personal"],
  api_key: crud,
  assign_role: ["assign", "unassign", "read"],
  inbox_notification: crud,
  notification_preference: ["read", "update"],
  notification_message: crud,
  notification_template: ["read", "update"],
  /** Broadcasts (docs/broadcasts.md): owners and user admins send them and follow their progress. */
  notification_broadcast: ["create", "read"],
  /** A user's own webhook, Slack, Teams or Discord target (docs/targets.md); `update` is entering its verification code. */
  notification_target: crud,
  deployment_config: ["read", "update"],
  organization: crud,
  organization_member: crud,
  audit_log: ["create", "read"],
  system: crud,
} as const satisfies Record<string, readonly Action[]>;

export type ResourceType = keyof typeof RESOURCE_ACTIONS;
export const RESOURCE_TYPES = Object.keys(RESOURCE_ACTIONS) as ResourceType[];

export function isAction(value: string): value is Action {
  return (ACTIONS as readonly string[]).includes(value);
}

export function isResourceType(value: string): value is ResourceType {
  return Object.hasOwn(RESOURCE_ACTIONS, value);
}

/** Resource types an API key may be narrowed to. `system` is internal and never granted through a scope. */
const SCOPABLE: readonly ResourceType[] = RESOURCE_TYPES.filter((t) => t !== "system");

/** The scope catalogue (`GET /auth/scopes`): `all`, plus `<resource>:<action>` and `<resource>:*` for every scopable resource — sorted. */
export const EXTERNAL_SCOPES: readonly string[] = [
  "all",
  ...SCOPABLE.flatMap((type) => [`${type}:*`, ...RESOURCE_ACTIONS[type].map((a) => `${type}:${a}`)]),
].sort();

export function isKnownScope(scope: string): boolean {
  return EXTERNAL_SCOPES.includes(scope);
}
