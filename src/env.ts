import type { UserInbox } from "./inbox/user-inbox";

/**
 * What the notifications queue carries: message ids from the log in D1, one or up to 100 per queue message
 * (docs/broadcasts.md: a broadcast enqueues its e-mail copies 100 at a time).
 */
/**
 * What the notification queues carry: ids of the message log to send; or, on the urgent lane, a passcode request
 * (the e-mail as asked), whose account-dependent work runs in the consumer, never in the request (docs/security.md,
 * "Timing: existing account vs unknown e-mail").
 */
export type NotificationQueueMessage = { messageId: string } | { messageIds: string[] } | { passcodeRequest: string };

/**
 * What the broadcasts queue carries (docs/broadcasts.md): a step of one shard's audience resolution, from the user id
 * after `cursor`; or up to 100 recipients to deliver to, named `batch` in the progress table.
 */
export type BroadcastQueueMessage = { resolve: string; shard: number; cursor: string } | { deliver: string; batch: string; userIds: string[] };

/** Bindings and variables the Worker receives (see wrangler.toml and docs/configuration.md). */
export interface Env {
  DB: D1Database;
  USER_INBOX: DurableObjectNamespace<UserInbox>;
  LOGIN_IP_LIMITER: RateLimit;
  LOGIN_ACCOUNT_LIMITER: RateLimit;
  LOGIN_ACCOUNT_CEILING: RateLimit;
  SENSITIVE_LIMITER: RateLimit;
  /** Per user: custom notifications, the one route where a user fills their own inbox at will. */
  CUSTOM_NOTIFICATION_LIMITER: RateLimit;
  /** Carries notification message ids to this Worker's queue() consumer. */
  NOTIFICATION_QUEUE: Queue<NotificationQueueMessage>;
  /** The same for mandatory templates (passcodes, security notices): a lane of their own (docs/email.md). */
  NOTIFICATION_URGENT_QUEUE: Queue<NotificationQueueMessage>;
  /** Carries broadcast fan-out steps to this Worker's queue() consumer. */
  BROADCAST_QUEUE: Queue<BroadcastQueueMessage>;
  /** The dashboard and the embed, built into dist/public (wrangler.toml `[assets]`, docs/dashboard.md). */
  ASSETS: Fetcher;

  ACCESS_URL?: string;
  SECRET_KEY?: string;
  SESSION_DURATION?: string;
  SESSION_MAX_LIFETIME?: string;
  AUTH_CACHE_TTL?: string;
  TOKEN_MAX_LIFETIME?: string;
  TOKEN_MAX_PER_USER?: string;
  INBOX_RETENTION?: string;
  INBOX_MAX_ITEMS?: string;
  DATA_JURISDICTION?: string;
  EMBED_SIGNING_KEYS?: string;
  STEP_UP_MAX_AGE?: string;
  MFA_REQUIRED_ROLES?: string;
  PASSWORD_AUTH_DISABLED?: string;
  OTP_TTL?: string;
  CORS_ALLOWED_ORIGINS?: string;
  NOTIFICATIONS_METHOD?: string;
  NOTIFICATIONS_MAX_AGE?: string;
  NOTIFICATIONS_RETRY_BASE?: string;
  NOTIFICATIONS_WEBHOOK_URL?: string;
  NOTIFICATIONS_WEBHOOK_SECRET?: string;
  EMAIL_FROM?: string;
  EMAIL_HELLO?: string;
  EMAIL_SMARTHOST?: string;
  EMAIL_USERNAME?: string;
  EMAIL_PASSWORD?: string;
  EMAIL_TLS?: string;
  OIDC_ISSUER_URL?: string;
  OIDC_CLIENT_ID?: string;
  OIDC_CLIENT_SECRET?: string;
  OIDC_ALLOW_SIGNUPS?: string;
  OIDC_SIGN_IN_TEXT?: string;
  OIDC_ICON_URL?: string;
  OIDC_EMAIL_DOMAIN?: string;
  VAPID_PUBLIC_KEY?: string;
  VAPID_PRIVATE_KEY?: string;
  VAPID_SUBJECT?: string;
  GITHUB_CLIENT_ID?: string;
  GITHUB_CLIENT_SECRET?: string;
  GITHUB_WEB_URL?: string;
  GITHUB_API_URL?: string;
}

type HeraldEnv = Env;

declare global {
  namespace Cloudflare {
    // Lets `env` from "cloudflare:workers" / "cloudflare:test" carry Herald's bindings.
    interface Env extends HeraldEnv {}
  }
}
