import { and, eq, isNull, lt, or, sql } from "drizzle-orm";
import type { Context } from "hono";
import { database } from "../db/client";
import { type TargetKind, userDevices } from "../db/schema";
import type { AppEnv } from "../http/types";
import { nowIso } from "../lib/crypto";
import { enqueueNotification } from "../notifications/enqueue";
import { TEMPLATE_IDS } from "../notifications/templates";
import { deviceKey, type RequestOrigin, requestOrigin } from "./device";
import { signNotMeToken } from "./not-me-token";

/**
 * The security notices (docs/security.md, "Security notices"): what happened, as the owners' notice and the "This
 * wasn't me" page name it, and the template that tells the account. Every template here is mandatory: inbox and
 * e-mail, whatever the user's preferences.
 */
export const SECURITY_EVENTS = {
  new_sign_in: { template: TEMPLATE_IDS.newSignIn, what: "a sign-in from a new device" },
  password_changed: { template: TEMPLATE_IDS.passwordChanged, what: "the password was changed" },
  login_method_changed: { template: TEMPLATE_IDS.loginMethodChanged, what: "the login method was changed" },
  factor_added: { template: TEMPLATE_IDS.factorAdded, what: "a sign-in method was added" },
  factor_removed: { template: TEMPLATE_IDS.factorRemoved, what: "a sign-in method was removed" },
  recovery_codes_regenerated: { template: TEMPLATE_IDS.recoveryCodesRegenerated, what: "new recovery codes were made" },
  recovery_codes_low: { template: TEMPLATE_IDS.recoveryCodesLow, what: "a recovery code was used" },
  api_token_created: { template: TEMPLATE_IDS.apiTokenCreated, what: "an API token was created" },
  sessions_ended: { template: TEMPLATE_IDS.sessionsEnded, what: "sessions were ended by someone else" },
  site_roles_changed: { template: TEMPLATE_IDS.siteRolesChanged, what: "the site roles were changed" },
  channel_added: { template: TEMPLATE_IDS.channelAdded, what: "a notification channel was added" },
} as const;

export type NoticeEvent = keyof typeof SECURITY_EVENTS;

/** A device not seen on the account for this long is new again. */
const DEVICE_MEMORY_MS = 90 * 24 * 3_600_000;
/** At most one new-device notice per device in this time. */
const NEW_DEVICE_NOTICE_EVERY_MS = 3_600_000;

const WHEN = new Intl.DateTimeFormat("en-GB", { dateStyle: "long", timeStyle: "short", timeZone: "UTC" });
const REGIONS = new Intl.DisplayNames(["en"], { type: "region" });

/** "26 November 2026 at 13:04 UTC": the notices' time, in UTC until the person's own zone is known. */
export function formatWhen(at: number): string {
  return `${WHEN.format(at)} UTC`;
}

/** "Chrome 131 on macOS", or what the request said of itself when it names no browser. */
export function describeDevice(origin: Pick<RequestOrigin, "device" | "userAgent">): string {
  if (origin.device) return origin.device;
  return origin.userAgent ? `an unrecognised client (${origin.userAgent.slice(0, 80)})` : "an unrecognised client";
}

/** "Berlin, Germany (203.0.113.0/24)"; "an unknown place" when Cloudflare placed it nowhere (local runs). */
export function describePlace(origin: Pick<RequestOrigin, "city" | "country" | "ipPrefix">): string {
  const country = origin.country ? (REGIONS.of(origin.country) ?? origin.country) : undefined;
  const where = [origin.city, country].filter(Boolean).join(", ") || "an unknown place";
  return origin.ipPrefix ? `${where} (${origin.ipPrefix})` : where;
}

export interface NoticeRequest {
  userId: string;
  event: NoticeEvent;
  /** The template's own labels (the factor's name, the token's name, who ended the sessions…). */
  labels?: Record<string, string>;
  /** Who caused it; defaults to the signed-in caller, else the account itself. */
  createdBy?: string;
}

/**
 * Sends one security notice after the response: the event's template with when, the device and the place of the
 * request that caused it, and a "This wasn't me" link for the account (docs/security.md). A failure is logged, never
 * turned into a failed request: the change it tells of has already happened.
 */
export function sendSecurityNotice(c: Context<AppEnv>, notice: NoticeRequest): void {
  const origin = requestOrigin(c.req.raw);
  const createdBy = notice.createdBy ?? c.get("auth")?.user.id ?? notice.userId;
  c.executionCtx.waitUntil(
    deliverNotice(c, notice, origin, Date.now(), createdBy).catch((error: unknown) => {
      console.error(`[herald] security notice ${notice.event} failed: ${error instanceof Error ? error.name : "error"}`);
    }),
  );
}

async function deliverNotice(c: Context<AppEnv>, notice: NoticeRequest, origin: RequestOrigin, at: number, createdBy: string): Promise<void> {
  const device = describeDevice(origin);
  const place = describePlace(origin);
  const when = formatWhen(at);
  const token = await signNotMeToken(c.get("config").SECRET_KEY, {
    userId: notice.userId,
    eventId: crypto.randomUUID(),
    event: notice.event,
    at,
    device,
    place,
  });
  await enqueueNotification(c.env, c.executionCtx, {
    userId: notice.userId,
    templateId: SECURITY_EVENTS[notice.event].template,
    labels: { ...notice.labels, when, device, place },
    // The link ends every session of the account: sealed in the message log like a passcode.
    secretLabels: { not_me_token: token },
    createdBy,
  });
}

/**
 * After a sign-in (docs/security.md, "Devices"): records the device (browser family, OS, country) and sends the
 * new-device notice when the account has signed in before but not from this device for 90 days, at most once an
 * hour per device. An account's very first sign-in has nothing to compare with and sends none. Runs after the
 * response, so a sign-in never waits for it.
 */
export function noticeNewDevice(c: Context<AppEnv>, userId: string): void {
  const origin = requestOrigin(c.req.raw);
  const work = (async () => {
    const db = database(c.env.DB);
    const key = deviceKey(origin);
    const now = Date.now();
    // One transaction: what was known before this sign-in, then this sign-in recorded.
    const [known] = await db.batch([
      db
        .select({ deviceKey: userDevices.deviceKey, lastSeenAt: userDevices.lastSeenAt })
        .from(userDevices)
        .where(eq(userDevices.userId, userId))
        .orderBy(sql`${userDevices.deviceKey} = ${key} DESC`)
        .limit(2),
      db
        .insert(userDevices)
        .values({ userId, deviceKey: key, lastSeenAt: nowIso(now) })
        .onConflictDoUpdate({ target: [userDevices.userId, userDevices.deviceKey], set: { lastSeenAt: nowIso(now) } }),
    ]);
    if (known.length === 0) return;
    const same = known[0]?.deviceKey === key ? known[0] : undefined;
    if (same && Date.parse(same.lastSeenAt) > now - DEVICE_MEMORY_MS) return;
    // The claim is one conditional UPDATE: of two sign-ins at once from the same new device, one sends the notice.
    const claimed = await db
      .update(userDevices)
      .set({ lastNoticeAt: nowIso(now) })
      .where(
        and(
          eq(userDevices.userId, userId),
          eq(userDevices.deviceKey, key),
          or(isNull(userDevices.lastNoticeAt), lt(userDevices.lastNoticeAt, nowIso(now - NEW_DEVICE_NOTICE_EVERY_MS))),
        ),
      )
      .returning({ userId: userDevices.userId });
    if (claimed.length === 0) return;
    await deliverNotice(c, { userId, event: "new_sign_in" }, origin, now, userId);
  })().catch((error: unknown) => {
    console.error(`[herald] new-device check failed: ${error instanceof Error ? error.name : "error"}`);
  });
  c.executionCtx.waitUntil(work);
}

/** The recovery-code notice goes out from this many unused codes down (docs/security.md, "Security notices"). */
const RECOVERY_CODES_LOW = 2;

/** After a recovery code is used: `remaining` unused codes are left. */
export function noticeRecoveryCodeUsed(c: Context<AppEnv>, userId: string, remaining: number): void {
  if (remaining > RECOVERY_CODES_LOW) return;
  sendSecurityNotice(c, { userId, event: "recovery_codes_low", labels: { remaining: String(Math.max(0, remaining)) } });
}

/** How the channel-added notice names each kind of channel, before the name its owner gave it. */
const CHANNEL_NOUNS: Record<TargetKind | "push", string> = {
  push: "The browser",
  webhook: "The webhook",
  slack: "The Slack channel",
  teams: "The Microsoft Teams channel",
  discord: "The Discord channel",
};

/** A place the account's notifications now go: a browser subscribed to Web Push, or one of the person's targets. */
export interface AddedChannel {
  kind: TargetKind | "push";
  name: string;
  /** The origin it receives at (the push service's, the target URL's): never the URL, which is a capability. */
  origin: string;
}

/**
 * After a push subscription or a target is created (docs/security.md, "Security notices"): whoever holds a session
 * could otherwise have copies of the person's notifications sent to a place of their own, unseen. The notice names
 * the channel by kind, name and origin only: the endpoint or URL would let anyone who reads the notice post there.
 */
export function noticeChannelAdded(c: Context<AppEnv>, userId: string, channel: AddedChannel): void {
  sendSecurityNotice(c, {
    userId,
    event: "channel_added",
    labels: { channel: `${CHANNEL_NOUNS[channel.kind]} "${channel.name}"`, channel_origin: channel.origin },
  });
}
