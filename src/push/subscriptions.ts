import { and, eq, sql } from "drizzle-orm";
import type { Context } from "hono";
import type * as z from "zod";
import { auditInsert, auditInsertWhere } from "../audit/log";
import { limitSensitive } from "../auth/rate-limit";
import type { Database } from "../db/client";
import { insertWhere } from "../db/insert-where";
import { type PushSubscriptionRow, pushSubscriptions, type UserRow } from "../db/schema";
import { dbFor } from "../db/session";
import { badRequest, conflict, validationFailed } from "../http/errors";
import type { AppEnv } from "../http/types";
import { nowIso } from "../lib/crypto";
import { checkOutboundUrl } from "../outbound/allow-list";
import { describeUserAgent } from "../security/device";
import { noticeChannelAdded } from "../security/notices";
import { isUniqueViolation } from "../users/service";
import { fromBase64url, importPoint } from "./encryption";
import { PushMessages } from "./messages";
import type { AddPushSubscriptionBody, PushSubscription } from "./schemas";
import { vapidSigner } from "./vapid";

/**
 * A user's browsers subscribed to Web Push (docs/push.md, "Subscribing a browser"): added by the user themself,
 * listed and removed by them or an owner, and removed by delivery when the push service says one is gone.
 */

/** How many subscriptions one user may hold (docs/security.md, "What one user can make Herald hold"). */
export const PUSH_SUBSCRIPTIONS_MAX_PER_USER = 20;

/** What a subscription is called when the request names none and its User-Agent names no browser. */
const FALLBACK_NAME = "Browser";

/** The public shape: never the endpoint (a capability: whoever holds it can push to the browser) nor the keys. */
export function toSubscriptionResponse(row: PushSubscriptionRow): z.input<typeof PushSubscription> {
  return { id: row.id, name: row.name, endpoint_origin: new URL(row.endpoint).origin, created_at: row.createdAt };
}

/**
 * What the browser sent, checked beyond its shape: the endpoint must be a push service's (docs/targets.md,
 * "Outbound safety"), `p256dh` a point on P-256. Every refusal names its field, as the shape's do.
 */
async function checkSubscription(c: Context<AppEnv>, body: AddPushSubscriptionBody): Promise<URL> {
  const endpoint = checkOutboundUrl("push", body.endpoint, c.get("config").OUTBOUND_ALLOWED_ORIGINS);
  const point = fromBase64url(body.keys.p256dh);
  const onCurve = point !== undefined && (await importPoint(point, "ECDH")) !== undefined;
  const validations = [
    ...(endpoint.ok ? [] : [{ field: "endpoint", detail: endpoint.reason }]),
    ...(onCurve ? [] : [{ field: "keys.p256dh", detail: PushMessages.badP256dh }]),
  ];
  if (!endpoint.ok || validations.length > 0) throw validationFailed(validations);
  return endpoint.url;
}

const ofUser = (userId: string, endpoint: string) => and(eq(pushSubscriptions.userId, userId), eq(pushSubscriptions.endpoint, endpoint));

async function existing(db: Database, userId: string, endpoint: string): Promise<PushSubscriptionRow | undefined> {
  return (await db.select().from(pushSubscriptions).where(ofUser(userId, endpoint)).limit(1))[0];
}

/**
 * Subscribes a browser of `user`. The same endpoint again is the same browser (it re-subscribes after its keys
 * change, or the page asks twice): that subscription is kept, takes the new keys and any new name, and is answered
 * with `created: false`; only a change is audited. Every add that passes the checks counts against the user's
 * adds a minute, a known endpoint's too, since it may write new keys (docs/security.md, "What one user can make
 * Herald hold"); the cap is counted by the insert itself, so requests at once cannot pass it.
 */
export async function addSubscription(
  c: Context<AppEnv>,
  user: UserRow,
  body: AddPushSubscriptionBody,
): Promise<{ row: PushSubscriptionRow; created: boolean }> {
  if (!vapidSigner(c.get("config"))) throw conflict(PushMessages.notConfigured, PushMessages.notConfiguredDetail);
  const url = await checkSubscription(c, body);
  // After the checks, so a refused subscription costs nothing of the budget.
  await limitSensitive(c, "push-subscription-add", user.id);
  const db = dbFor(c, "write");
  const held = await existing(db, user.id, body.endpoint);
  if (held) return { row: await refresh(c, db, held, body), created: false };

  const row: PushSubscriptionRow = {
    id: crypto.randomUUID(),
    userId: user.id,
    name: body.name ?? describeUserAgent(c.req.header("User-Agent") ?? null).device ?? FALLBACK_NAME,
    endpoint: body.endpoint,
    p256dh: body.keys.p256dh,
    auth: body.keys.auth,
    createdAt: nowIso(),
  };
  const fits = sql`(SELECT count(*) FROM ${pushSubscriptions} WHERE ${pushSubscriptions.userId} = ${user.id}) < ${PUSH_SUBSCRIPTIONS_MAX_PER_USER}`;
  const created = sql`EXISTS (SELECT 1 FROM ${pushSubscriptions} WHERE ${pushSubscriptions.id} = ${row.id})`;
  let inserted: { id: string }[];
  try {
    [inserted] = await db.batch([
      insertWhere(db, pushSubscriptions, row, fits).returning({ id: pushSubscriptions.id }),
      auditInsertWhere(
        db,
        c,
        {
          action: "create",
          resourceType: "push_subscription",
          resourceId: row.id,
          diff: { owner: user.id, name: row.name, endpoint_origin: url.origin },
        },
        created,
      ),
    ]);
  } catch (error) {
    // The same browser subscribed twice at once: one insert wins, and the other answers with what it stored.
    if (!isUniqueViolation(error)) throw error;
    const winner = await existing(db, user.id, body.endpoint);
    if (!winner) throw error;
    return { row: winner, created: false };
  }
  if (inserted.length === 0) {
    // Full, unless the place went to this same browser sent at once: a known endpoint is never refused.
    const winner = await existing(db, user.id, body.endpoint);
    if (winner) return { row: winner, created: false };
    throw badRequest(PushMessages.tooMany, { detail: PushMessages.tooManyDetail(PUSH_SUBSCRIPTIONS_MAX_PER_USER) });
  }
  // Only a new subscription is a new place the notifications go: the same browser again tells no one.
  noticeChannelAdded(c, user.id, { kind: "push", name: row.name, origin: url.origin });
  return { row, created: true };
}

/** The same browser again: new keys and, when given, a new name; nothing written when nothing changed. */
async function refresh(c: Context<AppEnv>, db: Database, held: PushSubscriptionRow, body: AddPushSubscriptionBody): Promise<PushSubscriptionRow> {
  const next = { ...held, name: body.name ?? held.name, p256dh: body.keys.p256dh, auth: body.keys.auth };
  if (next.name === held.name && next.p256dh === held.p256dh && next.auth === held.auth) return held;
  await db.batch([
    db.update(pushSubscriptions).set({ name: next.name, p256dh: next.p256dh, auth: next.auth }).where(eq(pushSubscriptions.id, held.id)),
    auditInsert(db, c, {
      action: "update",
      resourceType: "push_subscription",
      resourceId: held.id,
      diff: { owner: held.userId, name: next.name, keys_changed: next.p256dh !== held.p256dh || next.auth !== held.auth },
    }),
  ]);
  return next;
}
