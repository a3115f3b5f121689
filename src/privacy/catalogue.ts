import { type SQL, sql } from "drizzle-orm";
import * as z from "zod";
import { boolean, type Columns, derived, integer, integerOrNull, json, text, textOrNull, withheld } from "./columns";

/**
 * Everything Herald keeps in D1 about a user, table by table (docs/privacy.md): which rows are theirs, how each
 * column appears in the export, and what erasure does to them. The export, the erasure's "records" step and the tests
 * read this one list, so a table or a column added without a decision here fails test/privacy/export.test.ts.
 */
export interface D1Section {
  /** The field of the export that holds these rows. */
  key: string;
  table: string;
  description: string;
  /** At most one row per user: exported as an object, or null. */
  single?: boolean;
  /** Which rows are the user's: each part is read in turn (each on an index of its own), in `order`. */
  parts: readonly ((userId: string) => SQL)[];
  /** Columns that order the rows and are unique together: the export pages on them. */
  order: readonly string[];
  columns: Columns;
  /**
   * What erasure does (docs/privacy.md, "Erasure"): `delete` the rows in the "records" step, or a step of its own
   * (`account`, `messages`, `audit`, `erasure`), or `keep` them, with the reason.
   */
  erasure: { delete: true } | { step: "account" | "messages" | "audit" | "erasure" } | { keep: string };
}

const own =
  (column = "user_id") =>
  (userId: string) =>
    sql`${sql.raw(column)} = ${userId}`;

const SECRET = "a secret, or what checks one: never shown";
const DERIVED = "a copy of other fields, derived for searching";

/** Audit entries whose resource is the user: those some other user (or no one: a refused sign-in) wrote about them. */
const AUDIT_ABOUT_USER = (userId: string) =>
  sql`resource_type IN ('user', 'notification_preference', 'notification_schedule') AND resource_id = ${userId} AND (user_id IS NULL OR user_id <> ${userId})`;
/** Audit entries about a token or a passkey of the user, written by someone else: they name the owner in `diff`. */
const AUDIT_ABOUT_USER_KEYS = (userId: string) =>
  sql`action IN ('create', 'delete') AND resource_type IN ('api_key', 'passkey') AND json_extract(diff, '$.owner') = ${userId} AND (user_id IS NULL OR user_id <> ${userId})`;

/**
 * Keys of an audit entry's `diff` that name or locate a person: removed from every entry about an erased user, which
 * keeps the action, the ids and the times (docs/privacy.md, "Erasure").
 */
export const AUDIT_PERSONAL_KEYS = ["email", "username", "name", "token_name", "timezone", "quiet_hours"] as const;

const auditColumns = (others: boolean): Columns => ({
  id: text,
  time: text,
  user_id: textOrNull,
  action: text,
  resource_type: text,
  resource_id: text,
  diff: json(z.record(z.string(), z.unknown())),
  ip: others ? withheld("the address of the person who acted, who is not this user") : text,
  request_id: text,
  user_agent: others ? withheld("the browser of the person who acted, who is not this user") : text,
  status_code: integer,
});

const origin = (url: string) => {
  try {
    return new URL(url).origin;
  } catch {
    return "";
  }
};

/** `api_keys` holds both sessions and API tokens: one column list, exported the same for both. */
const API_KEY_COLUMNS = {
  id: text,
  hashed_secret: withheld(SECRET),
  user_id: text,
  login_type: text,
  token_name: textOrNull,
  scopes: json(z.array(z.string())),
  lifetime_seconds: integer,
  expires_at: text,
  created_at: text,
  updated_at: text,
  last_used: text,
  auth_time: textOrNull,
  auth_methods: json(z.array(z.string())),
  user_agent: textOrNull,
  device: textOrNull,
  ip_prefix: textOrNull,
  country: textOrNull,
  city: textOrNull,
};

export const D1_SECTIONS = [
  {
    key: "account",
    table: "users",
    description: "The account itself.",
    single: true,
    parts: [own("id")],
    order: ["id"],
    columns: {
      id: text,
      email: text,
      username: text,
      name: text,
      hashed_password: withheld(SECRET),
      login_type: text,
      status: text,
      roles: json(z.array(z.string())),
      is_system: boolean,
      deleted: boolean,
      created_at: text,
      updated_at: text,
      last_seen_at: textOrNull,
      search_name: derived(DERIVED),
      search_email: derived(DERIVED),
      password_reset_required: boolean,
    },
    erasure: { step: "account" },
  },
  {
    key: "organization_memberships",
    table: "organization_members",
    description: "The organizations the user belongs to, with their roles there.",
    parts: [own()],
    order: ["organization_id"],
    columns: { user_id: text, organization_id: text, roles: json(z.array(z.string())), created_at: text, updated_at: text },
    erasure: { delete: true },
  },
  {
    key: "organizations",
    table: "organizations",
    description: "Those organizations.",
    parts: [(userId) => sql`id IN (SELECT organization_id FROM organization_members WHERE user_id = ${userId})`],
    order: ["id"],
    columns: { id: text, name: text, display_name: text, is_default: boolean, created_at: text, updated_at: text },
    erasure: { keep: "the organization belongs to the deployment; only the membership was the user's" },
  },
  {
    key: "sessions",
    table: "api_keys",
    description: "Login sessions, with where each was started.",
    parts: [(userId) => sql`user_id = ${userId} AND login_type <> 'token'`],
    order: ["id"],
    columns: API_KEY_COLUMNS,
    erasure: { delete: true },
  },
  {
    key: "api_tokens",
    table: "api_keys",
    description: "API tokens: names and scopes.",
    parts: [(userId) => sql`user_id = ${userId} AND login_type = 'token'`],
    order: ["id"],
    columns: API_KEY_COLUMNS,
    erasure: { delete: true },
  },
  {
    key: "external_identities",
    table: "user_links",
    description: "The OpenID Connect or GitHub identities the user signs in with.",
    parts: [own()],
    order: ["issuer", "subject"],
    columns: { issuer: text, subject: text, user_id: text, login_type: text, email: text, created_at: text },
    erasure: { delete: true },
  },
  {
    key: "login_conversions",
    table: "login_conversions",
    description: "Changes of sign-in method to a provider, started or done.",
    parts: [own()],
    order: ["state_hmac"],
    columns: { state_hmac: withheld(SECRET), user_id: text, to_type: text, expires_at: text, used_at: textOrNull, created_at: text },
    erasure: { delete: true },
  },
  {
    key: "devices",
    table: "user_devices",
    description: "The devices the user signed in from (browser, operating system, country), for new-device notices.",
    parts: [own()],
    order: ["device_key"],
    columns: { user_id: text, device_key: text, last_seen_at: text, last_notice_at: textOrNull },
    erasure: { delete: true },
  },
  {
    key: "not_me_reports",
    table: "not_me_uses",
    description: '"This wasn\'t me" links the user used.',
    parts: [own()],
    order: ["event_id"],
    columns: { event_id: text, user_id: text, used_at: text },
    erasure: { delete: true },
  },
  {
    key: "authenticator_app",
    table: "user_totp",
    description: "The authenticator app (TOTP), without its secret.",
    single: true,
    parts: [own()],
    order: ["user_id"],
    columns: { user_id: text, secret_sealed: withheld(SECRET), confirmed_at: textOrNull, last_step: integerOrNull, created_at: text },
    erasure: { delete: true },
  },
  {
    key: "recovery_codes",
    table: "recovery_codes",
    description: "Recovery codes: when each was made and used, never the code.",
    parts: [own()],
    order: ["code_hash"],
    columns: { user_id: text, code_hash: withheld(SECRET), used_at: textOrNull, created_at: text },
    erasure: { delete: true },
  },
  {
    key: "passkeys",
    table: "passkeys",
    description: "Passkeys: names, dates and flags.",
    parts: [own()],
    order: ["id"],
    columns: {
      id: text,
      user_id: text,
      credential_id: withheld("the authenticator's own handle for the key: material for the authenticator, not for a person"),
      public_key: withheld("the key the authenticator signs with: material for the authenticator, not for a person"),
      sign_count: integer,
      transports: json(z.array(z.string())),
      name: text,
      backup_eligible: boolean,
      backed_up: boolean,
      created_at: text,
      last_used_at: textOrNull,
      suspect_at: textOrNull,
    },
    erasure: { delete: true },
  },
  {
    key: "second_factor_sign_ins",
    table: "mfa_challenges",
    description: "Sign-ins waiting for their second factor (they live 5 minutes).",
    parts: [own()],
    order: ["id"],
    columns: {
      id: text,
      hashed_secret: withheld(SECRET),
      user_id: text,
      login_type: text,
      methods: json(z.array(z.string())),
      attempts: integer,
      redirect: textOrNull,
      expires_at: text,
      created_at: text,
    },
    erasure: { delete: true },
  },
  {
    key: "webauthn_challenges",
    table: "webauthn_challenges",
    description: "Passkey ceremonies in flight (they live 5 minutes).",
    parts: [own()],
    order: ["challenge_hash"],
    columns: { challenge_hash: withheld(SECRET), purpose: text, user_id: textOrNull, expires_at: text, created_at: text },
    erasure: { delete: true },
  },
  {
    key: "passcode",
    table: "one_time_passcodes",
    description: "A password-reset passcode in flight, without the code.",
    single: true,
    parts: [own()],
    order: ["user_id"],
    columns: { user_id: text, code_hmac: withheld(SECRET), expires_at: text, attempts: integer, created_at: text },
    erasure: { delete: true },
  },
  {
    key: "passcode_mails",
    table: "passcode_mails",
    description: "When passcode e-mails were sent (kept a day, for their limits).",
    parts: [own()],
    order: ["id"],
    columns: { id: text, user_id: text, sent_at: text },
    erasure: { delete: true },
  },
  {
    key: "notification_preferences",
    table: "notification_preferences",
    description: "Templates switched on or off.",
    parts: [own()],
    order: ["template_id"],
    columns: { user_id: text, template_id: text, disabled: boolean, updated_at: text },
    erasure: { delete: true },
  },
  {
    key: "channel_preferences",
    table: "channel_preferences",
    description: "Channels switched on or off, per template.",
    parts: [own()],
    order: ["template_id", "channel"],
    columns: { user_id: text, template_id: text, channel: text, enabled: boolean, updated_at: text },
    erasure: { delete: true },
  },
  {
    key: "schedule",
    table: "notification_schedules",
    description: "Time zone, quiet hours and digest.",
    single: true,
    parts: [own()],
    order: ["user_id"],
    columns: {
      user_id: text,
      timezone: text,
      quiet_hours: json(z.array(z.strictObject({ days: z.array(z.string()), start: z.string(), end: z.string() }))),
      digest: text,
      updated_at: text,
    },
    erasure: { delete: true },
  },
  {
    key: "push_subscriptions",
    table: "push_subscriptions",
    description: "Browsers subscribed to Web Push: names, dates and the push service's origin, never the endpoint or keys.",
    parts: [own()],
    order: ["id"],
    columns: {
      id: text,
      user_id: text,
      name: text,
      endpoint: { kind: "text", as: "endpoint_origin", from: origin },
      p256dh: withheld("the browser's encryption key for push messages"),
      auth: withheld(SECRET),
      created_at: text,
    },
    erasure: { delete: true },
  },
  {
    key: "notification_targets",
    table: "notification_targets",
    description: "The user's own webhooks and chat channels: kind, name and origin, never the URL or secret.",
    parts: [own()],
    order: ["id"],
    columns: {
      id: text,
      user_id: text,
      kind: text,
      name: text,
      url_sealed: withheld("the URL is itself a credential: whoever holds it can post; its origin is `url_origin`"),
      url_origin: text,
      secret_sealed: withheld(SECRET),
      code_hash: withheld(SECRET),
      failed_attempts: integer,
      verified_at: textOrNull,
      created_at: text,
    },
    erasure: { delete: true },
  },
  {
    key: "message_log",
    table: "notification_messages",
    description: "The message log: every copy of a notification to the user, by method, and what became of it.",
    parts: [own()],
    order: ["created_at", "id"],
    columns: {
      id: text,
      notification_id: text,
      template_id: text,
      user_id: text,
      method: text,
      destination: textOrNull,
      status: text,
      status_reason: textOrNull,
      payload: {
        kind: "json",
        // Secret labels travel sealed and never leave it (docs/api.md, "Notification delivery").
        from: (stored) => {
          const { sealed_labels: _sealed, ...payload } = JSON.parse(stored) as Record<string, unknown>;
          return JSON.stringify(payload);
        },
        schema: z.record(z.string(), z.unknown()),
      },
      targets: json(z.array(z.string())),
      created_by: text,
      attempts: integer,
      next_retry_after: textOrNull,
      leased_until: textOrNull,
      created_at: text,
      updated_at: text,
      sent_at: textOrNull,
      send_if_unread: boolean,
    },
    erasure: { step: "messages" },
  },
  {
    key: "broadcasts_sent",
    table: "broadcasts",
    description: "Broadcasts the user sent.",
    parts: [own("created_by")],
    order: ["created_at", "id"],
    columns: {
      id: text,
      created_by: text,
      created_at: text,
      audience: json(z.record(z.string(), z.unknown())),
      title: text,
      message: text,
      targets: json(z.array(z.string())),
      email_when_unread_after_ms: integer,
      recipients: integer,
      completed_at: textOrNull,
    },
    erasure: { keep: "what its recipients received: the text stays with them, and the sender is only an id" },
  },
  {
    key: "broadcast_requests",
    table: "broadcast_idempotency_keys",
    description: "The Idempotency-Key of each broadcast request (kept 24 hours).",
    parts: [own("created_by")],
    order: ["key"],
    columns: { created_by: text, key: text, broadcast_id: text, recipients: integer, created_at: text },
    erasure: { delete: true },
  },
  {
    key: "audit_log",
    table: "audit_logs",
    description: "Audit entries of what the user did.",
    parts: [own()],
    order: ["time", "id"],
    columns: auditColumns(false),
    erasure: { step: "audit" },
  },
  {
    key: "audit_log_about",
    table: "audit_logs",
    description: "Audit entries of what others did to the user's account, tokens and passkeys.",
    parts: [AUDIT_ABOUT_USER, AUDIT_ABOUT_USER_KEYS],
    order: ["time", "id"],
    columns: auditColumns(true),
    erasure: { step: "audit" },
  },
  {
    key: "erasure",
    table: "user_erasures",
    description: "An erasure in progress: only a deleted account has one, and a deleted account is no longer exported, so null.",
    single: true,
    parts: [own()],
    order: ["user_id"],
    columns: { user_id: text, step: text, requested_at: text, updated_at: text, failures: integer },
    erasure: { step: "erasure" },
  },
] as const satisfies readonly D1Section[];

/** D1 tables that hold nothing about any one user, and why (docs/privacy.md, "What the export leaves out"). */
export const D1_EXCLUDED: Readonly<Record<string, string>> = {
  notification_templates: "the deployment's templates, about no one",
  site_config: "the deployment's settings (the notifier's pause, where its inboxes live)",
  broadcast_shards: "a broadcast's progress through its audience: user ids as cursors, nothing else",
  broadcast_batches: "a broadcast's delivery counts",
  d1_migrations: "which schema migrations ran",
};
