/**
 * The `description` of an audit entry (docs/security.md, "The audit log"): one short sentence a person reads, made
 * from the action, the resource and the values the entry's diff keeps. Every action Herald writes has its own
 * sentence; any other (an action added later, an entry of an older version) reads "alice did some_action on
 * resource_type id". Only names and counts from the diff are quoted, and the diff never holds a secret.
 */
export interface DescribedEntry {
  action: string;
  resourceType: string;
  resourceId: string;
  diff: Record<string, unknown>;
  /** The acting user's id and name; a null name when the entry has no actor or it no longer resolves. */
  userId: string | null;
  actor: string | null;
  /** The name of the user the entry is about, when its resource is a user that resolves. */
  target: string | null;
}

const text = (value: unknown): string | undefined => (typeof value === "string" && value !== "" ? value : undefined);
const quote = (value: string) => `"${value}"`;

/** The new value of a `{ old, new }` pair in a diff, or the value itself. */
function newValue(value: unknown): unknown {
  return value !== null && typeof value === "object" && "new" in value ? (value as { new: unknown }).new : value;
}

/** "2 sessions", "1 API token"; undefined for what is not a count. */
const count = (value: unknown, noun: string) => (typeof value === "number" ? `${value} ${noun}${value === 1 ? "" : "s"}` : undefined);

const TARGET_KINDS: Record<string, string> = {
  webhook: "a webhook",
  slack: "a Slack channel",
  teams: "a Microsoft Teams channel",
  discord: "a Discord channel",
};
const LOGIN_TYPES: Record<string, string> = { password: "a password", oidc: "OpenID Connect", github: "GitHub", none: "no sign-in" };
const loginType = (value: unknown) => LOGIN_TYPES[String(value)] ?? String(value);
const FACTORS: Record<string, string> = {
  totp: "an authenticator app",
  recovery_code: "a recovery code",
  passkey: "a passkey",
  password: "their password",
};

export function describeEntry(entry: DescribedEntry): string {
  const actor = entry.actor ?? (entry.userId === null ? "Someone" : "An unknown user");
  const self = entry.resourceType === "user" && entry.resourceId === entry.userId;
  /** The user an entry is about: "their" own, or the one named. */
  const whose = self ? "their" : `${entry.target ?? "a user"}'s`;
  const user = self ? "themself" : (entry.target ?? "a user");
  const d = entry.diff;
  switch (`${entry.action} ${entry.resourceType}`) {
    case "login api_key": {
      const first = d.method === "passkey" ? "a passkey" : loginType(d.login_type ?? "password");
      const second = text(d.second_factor) ? ` and ${FACTORS[String(d.second_factor)] ?? String(d.second_factor)}` : "";
      return `${actor} signed in with ${first}${second}`;
    }
    case "logout api_key":
      return `${actor} signed out`;
    case "step_up api_key":
      return `${actor} confirmed it was them${text(d.method) ? ` with ${FACTORS[String(d.method)] ?? String(d.method)}` : ""}`;
    case "create api_key":
      return `${actor} created API token ${quote(text(d.token_name) ?? entry.resourceId)}`;
    case "delete api_key":
      return `${actor} deleted API token ${entry.resourceId}`;
    case "create_first_user user":
      return `${actor} set up Herald as its first owner`;
    case "signup user":
      return `${actor} signed up with ${loginType(d.login_type)}`;
    case "create user":
      return `${actor} created user ${quote(text(d.username) ?? entry.target ?? entry.resourceId)}`;
    case "delete user":
      return `${actor} deleted user ${quote(text(d.username) ?? entry.target ?? entry.resourceId)}`;
    case "export user":
      return `${actor} exported ${whose} data`;
    case "update_roles user": {
      const roles = newValue(d.roles);
      const list = Array.isArray(roles) ? (roles.length > 0 ? roles.join(", ") : "none") : undefined;
      return `${actor} changed ${whose} site roles${list ? ` to ${list}` : ""}`;
    }
    case "suspend user":
      return `${actor} suspended ${user}`;
    case "activate user":
      return `${actor} activated ${user}`;
    case "change_password user":
      return `${actor} changed ${whose} password`;
    case "reset_password user":
      return `${actor} reset their password with a one-time passcode`;
    case "end_sessions user":
      return `${actor} ended ${whose} sessions${d.except_current === true ? " except the current one" : ""}`;
    case "start_convert_login user":
      return `${actor} started changing their sign-in to ${loginType(d.to_type)}`;
    case "convert_login user":
      return `${actor} changed their sign-in to ${loginType(newValue(d.login_type))}`;
    case "report_not_me user": {
      const ended = [count(d.revoked_sessions, "session"), count(d.revoked_tokens, "API token")].filter(Boolean).join(" and ");
      return `${actor} reported that a change to their account was not them${ended ? `; ${ended} ended` : ""}`;
    }
    case "login_second_factor_asked user":
      return `${actor} gave the right password and was asked for a second factor`;
    case "login_second_factor_failed user":
      return `${actor} failed the second factor of a sign-in`;
    case "begin_totp user":
      return `${actor} began adding an authenticator app`;
    case "enable_totp user":
      return `${actor} turned on an authenticator app`;
    case "disable_totp user":
      return `${actor} removed ${whose} authenticator app`;
    case "regenerate_recovery_codes user":
      return `${actor} made new recovery codes for ${self ? "themself" : user}`;
    case "reset_mfa user":
      return `${actor} removed ${whose} second factors`;
    case "create passkey":
      return `${actor} added passkey ${quote(text(d.name) ?? entry.resourceId)}`;
    case "delete passkey":
      return `${actor} removed passkey ${quote(text(d.name) ?? entry.resourceId)}`;
    case "suspect passkey":
      return `A passkey of ${entry.actor ?? "an unknown user"} was refused and set aside: its signature counter went backwards`;
    case "create push_subscription":
      return `${actor} turned on push notifications in ${quote(text(d.name) ?? entry.resourceId)}`;
    case "update push_subscription":
      return `${actor} renewed the push subscription of ${quote(text(d.name) ?? entry.resourceId)}`;
    case "delete push_subscription":
      return `${actor} turned off push notifications in ${quote(text(d.name) ?? entry.resourceId)}`;
    case "expire push_subscription":
      return `The push service ended the subscription of ${quote(text(d.name) ?? entry.resourceId)}, so Herald removed it`;
    case "update deployment_config":
      if (entry.resourceId === "notifier_paused")
        return `${actor} ${newValue(d.notifier_paused) === true ? "paused" : "resumed"} notification delivery`;
      return `${actor} changed the setting ${entry.resourceId}`;
    case "update notification_template":
      return `${actor} changed notification template ${entry.resourceId}`;
    case "update notification_preference":
      return `${actor} changed ${entry.resourceId === entry.userId ? "their" : `${entry.resourceId}'s`} notification preferences`;
    case "update notification_schedule":
      return `${actor} changed ${entry.resourceId === entry.userId ? "their" : `${entry.resourceId}'s`} quiet hours and digest`;
    case "create notification_target":
      return `${actor} added ${TARGET_KINDS[String(d.kind)] ?? "a notification target"} ${quote(text(d.name) ?? entry.resourceId)}`;
    case "verify notification_target":
      return `${actor} verified notification target ${quote(text(d.name) ?? entry.resourceId)}`;
    case "verify_failed notification_target":
      return `${actor} entered an incorrect code for notification target ${quote(text(d.name) ?? entry.resourceId)}`;
    case "delete notification_target":
      return d.reason === "too many incorrect codes"
        ? `Notification target ${quote(text(d.name) ?? entry.resourceId)} of ${entry.actor ?? "an unknown user"} was removed after too many incorrect codes`
        : `${actor} removed notification target ${quote(text(d.name) ?? entry.resourceId)}`;
    case "create notification_broadcast":
      return `${actor} sent a broadcast${typeof d.recipients === "number" ? ` to ${d.recipients} ${d.recipients === 1 ? "person" : "people"}` : ""}`;
  }
  return `${actor} did ${entry.action} on ${entry.resourceType.replace(/_/g, " ")} ${entry.resourceId}`;
}
