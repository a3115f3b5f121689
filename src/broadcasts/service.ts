import { and, count, desc, eq, gt, sql } from "drizzle-orm";
import type { Context } from "hono";
import { auditInsert } from "../audit/log";
import type { Database } from "../db/client";
import { type BroadcastAudience, broadcastBatches, broadcastIdempotencyKeys, broadcastShards, broadcasts, organizations, users } from "../db/schema";
import { dbFor } from "../db/session";
import { rateLimited, validationFailed } from "../http/errors";
import type { AppEnv } from "../http/types";
import { nowIso, uuidv7 } from "../lib/crypto";
import { audienceCondition } from "./audience";
import { firstSteps, sendSteps } from "./fanout";
import { BroadcastMessages } from "./messages";
import type { CreateBroadcast } from "./schemas";

/** How long an `Idempotency-Key` answers with its first broadcast (docs/broadcasts.md). */
const KEY_WINDOW_MS = 24 * 60 * 60 * 1000;

export interface Created {
  id: string;
  recipients: number;
}

/** The first 202 of a key this caller used within 24 hours, if any. */
async function replayed(db: Database, callerId: string, key: string, at: number): Promise<Created | undefined> {
  const [row] = await db
    .select({ id: broadcastIdempotencyKeys.broadcastId, recipients: broadcastIdempotencyKeys.recipients })
    .from(broadcastIdempotencyKeys)
    .where(
      and(
        eq(broadcastIdempotencyKeys.createdBy, callerId),
        eq(broadcastIdempotencyKeys.key, key),
        gt(broadcastIdempotencyKeys.createdAt, nowIso(at - KEY_WINDOW_MS)),
      ),
    );
  return row;
}

/**
 * What the audience names must exist (an unknown organization or user id is a 400 and nothing is sent); a known user
 * who is suspended or deleted is simply not a recipient. Returns the recipients counted now.
 */
async function countAudience(db: Database, audience: BroadcastAudience, createdAt: string): Promise<number> {
  const counted = db.select({ n: count() }).from(users).where(audienceCondition(audience, createdAt));
  if ("organization_id" in audience) {
    const [[total], found] = await db.batch([
      counted,
      db.select({ id: organizations.id }).from(organizations).where(eq(organizations.id, audience.organization_id)),
    ]);
    if (found.length === 0) throw validationFailed([{ field: "audience.organization_id", detail: BroadcastMessages.unknownOrganization }]);
    return total?.n ?? 0;
  }
  if ("user_ids" in audience) {
    const listed = sql`${users.id} IN (SELECT value FROM json_each(${JSON.stringify(audience.user_ids)}))`;
    const [[total], found] = await db.batch([counted, db.select({ id: users.id }).from(users).where(listed)]);
    const known = new Set(found.map((u) => u.id));
    const unknown = audience.user_ids.flatMap((id, i) =>
      known.has(id) ? [] : [{ field: `audience.user_ids.${i}`, detail: BroadcastMessages.unknownUser }],
    );
    if (unknown.length > 0) throw validationFailed(unknown);
    return total?.n ?? 0;
  }
  const [total] = await counted;
  return total?.n ?? 0;
}

/**
 * `POST /notifications/broadcasts` (docs/broadcasts.md): counts the audience, stores the broadcast with one cursor
 * per shard (and the `Idempotency-Key`, in the same transaction), then starts the shards' resolution chains. A key
 * seen within 24 hours answers its first 202 and stores nothing; two requests racing with one key both answer the
 * winner's, because the key's primary key lets only one transaction commit.
 */
const MINUTE_MS = 60_000;
const DAY_MS = 24 * 60 * MINUTE_MS;

/**
 * BROADCASTS_PER_MINUTE and BROADCASTS_PER_DAY per caller, over sliding windows, counted from the broadcasts the
 * caller stored (docs/broadcasts.md, "Limits"): each one reaches every inbox of its audience and may send as many
 * e-mails. A replay of an Idempotency-Key is answered before this, so it is never counted twice. The count is read
 * before the broadcast is stored, so requests of one caller at the same instant may pass together.
 */
async function assertUnderLimits(c: Context<AppEnv>, db: Database, caller: string, at: number): Promise<void> {
  const { BROADCASTS_PER_MINUTE: perMinute, BROADCASTS_PER_DAY: perDay } = c.get("config");
  const [recent] = await db
    .select({
      minute: sql<number>`sum(${broadcasts.createdAt} > ${nowIso(at - MINUTE_MS)})`,
      day: count(),
      // The oldest of the window's last `perMinute`/`perDay`: the limit frees up when it leaves the window.
      minuteOldest: sql<
        string | null
      >`(SELECT created_at FROM broadcasts WHERE created_by = ${caller} AND created_at > ${nowIso(at - MINUTE_MS)} ORDER BY created_at DESC LIMIT 1 OFFSET ${perMinute - 1})`,
      dayOldest: sql<
        string | null
      >`(SELECT created_at FROM broadcasts WHERE created_by = ${caller} AND created_at > ${nowIso(at - DAY_MS)} ORDER BY created_at DESC LIMIT 1 OFFSET ${perDay - 1})`,
    })
    .from(broadcasts)
    .where(and(eq(broadcasts.createdBy, caller), sql`${broadcasts.createdAt} > ${nowIso(at - DAY_MS)}`));
  const waitFor = (oldest: string | null | undefined, window: number) => (oldest ? (Date.parse(oldest) + window - at) / 1000 : window / 1000);
  if ((recent?.minute ?? 0) >= perMinute) throw rateLimited(perMinute, 60, waitFor(recent?.minuteOldest, MINUTE_MS));
  if ((recent?.day ?? 0) >= perDay) throw rateLimited(perDay, 86_400, waitFor(recent?.dayOldest, DAY_MS));
}

export async function createBroadcast(c: Context<AppEnv>, body: CreateBroadcast, key: string | undefined): Promise<Created> {
  const db = dbFor(c, "write");
  const caller = c.get("auth").user.id;
  const at = Date.now();
  if (key !== undefined) {
    const first = await replayed(db, caller, key, at);
    if (first) return first;
  }
  await assertUnderLimits(c, db, caller, at);
  // A listed id is a recipient once however often it is listed: the audience is read from `users`, one row each.
  const audience: BroadcastAudience = body.audience;
  const createdAt = nowIso(at);
  const recipients = await countAudience(db, audience, createdAt);
  const id = uuidv7(at);
  const steps = firstSteps({ id, audience });
  const keyRows =
    key === undefined
      ? []
      : [
          // A key older than the window is free again.
          db
            .delete(broadcastIdempotencyKeys)
            .where(
              and(
                eq(broadcastIdempotencyKeys.createdBy, caller),
                eq(broadcastIdempotencyKeys.key, key),
                sql`${broadcastIdempotencyKeys.createdAt} <= ${nowIso(at - KEY_WINDOW_MS)}`,
              ),
            ),
          db.insert(broadcastIdempotencyKeys).values({ createdBy: caller, key, broadcastId: id, recipients, createdAt }),
        ];
  try {
    await db.batch([
      db.insert(broadcasts).values({
        id,
        createdBy: caller,
        createdAt,
        audience,
        title: body.content.title.trim(),
        message: body.content.message.trim(),
        targets: body.targets,
        emailWhenUnreadAfterMs: body.email_when_unread_after,
        recipients,
      }),
      db.insert(broadcastShards).values(steps.map((s) => ({ broadcastId: id, shard: s.shard, cursor: "", updatedAt: createdAt }))),
      ...keyRows,
      auditInsert(db, c, {
        action: "create",
        resourceType: "notification_broadcast",
        resourceId: id,
        diff: { audience, recipients, email_when_unread_after_ms: body.email_when_unread_after },
      }),
    ]);
  } catch (error) {
    // The key's row is what failed when another request with the same key committed first: answer with its broadcast.
    const winner = key === undefined ? undefined : await replayed(db, caller, key, at);
    if (winner) return winner;
    throw error;
  }
  try {
    await sendSteps(c.env, steps);
  } catch (error) {
    // Stored, so not lost: the cron restarts shards that have not moved for a minute.
    console.error(`[herald] broadcast ${id}: starting the fan-out failed (${error instanceof Error ? error.name : "error"}); the cron restarts it`);
  }
  return { id, recipients };
}

/** The progress answer of one broadcast row and its summed batches (docs/broadcasts.md, "Progress"). */
function toProgress(broadcast: typeof broadcasts.$inferSelect, delivered: number, failed: number) {
  return {
    id: broadcast.id,
    created_by: broadcast.createdBy,
    created_at: broadcast.createdAt,
    recipients: broadcast.recipients,
    delivered,
    failed,
    pending: Math.max(0, broadcast.recipients - delivered - failed),
    completed_at: broadcast.completedAt,
  };
}

/** `GET /notifications/broadcasts/{id}`: the progress, summed over the batches' rows; undefined when there is none. */
export async function broadcastProgress(db: Database, id: string) {
  const [found, totals] = await db.batch([
    db.select().from(broadcasts).where(eq(broadcasts.id, id)),
    db
      .select({
        delivered: sql<number>`coalesce(sum(${broadcastBatches.delivered}), 0)`,
        failed: sql<number>`coalesce(sum(${broadcastBatches.failed}), 0)`,
      })
      .from(broadcastBatches)
      .where(eq(broadcastBatches.broadcastId, id)),
  ]);
  const broadcast = found[0];
  if (!broadcast) return undefined;
  return toProgress(broadcast, Number(totals[0]?.delivered ?? 0), Number(totals[0]?.failed ?? 0));
}

/**
 * `GET /notifications/broadcasts` (docs/broadcasts.md): newest first, keyset-paged on (created_at, id) as the inbox
 * list is, so broadcasts of one millisecond are never skipped or repeated. The cursor is looked up in the same batch
 * as the page; an id that names no broadcast answers undefined (the route's 400). Each row's progress is summed by a
 * correlated subquery, which reads only that broadcast's batch rows through their primary key.
 */
export async function listBroadcasts(db: Database, startingBefore: string | undefined, limit: number) {
  const older =
    startingBefore === undefined
      ? undefined
      : sql`(${broadcasts.createdAt}, ${broadcasts.id}) < (SELECT created_at, id FROM broadcasts WHERE id = ${startingBefore})`;
  const [cursor, page] = await db.batch([
    db
      .select({ id: broadcasts.id })
      .from(broadcasts)
      .where(eq(broadcasts.id, startingBefore ?? "")),
    db
      .select({
        broadcast: broadcasts,
        delivered: sql<number>`(SELECT coalesce(sum(delivered), 0) FROM broadcast_batches WHERE broadcast_id = ${broadcasts.id})`,
        failed: sql<number>`(SELECT coalesce(sum(failed), 0) FROM broadcast_batches WHERE broadcast_id = ${broadcasts.id})`,
      })
      .from(broadcasts)
      .where(older)
      .orderBy(desc(broadcasts.createdAt), desc(broadcasts.id))
      .limit(limit),
  ]);
  if (startingBefore !== undefined && cursor.length === 0) return undefined;
  return page.map((row) => ({ ...toProgress(row.broadcast, Number(row.delivered), Number(row.failed)), title: row.broadcast.title }));
}
