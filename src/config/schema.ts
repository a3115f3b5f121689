import * as z from "zod";
import { EMBED_KEY_ID } from "../auth/embed-token";
import { SITE_ROLES, type SiteRoleName } from "../authz/roles";
import { parseMailbox } from "../notifications/email/address";
import { fromBase64url, P256_POINT_BYTES } from "../push/encryption";
import { parseDuration } from "./duration";

// The variables Herald reads and how each is validated (docs/configuration.md). Kept free of Worker types so the
// Node-side test suites can pin every key (test/fixtures/vars.ts).

/** A domain of at least two labels, as Postfix's `reject_non_fqdn_helo_hostname` wants. */
const HELLO_NAME = /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$/;

const duration = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .transform((text, ctx) => {
      const ms = parseDuration(text);
      if (ms === undefined || ms <= 0) {
        ctx.addIssue({ code: "custom", message: `"${text}" is not a duration such as 24h or 10m` });
        return z.NEVER;
      }
      return ms;
    });

const bool = (fallback: boolean) =>
  z
    .enum(["true", "false", "1", "0", ""])
    .default(fallback ? "true" : "false")
    .transform((v) => (v === "" ? fallback : v === "true" || v === "1"));

/** The most any deployment lets an API token live: TOKEN_MAX_LIFETIME may not exceed it (365 days). */
export const TOKEN_LIFETIME_CEILING_MS = 365 * 24 * 60 * 60 * 1000;

/**
 * EMBED_SIGNING_KEYS (docs/configuration.md): `<key id>:<secret>` pairs, comma-separated, so a new key can be added
 * beside the old one and the old one removed later. Issues name the pair by its position, never its text: the
 * secrets must not reach a log (src/config/config.ts logs the messages).
 */
const embedSigningKeys = z
  .string()
  .default("")
  .transform((text, ctx) => {
    const keys = new Map<string, string>();
    const pairs = text
      .split(",")
      .map((pair) => pair.trim())
      .filter((pair) => pair !== "");
    pairs.forEach((pair, index) => {
      const colon = pair.indexOf(":");
      const keyId = pair.slice(0, Math.max(colon, 0));
      const secret = pair.slice(colon + 1);
      const which = `key ${index + 1}`;
      if (colon < 0 || !EMBED_KEY_ID.test(keyId)) {
        ctx.addIssue({ code: "custom", message: `${which} must be <key id>:<secret>, the id 1–32 letters, digits, '-' or '_'` });
      } else if (secret.length < 32) {
        ctx.addIssue({ code: "custom", message: `${which} ("${keyId}") must have a secret of at least 32 characters of random data` });
      } else if (keys.has(keyId)) {
        ctx.addIssue({ code: "custom", message: `${which}: the key id "${keyId}" is given twice` });
      } else {
        keys.set(keyId, secret);
      }
    });
    return keys as ReadonlyMap<string, string>;
  });

/** An uncompressed P-256 point in base64url; whether it lies on the curve is checked when the key is imported. */
const isPoint = (text: string) => {
  const bytes = fromBase64url(text);
  return bytes?.byteLength === P256_POINT_BYTES && bytes[0] === 0x04;
};

/** A comma-separated list of origins, each trimmed and without a trailing slash; empty by default. */
const originList = z
  .string()
  .default("")
  .transform((v) =>
    v
      .split(",")
      .map((o) => o.trim().replace(/\/$/, ""))
      .filter((o) => o !== ""),
  );

const optionalText = z
  .string()
  .optional()
  .transform((v) => (v && v.trim() !== "" ? v.trim() : undefined));

export const configSchema = z
  .object({
    ACCESS_URL: z.url({ protocol: /^https?$/ }).default("http://localhost:8787"),
    SECRET_KEY: z.string().min(32, "must be at least 32 characters of random data"),
    SESSION_DURATION: duration("24h"),
    /** The absolute lifetime of a login session: sliding on use never takes it past this age (ASVS 7.3.2). */
    SESSION_MAX_LIFETIME: duration("720h"),
    /** How long an isolate may reuse what it loaded for a token (0s disables): bounds revocation delay elsewhere. */
    AUTH_CACHE_TTL: z
      .string()
      .default("5s")
      .transform((text, ctx) => {
        const ms = parseDuration(text);
        if (ms === undefined || ms < 0 || ms > 60_000) {
          ctx.addIssue({ code: "custom", message: `"${text}" must be a duration from 0s to 60s` });
          return z.NEVER;
        }
        return ms;
      }),
    TOKEN_MAX_LIFETIME: duration("720h").refine((ms) => ms <= TOKEN_LIFETIME_CEILING_MS, "must be at most 8760h (365 days)"),
    /** How many named API tokens one user may hold. */
    TOKEN_MAX_PER_USER: z.coerce.number().int().min(1).max(10_000).default(100),
    /** Broadcasts one caller may send, over sliding windows of a minute and a day (docs/broadcasts.md, "Limits"). */
    BROADCASTS_PER_MINUTE: z.coerce.number().int().min(1).max(100_000).default(5),
    BROADCASTS_PER_DAY: z.coerce.number().int().min(1).max(1_000_000).default(50),
    /** How many login sessions one user may hold; a sign-in past it ends the least recently used. */
    SESSIONS_MAX_PER_USER: z.coerce.number().int().min(1).max(10_000).default(50),
    /** How many watch sockets one user may hold at once; past it the oldest is closed with 4429. */
    WATCH_MAX_PER_USER: z.coerce.number().int().min(1).max(10_000).default(50),
    /** How long an inbox keeps read and archived items (docs/inbox.md, "Retention"); unread ones are kept however old. */
    INBOX_RETENTION: duration("365d"),
    /** How many items one inbox holds before its oldest read or archived ones give way (docs/inbox.md, "Retention"). */
    INBOX_MAX_ITEMS: z.coerce.number().int().min(1).max(10_000_000).default(100_000),
    /**
     * The Durable Objects jurisdiction every inbox object is created in (docs/deployment.md, "Where data lives"); empty:
     * none, each object where its first request lands. Fixed for the life of a deployment: an object's id depends on it.
     */
    DATA_JURISDICTION: z
      .enum(["", "eu", "us", "fedramp", "fedramp-high"], { message: "must be empty or one of eu, us, fedramp, fedramp-high" })
      .default(""),
    /** Keys that sign embed tokens (docs/embed.md, "Signed embed tokens"); empty: no embed token is accepted. */
    EMBED_SIGNING_KEYS: embedSigningKeys,
    /**
     * How recent a login session's last authentication must be for the actions that ask for it: adding or removing a
     * factor, new recovery codes, API tokens, deleting a user, site roles, ending sessions (docs/second-factor.md,
     * "Step-up").
     */
    STEP_UP_MAX_AGE: duration("10m"),
    /**
     * Site roles whose holders must have a second factor: without one they may sign in, read themselves, enrol one and
     * sign out, and nothing else (docs/second-factor.md, "Requiring a second factor"). `member` means every user.
     */
    MFA_REQUIRED_ROLES: z
      .string()
      .default("")
      .transform((text, ctx) => {
        const roles = text
          .split(",")
          .map((role) => role.trim())
          .filter((role) => role !== "");
        for (const role of roles) {
          if (!Object.hasOwn(SITE_ROLES, role)) {
            ctx.addIssue({ code: "custom", message: `"${role}" is not a site role: use ${Object.keys(SITE_ROLES).join(", ")}` });
          }
        }
        return [...new Set(roles)] as SiteRoleName[];
      }),
    PASSWORD_AUTH_DISABLED: bool(false),
    OTP_TTL: duration("10m"),
    CORS_ALLOWED_ORIGINS: originList,
    /**
     * For tests only (docs/targets.md, "Outbound safety"): when set, these origins (http allowed) replace every
     * built-in list of where push endpoints and the user's own targets may point.
     */
    OUTBOUND_ALLOWED_ORIGINS: originList,
    NOTIFICATIONS_METHOD: z.enum(["smtp", "webhook"]).default("smtp"),
    /**
     * How long a message keeps being retried after temporary failures before it fails for good: Postfix's
     * `maximal_queue_lifetime` (docs/email.md, "Never lose, never duplicate"). An age, not a count of attempts: the
     * backoff spends a small count within a minute or so, and then a short outage loses every message.
     */
    NOTIFICATIONS_MAX_AGE: duration("5d"),
    /** First retry delay; each later attempt doubles it (with jitter), capped at an hour. */
    NOTIFICATIONS_RETRY_BASE: duration("5s"),
    NOTIFICATIONS_WEBHOOK_URL: optionalText,
    NOTIFICATIONS_WEBHOOK_SECRET: optionalText,
    /** `Display Name <address>` or a bare address; the envelope sender is always the bare address. */
    EMAIL_FROM: optionalText,
    /** The name Herald gives in EHLO; defaults to ACCESS_URL's host (docs/email.md). */
    EMAIL_HELLO: optionalText,
    EMAIL_SMARTHOST: optionalText,
    EMAIL_USERNAME: optionalText,
    EMAIL_PASSWORD: optionalText,
    /**
     * `starttls` (default: upgrade, and refuse to authenticate or send when the server does not offer it), `tls`
     * (implicit TLS, port 465) or `none` (plain text, for a relay on a trusted network).
     */
    EMAIL_TLS: z
      .enum(["starttls", "tls", "none", ""])
      .default("starttls")
      .transform((v) => (v === "" ? "starttls" : v)),
    OIDC_ISSUER_URL: optionalText,
    OIDC_CLIENT_ID: optionalText,
    OIDC_CLIENT_SECRET: optionalText,
    OIDC_ALLOW_SIGNUPS: bool(false),
    /** The OIDC button's text and icon, as Coder's `signInText` / `iconUrl` (GET /users/authmethods). */
    OIDC_SIGN_IN_TEXT: optionalText,
    OIDC_ICON_URL: optionalText,
    /** Comma-separated e-mail domains allowed to sign in through OIDC; empty allows any verified e-mail. */
    OIDC_EMAIL_DOMAIN: z
      .string()
      .default("")
      .transform((v) =>
        v
          .split(",")
          .map((d) => d.trim().toLowerCase())
          .filter((d) => d !== ""),
      ),
    /**
     * The VAPID key pair that signs every push message (docs/push.md, "Keys"): the public key is an uncompressed P-256
     * point, the private key its 32-byte scalar, both unpadded base64url. Without them Web Push is off.
     */
    VAPID_PUBLIC_KEY: optionalText.refine(
      (v) => v === undefined || isPoint(v),
      `must be an uncompressed P-256 public key: ${P256_POINT_BYTES} bytes (04…), base64url`,
    ),
    VAPID_PRIVATE_KEY: optionalText.refine(
      (v) => v === undefined || fromBase64url(v)?.byteLength === 32,
      "must be a P-256 private key: 32 bytes, base64url",
    ),
    /** Who push services may contact about this sender: a `mailto:` or `https:` URL (RFC 8292, section 2.1). */
    VAPID_SUBJECT: optionalText.refine(
      (v) => v === undefined || /^(mailto:[^\s@]+@[^\s@]+|https:\/\/\S+)$/.test(v),
      "must be a mailto: or https: URL",
    ),
    GITHUB_CLIENT_ID: optionalText,
    GITHUB_CLIENT_SECRET: optionalText,
    /** GitHub's web (authorize, token) and API base URLs; configurable for GitHub Enterprise and for tests. */
    GITHUB_WEB_URL: z.url({ protocol: /^https?$/ }).default("https://github.com"),
    GITHUB_API_URL: z.url({ protocol: /^https?$/ }).default("https://api.github.com"),
  })
  .superRefine((c, ctx) => {
    if (c.NOTIFICATIONS_METHOD === "webhook" && !c.NOTIFICATIONS_WEBHOOK_URL) {
      ctx.addIssue({ code: "custom", path: ["NOTIFICATIONS_WEBHOOK_URL"], message: "is required when NOTIFICATIONS_METHOD is webhook" });
    }
    if (c.OIDC_ISSUER_URL) {
      const issuer = URL.parse(c.OIDC_ISSUER_URL);
      // Plain http only for an issuer on this machine (development and tests); anywhere else tokens would be exposed.
      const loopback = issuer !== null && /^(localhost|127\.\d+\.\d+\.\d+|\[::1\])$/.test(issuer.hostname);
      if (!issuer || !(issuer.protocol === "https:" || (issuer.protocol === "http:" && loopback))) {
        ctx.addIssue({ code: "custom", path: ["OIDC_ISSUER_URL"], message: "must be an https URL (http only on loopback)" });
      }
      if (!c.OIDC_CLIENT_ID) ctx.addIssue({ code: "custom", path: ["OIDC_CLIENT_ID"], message: "is required with OIDC_ISSUER_URL" });
    }
    if (c.OIDC_ICON_URL && !/^(https?:\/\/|\/)/i.test(c.OIDC_ICON_URL)) {
      ctx.addIssue({ code: "custom", path: ["OIDC_ICON_URL"], message: "must be an http(s) URL or a path such as /icon/oidc.svg" });
    }
    if ((c.VAPID_PUBLIC_KEY === undefined) !== (c.VAPID_PRIVATE_KEY === undefined)) {
      const missing = c.VAPID_PUBLIC_KEY === undefined ? "VAPID_PUBLIC_KEY" : "VAPID_PRIVATE_KEY";
      ctx.addIssue({ code: "custom", path: [missing], message: "is required with the other VAPID key: set both or neither" });
    }
    if (c.GITHUB_CLIENT_ID && !c.GITHUB_CLIENT_SECRET) {
      ctx.addIssue({ code: "custom", path: ["GITHUB_CLIENT_SECRET"], message: "is required with GITHUB_CLIENT_ID" });
    }
    if (c.EMAIL_FROM && !parseMailbox(c.EMAIL_FROM)) {
      ctx.addIssue({ code: "custom", path: ["EMAIL_FROM"], message: "must be an address, optionally with a display name: Name <user@example.com>" });
    }
    if (c.EMAIL_HELLO && !HELLO_NAME.test(c.EMAIL_HELLO)) {
      ctx.addIssue({ code: "custom", path: ["EMAIL_HELLO"], message: "must be a fully-qualified host name such as mail.example.com" });
    }
    if (c.EMAIL_SMARTHOST && !/^[^:\s]+:\d{1,5}$/.test(c.EMAIL_SMARTHOST)) {
      ctx.addIssue({ code: "custom", path: ["EMAIL_SMARTHOST"], message: "must be host:port" });
    }
  });

/** Every variable the configuration reads: the test suites pin each of them (test/fixtures/vars.ts). */
export type ConfigKey = keyof z.input<typeof configSchema>;
export const CONFIG_KEYS: readonly ConfigKey[] = configSchema.keyof().options;
