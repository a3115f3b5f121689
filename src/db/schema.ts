import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/** Timestamps are stored as RFC 3339 UTC strings with milliseconds (docs/api.md, Conventions), so they sort as text. */
const timestamp = (name: string) => text(name);

export const users = sqliteTable(
  "users",
  {
    id: text("id").primaryKey(),
    email: text("email").notNull(),
    username: text("username").notNull(),
    name: text("name").notNull().default(""),
    /** PHC string (argon2id, or an imported Coder pbkdf2-sha256 hash); null for users without a password. */
    hashedPassword: text("hashed_password"),
    loginType: text("login_type", { enum: ["password", "oidc", "github", "none"] }).notNull(),
    status: text("status", { enum: ["active", "suspended"] })
      .notNull()
      .default("active"),
    /** Site roles besides the implicit `member` (JSON array). */
    roles: text("roles", { mode: "json" }).$type<string[]>().notNull().default(sql`'[]'`),
    /** Service accounts: no password sign-in, no custom notifications (docs/authorization.md). */
    isSystem: integer("is_system", { mode: "boolean" }).notNull().default(false),
    /**
     * A deleted account's row stays for what refers to it, its e-mail, username and name replaced (docs/privacy.md,
     * "Erasure"); they can be used again at once.
     */
    deleted: integer("deleted", { mode: "boolean" }).notNull().default(false),
    createdAt: timestamp("created_at").notNull(),
    updatedAt: timestamp("updated_at").notNull(),
    lastSeenAt: timestamp("last_seen_at"),
    /**
     * The name and e-mail as user search compares them (`foldForSearch`, src/users/search.ts): SQLite's lower() folds
     * ASCII only. Written with every name and e-mail; null on rows from before they existed until the cron's
     * backfill reaches them (docs/api.md, Searching users).
     */
    searchName: text("search_name"),
    searchEmail: text("search_email"),
    /**
     * Set by "This wasn't me" (docs/security.md): password sign-in answers `Your password must be reset.` until a
     * passcode reset completes.
     */
    passwordResetRequired: integer("password_reset_required", { mode: "boolean" }).notNull().default(false),
  },
  (t) => [
    uniqueIndex("users_email_live").on(sql`lower(${t.email})`).where(sql`${t.deleted} = 0 AND ${t.email} <> ''`),
    uniqueIndex("users_username_live").on(sql`lower(${t.username})`).where(sql`${t.deleted} = 0`),
    // Only the rows the backfill has yet to reach: empty once it is done, so its check each minute reads nothing.
    index("users_search_pending").on(t.id).where(sql`${t.searchName} IS NULL OR ${t.searchEmail} IS NULL`),
  ],
);

export const organizations = sqliteTable("organizations", {
  id: text("id").primaryKey(),
  name: text("name").notNull().unique(),
  displayName: text("display_name").notNull(),
  isDefault: integer("is_default", { mode: "boolean" }).notNull().default(false),
  createdAt: timestamp("created_at").notNull(),
  updatedAt: timestamp("updated_at").notNull(),
});

export const organizationMembers = sqliteTable(
  "organization_members",
  {
    userId: text("user_id")
      .notNull()
      .references(() => users.id),
    organizationId: text("organization_id")
      .notNull()
      .references(() => organizations.id),
    /** Organization roles besides the implicit `organization-member` (JSON array). */
    roles: text("roles", { mode: "json" }).$type<string[]>().notNull().default(sql`'[]'`),
    createdAt: timestamp("created_at").notNull(),
    updatedAt: timestamp("updated_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.userId, t.organizationId] }), index("org_members_org").on(t.organizationId)],
);

export const apiKeys = sqliteTable(
  "api_keys",
  {
    /** The public 10-character half of the token. */
    id: text("id").primaryKey(),
    /** Hex SHA-256 of the 22-character secret half; the secret itself is never stored. */
    hashedSecret: text("hashed_secret").notNull(),
    userId: text("user_id")
      .notNull()
      .references(() => users.id),
    /** `token` for named API tokens; otherwise the login method that created the session. */
    loginType: text("login_type", { enum: ["password", "oidc", "github", "token"] }).notNull(),
    tokenName: text("token_name"),
    scopes: text("scopes", { mode: "json" }).$type<string[]>().notNull().default(sql`'["all"]'`),
    lifetimeSeconds: integer("lifetime_seconds").notNull(),
    expiresAt: timestamp("expires_at").notNull(),
    createdAt: timestamp("created_at").notNull(),
    updatedAt: timestamp("updated_at").notNull(),
    lastUsed: timestamp("last_used").notNull(),
    /**
     * A login session's last authentication: when the user last proved who they are (sign-in or step-up), checked by
     * the actions that need a recent one (docs/second-factor.md, "Step-up"). Null for API tokens, which their scopes
     * govern instead.
     */
    authTime: timestamp("auth_time"),
    /** How the session's user proved it, in order of first use: `pwd`, `otp`, `passkey`, `oidc`, `github` (JSON array). */
    authMethods: text("auth_methods", { mode: "json" }).$type<AuthMethod[]>().notNull().default(sql`'[]'`),
    /**
     * Where a login session was started (docs/security.md, "Devices"): the User-Agent as sent, what it names
     * ("Chrome 131 on macOS"), the client address cut to its /24 or /48, and Cloudflare's country and city. Null
     * for API tokens, for sessions from before they were recorded, and for what the request did not carry.
     */
    userAgent: text("user_agent"),
    device: text("device"),
    ipPrefix: text("ip_prefix"),
    country: text("country"),
    city: text("city"),
  },
  (t) => [
    index("api_keys_user").on(t.userId),
    uniqueIndex("api_keys_user_token_name").on(t.userId, t.tokenName).where(sql`${t.tokenName} IS NOT NULL`),
  ],
);

/** What a login session's user proved to start it or to step up (RFC 8176's names): a password, a one-time code, a passkey, a provider. */
export const AUTH_METHODS = ["pwd", "otp", "passkey", "oidc", "github"] as const;
export type AuthMethod = (typeof AUTH_METHODS)[number];

export const auditLogs = sqliteTable(
  "audit_logs",
  {
    id: text("id").primaryKey(),
    time: timestamp("time").notNull(),
    /** The acting user; null for unauthenticated actions such as a failed login. */
    userId: text("user_id"),
    action: text("action").notNull(),
    resourceType: text("resource_type").notNull(),
    resourceId: text("resource_id").notNull(),
    /** JSON object describing what changed; never contains secrets or hashes. */
    diff: text("diff", { mode: "json" }).$type<Record<string, unknown>>().notNull().default(sql`'{}'`),
    ip: text("ip").notNull().default(""),
    requestId: text("request_id").notNull().default(""),
    /** The request's User-Agent, cut to 512 characters (docs/security.md, "The audit log"). */
    userAgent: text("user_agent").notNull().default(""),
    /** The HTTP status the action answered: 2xx for what it changed, 4xx for a refusal worth keeping (a failed sign-in). */
    statusCode: integer("status_code").notNull().default(200),
  },
  (t) => [
    index("audit_logs_time").on(t.time),
    index("audit_logs_resource").on(t.resourceType, t.resourceId),
    index("audit_logs_user").on(t.userId, t.time),
    index("audit_logs_action").on(t.action, t.time),
    // `ip:` in the audit log's search (docs/security.md, "The audit log"): without it, a scan of every entry.
    index("audit_logs_ip").on(t.ip, t.time),
    // The smallest index of the table, so the log's unfiltered count (an exact count(*)) reads the fewest pages.
    index("audit_logs_status").on(t.statusCode),
  ],
);

/**
 * The devices each user signed in from (docs/security.md, "Devices"): browser family, operating system and country,
 * with when each was last seen and last announced. A sign-in from a key not seen for 90 days sends the new-device
 * notice, at most once an hour per key.
 */
export const userDevices = sqliteTable(
  "user_devices",
  {
    userId: text("user_id")
      .notNull()
      .references(() => users.id),
    deviceKey: text("device_key").notNull(),
    lastSeenAt: timestamp("last_seen_at").notNull(),
    lastNoticeAt: timestamp("last_notice_at"),
  },
  (t) => [primaryKey({ columns: [t.userId, t.deviceKey] })],
);

/**
 * "This wasn't me" links already used (docs/security.md): the signed link names its event, and the event's row here
 * makes it single-use. Kept past the link's 7 days only until the cron drops it.
 */
export const notMeUses = sqliteTable(
  "not_me_uses",
  {
    eventId: text("event_id").primaryKey(),
    userId: text("user_id").notNull(),
    usedAt: timestamp("used_at").notNull(),
  },
  (t) => [index("not_me_uses_time").on(t.usedAt)],
);

/** Notification templates (docs/api.md, Notification delivery). Seeded by migration; ids are stable across deployments. */
export const notificationTemplates = sqliteTable("notification_templates", {
  id: text("id").primaryKey(),
  name: text("name").notNull().unique(),
  /** Markdown with placeholders such as {{.UserName}}, {{.Labels.name}}, {{base_url}}. */
  titleTemplate: text("title_template").notNull(),
  bodyTemplate: text("body_template").notNull(),
  /** JSON array of {label, url} templates. */
  actions: text("actions").notNull().default("[]"),
  group: text("group").notNull(),
  /** "" means the deployment's NOTIFICATIONS_METHOD. */
  method: text("method", { enum: ["", "smtp", "webhook"] })
    .notNull()
    .default(""),
  kind: text("kind", { enum: ["system", "custom"] })
    .notNull()
    .default("system"),
  enabledByDefault: integer("enabled_by_default", { mode: "boolean" }).notNull().default(true),
  /** Security notices and the passcode: delivered whatever the user's preferences say. */
  mandatory: integer("mandatory", { mode: "boolean" }).notNull().default(false),
  /** Never delivered into the inbox (the passcode must not sit in a dashboard). */
  externalOnly: integer("external_only", { mode: "boolean" }).notNull().default(false),
  /**
   * Read-aware e-mail (docs/broadcasts.md): the e-mail copy waits this long and goes out only if the inbox copy is
   * still unread and not archived then. 0 sends at once. Owners set it per system template.
   */
  emailWhenUnreadAfterMs: integer("email_when_unread_after_ms").notNull().default(0),
});

export const notificationPreferences = sqliteTable(
  "notification_preferences",
  {
    userId: text("user_id").notNull(),
    templateId: text("template_id")
      .notNull()
      .references(() => notificationTemplates.id),
    disabled: integer("disabled", { mode: "boolean" }).notNull(),
    updatedAt: timestamp("updated_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.userId, t.templateId] })],
);

export const MESSAGE_STATUSES = ["pending", "leased", "sent", "temporary_failure", "permanent_failure", "inhibited", "skipped"] as const;
export type MessageStatus = (typeof MESSAGE_STATUSES)[number];
export const DISPATCH_METHODS = ["smtp", "webhook", "inbox", "push", "target"] as const;
export type DispatchMethod = (typeof DISPATCH_METHODS)[number];

/**
 * The durable delivery log: one row per (notification, method), and for `push` and `target` one per subscription or
 * target (`destination`). The queue only carries these ids.
 */
export const notificationMessages = sqliteTable(
  "notification_messages",
  {
    id: text("id").primaryKey(),
    /** Shared by the rows of one notification (its inbox row uses it as the inbox id). */
    notificationId: text("notification_id").notNull(),
    templateId: text("template_id").notNull(),
    userId: text("user_id").notNull(),
    method: text("method", { enum: DISPATCH_METHODS }).notNull(),
    /** The push subscription (`push`) or the user's own target (`target`) this copy goes to; null for the others. */
    destination: text("destination"),
    status: text("status", { enum: MESSAGE_STATUSES }).notNull(),
    statusReason: text("status_reason"),
    /** The webhook `payload` shape of docs/api.md (Notification delivery); secret labels are sealed, never stored in clear. */
    payload: text("payload", { mode: "json" }).$type<Record<string, unknown>>().notNull(),
    targets: text("targets", { mode: "json" }).$type<string[]>().notNull().default(sql`'[]'`),
    createdBy: text("created_by").notNull(),
    attempts: integer("attempts").notNull().default(0),
    nextRetryAfter: timestamp("next_retry_after"),
    leasedUntil: timestamp("leased_until"),
    createdAt: timestamp("created_at").notNull(),
    updatedAt: timestamp("updated_at").notNull(),
    sentAt: timestamp("sent_at"),
    /**
     * A read-aware e-mail copy (docs/broadcasts.md): when it falls due (`next_retry_after`), the recipient's inbox
     * object decides whether it is sent or `skipped`.
     */
    sendIfUnread: integer("send_if_unread", { mode: "boolean" }).notNull().default(false),
  },
  (t) => [index("messages_status_created").on(t.status, t.createdAt), index("messages_user").on(t.userId, t.createdAt)],
);

/**
 * A browser's Web Push subscription (docs/push.md): where the push service takes messages for it, and the keys the
 * payload is encrypted to (RFC 8291). At most 20 per user.
 */
export const pushSubscriptions = sqliteTable(
  "push_subscriptions",
  {
    id: text("id").primaryKey(),
    userId: text("user_id")
      .notNull()
      .references(() => users.id),
    name: text("name").notNull(),
    /** The push service's URL for this browser: a capability, never shown whole (only its origin). */
    endpoint: text("endpoint").notNull(),
    /** The browser's P-256 public key and authentication secret, base64url, as the browser gave them. */
    p256dh: text("p256dh").notNull(),
    auth: text("auth").notNull(),
    createdAt: timestamp("created_at").notNull(),
  },
  (t) => [index("push_subscriptions_user").on(t.userId), uniqueIndex("push_subscriptions_endpoint").on(t.userId, t.endpoint)],
);

export const TARGET_KINDS = ["webhook", "slack", "teams", "discord"] as const;
export type TargetKind = (typeof TARGET_KINDS)[number];

/**
 * A channel the user owns (docs/targets.md): their own webhook, a Slack, Teams or Discord incoming webhook. The URL
 * is itself a credential (whoever holds it can post), so it is sealed under SECRET_KEY like the webhook's signing
 * secret; only its origin is ever shown. Receives notifications only once verified with the code sent to it.
 */
export const notificationTargets = sqliteTable(
  "notification_targets",
  {
    id: text("id").primaryKey(),
    userId: text("user_id")
      .notNull()
      .references(() => users.id),
    kind: text("kind", { enum: TARGET_KINDS }).notNull(),
    name: text("name").notNull(),
    urlSealed: text("url_sealed").notNull(),
    urlOrigin: text("url_origin").notNull(),
    /** `webhook` only: the Standard Webhooks signing secret, sealed (it must be read back to sign). */
    secretSealed: text("secret_sealed"),
    /** SHA-256 of the 6-digit verification code, bound to the target; null once verified. */
    codeHash: text("code_hash"),
    failedAttempts: integer("failed_attempts").notNull().default(0),
    verifiedAt: timestamp("verified_at"),
    createdAt: timestamp("created_at").notNull(),
  },
  (t) => [index("notification_targets_user").on(t.userId)],
);

/**
 * Per template and channel switches (docs/channels.md, "Channel preferences"): `email`, `push` or `target:<id>`. No row
 * means enabled; mandatory templates ignore them.
 */
export const channelPreferences = sqliteTable(
  "channel_preferences",
  {
    userId: text("user_id")
      .notNull()
      .references(() => users.id),
    templateId: text("template_id").notNull(),
    channel: text("channel").notNull(),
    enabled: integer("enabled", { mode: "boolean" }).notNull(),
    updatedAt: timestamp("updated_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.userId, t.templateId, t.channel] })],
);

/**
 * A user's schedule for external copies (docs/schedule.md): time zone, quiet hours and digest. No row means the
 * defaults (UTC, no quiet hours, no digest), so most users cost the enqueue's read nothing but an empty result.
 */
export const notificationSchedules = sqliteTable("notification_schedules", {
  userId: text("user_id")
    .primaryKey()
    .references(() => users.id),
  /** A canonical IANA name, as the runtime's Intl spells it. */
  timezone: text("timezone").notNull(),
  /** The ranges as the API gives them: `[{"days": ["mon", …], "start": "HH:MM", "end": "HH:MM"}]`. */
  quietHours: text("quiet_hours", { mode: "json" }).$type<{ days: string[]; start: string; end: string }[]>().notNull(),
  /** `off`, a duration such as `1h`, or `daily@HH:MM`. */
  digest: text("digest").notNull(),
  updatedAt: timestamp("updated_at").notNull(),
});

/**
 * One row per broadcast (docs/broadcasts.md). `recipients` is the audience counted by the POST until every shard of
 * the audience has been resolved; then it is what the shards planned. The content is stored once, here, never per
 * recipient.
 */
export const broadcasts = sqliteTable("broadcasts", {
  id: text("id").primaryKey(),
  createdBy: text("created_by").notNull(),
  createdAt: timestamp("created_at").notNull(),
  /** The request's audience, as JSON: `{"all":true}`, `{"user_ids":[…]}`, `{"roles":[…]}` or `{"organization_id":…}`. */
  audience: text("audience", { mode: "json" }).$type<BroadcastAudience>().notNull(),
  title: text("title").notNull(),
  message: text("message").notNull(),
  targets: text("targets", { mode: "json" }).$type<string[]>().notNull().default(sql`'[]'`),
  emailWhenUnreadAfterMs: integer("email_when_unread_after_ms").notNull().default(0),
  recipients: integer("recipients").notNull(),
  completedAt: timestamp("completed_at"),
});

export type BroadcastAudience = { all: true } | { user_ids: string[] } | { roles: string[] } | { organization_id: string };

/**
 * The audience is resolved in keyset pages, one chain per user-id range (shard). `cursor` is the last user id the
 * shard planned; it only moves by compare-and-set, so a redelivered step cannot plan a page twice.
 */
export const broadcastShards = sqliteTable(
  "broadcast_shards",
  {
    broadcastId: text("broadcast_id").notNull(),
    shard: integer("shard").notNull(),
    cursor: text("cursor").notNull(),
    /** Recipients planned so far (delivery messages sent). */
    planned: integer("planned").notNull().default(0),
    done: integer("done", { mode: "boolean" }).notNull().default(false),
    updatedAt: timestamp("updated_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.broadcastId, t.shard] }),
    // The cron's search for chains that stalled (docs/broadcasts.md, "Exactly once").
    index("broadcast_shards_open").on(t.updatedAt).where(sql`${t.done} = 0`),
  ],
);

/**
 * Progress, one row per delivery message (≤ 100 recipients), rewritten whole with absolute counts: a redelivered
 * batch rewrites its row instead of counting twice.
 */
export const broadcastBatches = sqliteTable(
  "broadcast_batches",
  {
    broadcastId: text("broadcast_id").notNull(),
    batch: text("batch").notNull(),
    recipients: integer("recipients").notNull(),
    delivered: integer("delivered").notNull(),
    failed: integer("failed").notNull(),
    updatedAt: timestamp("updated_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.broadcastId, t.batch] })],
);

/** `Idempotency-Key` of the POST, per caller, kept 24 hours (docs/broadcasts.md). */
export const broadcastIdempotencyKeys = sqliteTable(
  "broadcast_idempotency_keys",
  {
    createdBy: text("created_by").notNull(),
    key: text("key").notNull(),
    broadcastId: text("broadcast_id").notNull(),
    /** The first 202's `recipients`, answered again as it was (the broadcast's own count may have settled since). */
    recipients: integer("recipients").notNull(),
    createdAt: timestamp("created_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.createdBy, t.key] })],
);

/** Deployment-wide settings (notifier_paused). */
export const siteConfig = sqliteTable("site_config", {
  key: text("key").primaryKey(),
  value: text("value").notNull(),
  updatedAt: timestamp("updated_at").notNull(),
});

/** At most one live passcode per user; only its HMAC is stored (docs/api.md, Password reset by one-time passcode). */
export const oneTimePasscodes = sqliteTable("one_time_passcodes", {
  userId: text("user_id")
    .primaryKey()
    .references(() => users.id),
  codeHmac: text("code_hmac").notNull(),
  expiresAt: timestamp("expires_at").notNull(),
  attempts: integer("attempts").notNull().default(0),
  createdAt: timestamp("created_at").notNull(),
});

/** When passcode mails went to each user: the sliding hourly and daily caps count these (kept a day). */
export const passcodeMails = sqliteTable(
  "passcode_mails",
  {
    id: text("id").primaryKey(),
    userId: text("user_id").notNull(),
    sentAt: timestamp("sent_at").notNull(),
  },
  (t) => [index("passcode_mails_user").on(t.userId, t.sentAt)],
);

/** External identities: a user signs in through a provider by (issuer, subject), never by e-mail alone. */
export const userLinks = sqliteTable(
  "user_links",
  {
    issuer: text("issuer").notNull(),
    subject: text("subject").notNull(),
    userId: text("user_id")
      .notNull()
      .references(() => users.id),
    loginType: text("login_type", { enum: ["oidc", "github"] }).notNull(),
    email: text("email").notNull(),
    createdAt: timestamp("created_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.issuer, t.subject] }), index("user_links_user").on(t.userId)],
);

/** Login conversions in flight (`POST /users/{user}/convert-login`): the state's HMAC, whom it belongs to, until when, and whether it was used. */
export const loginConversions = sqliteTable("login_conversions", {
  stateHmac: text("state_hmac").primaryKey(),
  userId: text("user_id")
    .notNull()
    .references(() => users.id),
  toType: text("to_type", { enum: ["oidc", "github"] }).notNull(),
  expiresAt: timestamp("expires_at").notNull(),
  usedAt: timestamp("used_at"),
  createdAt: timestamp("created_at").notNull(),
});

/**
 * Passkeys (WebAuthn credentials, docs/passkeys.md). The credential id and the COSE public key are stored as the
 * base64url the browser sent; the private key never leaves the authenticator. A credential id names one passkey in
 * the whole deployment (the WebAuthn registration rule), so a second registration of it is refused.
 */
export const passkeys = sqliteTable(
  "passkeys",
  {
    id: text("id").primaryKey(),
    userId: text("user_id")
      .notNull()
      .references(() => users.id),
    credentialId: text("credential_id").notNull(),
    publicKey: text("public_key").notNull(),
    /** The authenticator's signature counter as last seen; 0 for authenticators that keep none (synced passkeys). */
    signCount: integer("sign_count").notNull().default(0),
    /** Transport hints for `allowCredentials` and `excludeCredentials` (JSON array). */
    transports: text("transports", { mode: "json" }).$type<string[]>().notNull().default(sql`'[]'`),
    name: text("name").notNull(),
    /** The backup flags of the authenticator data: may be synced, and is backed up now (updated at each use). */
    backupEligible: integer("backup_eligible", { mode: "boolean" }).notNull().default(false),
    backedUp: integer("backed_up", { mode: "boolean" }).notNull().default(false),
    createdAt: timestamp("created_at").notNull(),
    lastUsedAt: timestamp("last_used_at"),
    /** When its signature counter went backwards (a sign of a cloned authenticator): refused from then on. */
    suspectAt: timestamp("suspect_at"),
  },
  (t) => [uniqueIndex("passkeys_credential").on(t.credentialId), index("passkeys_user").on(t.userId)],
);

/**
 * WebAuthn challenges in flight: only the SHA-256 of the challenge is kept, bound to what it was issued for and to
 * its user (none for passwordless sign-in). Spent by the first attempt that presents it; the cron deletes the
 * expired ones (docs/passkeys.md, "Challenges").
 */
export const webauthnChallenges = sqliteTable(
  "webauthn_challenges",
  {
    challengeHash: text("challenge_hash").primaryKey(),
    purpose: text("purpose", { enum: ["register", "login", "mfa", "step-up"] }).notNull(),
    userId: text("user_id"),
    expiresAt: timestamp("expires_at").notNull(),
    createdAt: timestamp("created_at").notNull(),
  },
  (t) => [index("webauthn_challenges_expiry").on(t.expiresAt)],
);

/**
 * A user's authenticator app (docs/second-factor.md): one per user, pending until a first code confirms it. The
 * shared secret must be read back to check codes, so it is sealed (AES-GCM under a key derived from SECRET_KEY for
 * this purpose only), never hashed.
 */
export const userTotp = sqliteTable("user_totp", {
  userId: text("user_id")
    .primaryKey()
    .references(() => users.id),
  secretSealed: text("secret_sealed").notNull(),
  /** Null while pending: the app is on once a code has confirmed it. */
  confirmedAt: timestamp("confirmed_at"),
  /** The last 30-second time step whose code was accepted: that step's code, and any earlier one, is refused. */
  lastStep: integer("last_step"),
  createdAt: timestamp("created_at").notNull(),
});

/**
 * Recovery codes: ten per set, each usable once. 120 random bits each, stored as SHA-256 of the code bound to its user:
 * no server key, so they still work after SECRET_KEY is rotated (docs/second-factor.md, "Recovery").
 */
export const recoveryCodes = sqliteTable(
  "recovery_codes",
  {
    userId: text("user_id")
      .notNull()
      .references(() => users.id),
    codeHash: text("code_hash").notNull(),
    usedAt: timestamp("used_at"),
    createdAt: timestamp("created_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.userId, t.codeHash] })],
);

/**
 * A sign-in waiting for its second factor (`mfa_token`): the first step (a password, a provider) has been proved.
 * `<id>-<secret>`, only the secret's SHA-256 stored; lives 5 minutes, used once, dead after 5 wrong codes.
 */
export const mfaChallenges = sqliteTable(
  "mfa_challenges",
  {
    id: text("id").primaryKey(),
    hashedSecret: text("hashed_secret").notNull(),
    userId: text("user_id")
      .notNull()
      .references(() => users.id),
    /** The login type of the session the challenge ends in. */
    loginType: text("login_type", { enum: ["password", "oidc", "github"] }).notNull(),
    /** What the first step proved (`pwd`, `oidc` or `github`). */
    methods: text("methods", { mode: "json" }).$type<AuthMethod[]>().notNull(),
    attempts: integer("attempts").notNull().default(0),
    /**
     * Where an external sign-in goes once its second step is done: what `safeRedirect` made of the flow's `redirect`,
     * kept here so the page never has to trust a target written in its own address (docs/second-factor.md).
     */
    redirect: text("redirect"),
    expiresAt: timestamp("expires_at").notNull(),
    createdAt: timestamp("created_at").notNull(),
  },
  (t) => [index("mfa_challenges_user").on(t.userId), index("mfa_challenges_expiry").on(t.expiresAt)],
);

/**
 * A deleted account whose data is still being erased (docs/privacy.md, "Erasure"): the request that deletes it
 * erases what it can at once, then each step runs in order, and a step that failed halfway is run again by the cron
 * until the last one removes the row. `step` is the next step to run.
 */
export const userErasures = sqliteTable(
  "user_erasures",
  {
    userId: text("user_id")
      .primaryKey()
      .references(() => users.id),
    step: text("step", { enum: ["inbox", "messages", "records", "audit", "settle"] }).notNull(),
    requestedAt: timestamp("requested_at").notNull(),
    /** When a step last ran (or failed): the cron leaves a row alone for a minute after it, so two runs rarely overlap. */
    updatedAt: timestamp("updated_at").notNull(),
    /** How many times a step has failed: for the operator, in the log line of each failure. */
    failures: integer("failures").notNull().default(0),
  },
  (t) => [index("user_erasures_updated").on(t.updatedAt)],
);

export type UserRow = typeof users.$inferSelect;
export type TemplateRow = typeof notificationTemplates.$inferSelect;
export type MessageRow = typeof notificationMessages.$inferSelect;
export type ApiKeyRow = typeof apiKeys.$inferSelect;
export type OrganizationRow = typeof organizations.$inferSelect;
export type BroadcastRow = typeof broadcasts.$inferSelect;
export type AuditLogInsert = typeof auditLogs.$inferInsert;
export type PasskeyRow = typeof passkeys.$inferSelect;
export type NotificationTargetRow = typeof notificationTargets.$inferSelect;
export type PushSubscriptionRow = typeof pushSubscriptions.$inferSelect;
