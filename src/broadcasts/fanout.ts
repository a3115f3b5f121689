import { and, asc, eq, gt, gte, isNull, lt, sql } from "drizzle-orm";
import { applySwitch, plannedCopies } from "../channels/model";
import { destinationQueriesForMany, destinationsByUser } from "../channels/store";
import { getConfig } from "../config/config";
import { type Database, database } from "../db/client";
import {
  type BroadcastRow,
  broadcastBatches,
  broadcastIdempotencyKeys,
  broadcastShards,
  broadcasts,
  type MessageRow,
  notificationMessages,
  notificationPreferences,
  notificationSchedules,
  notificationTemplates,
  type TemplateRow,
  users,
} from "../db/schema";
import type { BroadcastQueueMessage, Env } from "../env";
import { userInbox } from "../inbox/address";
import { inboxLimits } from "../inbox/retention";
import { derivedUuid, nowIso } from "../lib/crypto";
import { limiter } from "../lib/limit";
import { enqueueExternal } from "../notifications/dispatch";
import { initialState, isReadAware, messagePayload } from "../notifications/enqueue";
import { renderTemplate } from "../notifications/render";
import { isPaused, pausedQuery } from "../notifications/settings";
import { TEMPLATE_IDS } from "../notifications/templates";
import { holdForDigest, holdForQuietHours } from "../schedule/hold";
import type { Schedule } from "../schedule/model";
import { scheduleOf } from "../schedule/store";
import { audienceCondition, shardCount, shardRange } from "./audience";

/**
 * The broadcast fan-out (docs/broadcasts.md): resolution steps page the audience out of D1 and turn each page into
 * delivery messages of 100 recipients; a delivery writes each recipient's inbox item and the message-log rows of
 * their e-mail/webhook copies, then its progress row. Every write is idempotent, so the queue may redeliver any step.
 */

export const BROADCAST_QUEUE = "herald-broadcasts";
export const BROADCAST_DEAD_LETTER_QUEUE = "herald-broadcasts-dlq";

export type ResolveStep = Extract<BroadcastQueueMessage, { resolve: string }>;
export type DeliveryStep = Extract<BroadcastQueueMessage, { deliver: string }>;

/** User ids read per resolution step (docs/broadcasts-at-scale.md: a keyset page of 5,000). */
const RESOLVE_PAGE = 5000;
/** Recipients per delivery message. */
const RECIPIENTS_PER_DELIVERY = 100;
/** Delivery messages per `sendBatch`: 50 × ~4 KB stays under the 256 KB a call may carry. */
const DELIVERIES_PER_SEND = 50;
/** Inbox RPCs in flight per consumer invocation. */
export const RPCS_IN_FLIGHT = 50;
/** A shard whose cursor has not moved for this long lost its chain (a crash between steps); the cron restarts it. */
const STALLED_AFTER_MS = 60_000;
const KEYS_KEPT_MS = 24 * 60 * 60 * 1000;

/** Raised by a delivery while the notifier is paused: the step is put back on the queue for later, not retried. */
export class NotifierPaused extends Error {
  override name = "NotifierPaused";
}

/**
 * Once every shard is resolved, `recipients` becomes what the shards planned (users suspended between the POST's
 * count and their page are not in it).
 */
function settleRecipients(db: Database, id: string) {
  return db
    .update(broadcasts)
    .set({ recipients: sql`(SELECT coalesce(sum(planned), 0) FROM broadcast_shards WHERE broadcast_id = ${id})` })
    .where(and(eq(broadcasts.id, id), sql`NOT EXISTS (SELECT 1 FROM broadcast_shards WHERE broadcast_id = ${id} AND done = 0)`));
}

/** Sets `completed_at` the first time everything is resolved and every recipient is delivered or failed. */
function completeIfDone(db: Database, id: string, now: string) {
  return db
    .update(broadcasts)
    .set({ completedAt: now })
    .where(
      and(
        eq(broadcasts.id, id),
        isNull(broadcasts.completedAt),
        sql`NOT EXISTS (SELECT 1 FROM broadcast_shards WHERE broadcast_id = ${id} AND done = 0)`,
        sql`(SELECT coalesce(sum(delivered + failed), 0) FROM broadcast_batches WHERE broadcast_id = ${id}) >= ${broadcasts.recipients}`,
      ),
    );
}

/** The first step of every shard, sent by the POST and by the cron for a chain that stalled. */
export function firstSteps(broadcast: Pick<BroadcastRow, "id" | "audience">): ResolveStep[] {
  return Array.from({ length: shardCount(broadcast.audience) }, (_, shard) => ({ resolve: broadcast.id, shard, cursor: "" }));
}

export async function sendSteps(env: Env, steps: BroadcastQueueMessage[]): Promise<void> {
  for (let i = 0; i < steps.length; i += DELIVERIES_PER_SEND) {
    await env.BROADCAST_QUEUE.sendBatch(steps.slice(i, i + DELIVERIES_PER_SEND).map((body) => ({ body })));
  }
}

/**
 * One page of one shard: reads up to 5,000 recipient ids after the shard's cursor, sends them as delivery messages,
 * then moves the cursor by compare-and-set and sends the next step. A step whose cursor is no longer the shard's
 * (a redelivery of a step that already moved it) does nothing; if the chain broke between the move and the next
 * send, the cron restarts it from the stored cursor (`reviveStalledShards`).
 */
export async function resolveStep(env: Env, step: ResolveStep): Promise<void> {
  const db = database(env.DB);
  const [found, shards] = await db.batch([
    db.select().from(broadcasts).where(eq(broadcasts.id, step.resolve)),
    db
      .select()
      .from(broadcastShards)
      .where(and(eq(broadcastShards.broadcastId, step.resolve), eq(broadcastShards.shard, step.shard))),
  ]);
  const broadcast = found[0];
  const shard = shards[0];
  if (!broadcast || !shard || shard.done || shard.cursor !== step.cursor) return;

  const { low, high } = shardRange(step.shard, shardCount(broadcast.audience));
  const page = await db
    .select({ id: users.id })
    .from(users)
    .where(and(audienceCondition(broadcast.audience, broadcast.createdAt), gte(users.id, low), lt(users.id, high), gt(users.id, step.cursor)))
    .orderBy(asc(users.id))
    .limit(RESOLVE_PAGE);
  const ids = page.map((u) => u.id);
  const deliveries: DeliveryStep[] = [];
  for (let i = 0; i < ids.length; i += RECIPIENTS_PER_DELIVERY) {
    const userIds = ids.slice(i, i + RECIPIENTS_PER_DELIVERY);
    deliveries.push({ deliver: broadcast.id, batch: `${step.shard}:${userIds[0]}`, userIds });
  }
  await sendSteps(env, deliveries);

  const cursor = ids.at(-1) ?? step.cursor;
  const done = ids.length < RESOLVE_PAGE;
  const now = nowIso();
  const [moved] = await db.batch([
    db
      .update(broadcastShards)
      .set({ cursor, planned: sql`${broadcastShards.planned} + ${ids.length}`, done, updatedAt: now })
      .where(
        and(
          eq(broadcastShards.broadcastId, broadcast.id),
          eq(broadcastShards.shard, step.shard),
          eq(broadcastShards.cursor, step.cursor),
          eq(broadcastShards.done, false),
        ),
      )
      .returning({ shard: broadcastShards.shard }),
    settleRecipients(db, broadcast.id),
    completeIfDone(db, broadcast.id, now),
  ]);
  if (moved.length > 0 && !done) await env.BROADCAST_QUEUE.send({ resolve: broadcast.id, shard: step.shard, cursor });
}

/**
 * The inbox item of one recipient of one broadcast. Its id is derived from (broadcast, user), and the object's
 * `deliver` stores an id once, so a redelivered batch adds nothing.
 */
function inboxItemId(broadcastId: string, userId: string): Promise<string> {
  return derivedUuid("broadcast", broadcastId, userId);
}

/** A delivery message that must be retried, and how many of its recipients' inbox writes failed. */
export interface FailedDelivery {
  step: DeliveryStep;
  failed: number;
}

/**
 * One consumer invocation's delivery messages (up to 10 × 100 recipients), with one D1 read and one D1 write for all
 * of them (docs/broadcasts-at-scale.md). The inbox items first, at most `run`'s limit in flight; then, in one batch,
 * the message-log rows of the e-mail/webhook copies (derived ids, so a redelivery inserts nothing new), each
 * message's progress row (absolute counts, so a redelivery rewrites it) and the completion check; then the copies
 * onto the notifications queue. Returns the messages with a failed inbox write: the queue retries them whole, and
 * the items already stored are found, not written twice.
 */
export async function deliverSteps(
  env: Env,
  steps: readonly DeliveryStep[],
  run: <T>(task: () => Promise<T>) => Promise<T> = limiter(RPCS_IN_FLIGHT),
): Promise<FailedDelivery[]> {
  const config = getConfig(env);
  const db = database(env.DB);
  const broadcastIds = JSON.stringify([...new Set(steps.map((s) => s.deliver))]);
  const userIds = JSON.stringify([...new Set(steps.flatMap((s) => s.userIds))]);
  const [found, templates, recipients, preferences, paused, schedules, subscriptions, targets, switchRows] = await db.batch([
    db.select().from(broadcasts).where(sql`${broadcasts.id} IN (SELECT value FROM json_each(${broadcastIds}))`),
    db.select().from(notificationTemplates).where(eq(notificationTemplates.id, TEMPLATE_IDS.broadcast)),
    db
      .select({ id: users.id, email: users.email, name: users.name, username: users.username })
      .from(users)
      // A recipient deleted since the audience was planned receives nothing (docs/privacy.md, "Erasure").
      .where(and(sql`${users.id} IN (SELECT value FROM json_each(${userIds}))`, eq(users.deleted, false))),
    db
      .select({ userId: notificationPreferences.userId, disabled: notificationPreferences.disabled })
      .from(notificationPreferences)
      .where(
        and(
          eq(notificationPreferences.templateId, TEMPLATE_IDS.broadcast),
          sql`${notificationPreferences.userId} IN (SELECT value FROM json_each(${userIds}))`,
        ),
      ),
    pausedQuery(db),
    db.select().from(notificationSchedules).where(sql`${notificationSchedules.userId} IN (SELECT value FROM json_each(${userIds}))`),
    ...destinationQueriesForMany(db, userIds, TEMPLATE_IDS.broadcast),
  ]);
  const template = templates[0];
  if (!template) throw new Error("the Broadcast template is missing (drizzle/0006_broadcasts.sql)");
  if (isPaused(paused)) throw new NotifierPaused();
  const byId = new Map(found.map((b) => [b.id, b]));
  const people = new Map(recipients.map((u) => [u.id, u]));
  const disabledBy = new Map(preferences.map((p) => [p.userId, p.disabled]));
  const reachOf = destinationsByUser(subscriptions, targets, switchRows);
  const scheduleFor = new Map(schedules.map((row) => [row.userId, scheduleOf(row)]));

  const outcomes = await Promise.all(
    steps.map(async (step) => {
      const broadcast = byId.get(step.deliver);
      if (!broadcast) return undefined;
      const live = step.userIds.filter((userId) => people.has(userId));
      const itemIds = new Map(await Promise.all(live.map(async (userId) => [userId, await inboxItemId(broadcast.id, userId)] as const)));
      // Those deleted meanwhile count as delivered: there is no one left to deliver to, and the progress must converge.
      const delivered = (await deliverItems(env, broadcast, template, config, itemIds, run)) + (step.userIds.length - live.length);
      const copies = await externalCopies(config, broadcast, template, itemIds, people, disabledBy, reachOf);
      await holdBySchedule(env, copies, template, people, scheduleFor);
      return { step, broadcast, delivered, copies };
    }),
  );
  const handled = outcomes.filter((o) => o !== undefined);
  const copies = handled.flatMap((o) => o.copies);
  const now = nowIso();
  const writes = [
    ...(copies.length > 0 ? [insertCopies(db, copies)] : []),
    ...handled.map(({ step, broadcast, delivered }) =>
      db
        .insert(broadcastBatches)
        .values({ broadcastId: broadcast.id, batch: step.batch, recipients: step.userIds.length, delivered, failed: 0, updatedAt: now })
        .onConflictDoUpdate({
          target: [broadcastBatches.broadcastId, broadcastBatches.batch],
          // Items stored by an earlier attempt stay stored: the count never goes down.
          set: { delivered: sql`max(${broadcastBatches.delivered}, excluded.delivered)`, updatedAt: now },
        }),
    ),
    ...[...new Set(handled.map((o) => o.broadcast.id))].map((id) => completeIfDone(db, id, now)),
  ];
  const [first, ...rest] = writes;
  if (first) await db.batch([first, ...rest]);
  await enqueueExternal(
    env,
    copies.filter((m) => m.status === "pending"),
  );
  return handled.filter((o) => o.delivered < o.step.userIds.length).map((o) => ({ step: o.step, failed: o.step.userIds.length - o.delivered }));
}

/** One delivery message on its own (a test, or a consumer batch of one): throws when an inbox write failed. */
export async function deliverStep(env: Env, step: DeliveryStep, run?: <T>(task: () => Promise<T>) => Promise<T>): Promise<void> {
  const [failed] = await deliverSteps(env, [step], run);
  if (failed) throw new Error(`${failed.failed} of ${step.userIds.length} inbox deliveries failed`);
}

/** Writes each recipient's inbox item; returns how many are stored (now or by an earlier attempt). */
async function deliverItems(
  env: Env,
  broadcast: BroadcastRow,
  template: TemplateRow,
  config: ReturnType<typeof getConfig>,
  itemIds: Map<string, string>,
  run: <T>(task: () => Promise<T>) => Promise<T>,
): Promise<number> {
  // The Broadcast template's text is only the broadcast's own labels, so one rendering serves every recipient.
  const rendered = renderTemplate(template, {
    user: { name: "", username: "", email: "" },
    labels: labelsOf(broadcast),
    data: {},
    baseUrl: config.ACCESS_URL,
  });
  // Each recipient's object keeps the deployment's retention limits (docs/inbox.md, "Retention").
  const limits = inboxLimits(config);
  let delivered = 0;
  await Promise.all(
    [...itemIds].map(([userId, id]) =>
      run(async () => {
        try {
          await userInbox(env, userId).deliver(
            {
              id,
              userId,
              templateId: template.id,
              templateGroup: template.group,
              targets: broadcast.targets,
              title: rendered.titleMarkdown,
              content: rendered.bodyMarkdown,
              icon: "",
              actions: rendered.actions,
              createdAt: broadcast.createdAt,
            },
            limits,
          );
          delivered += 1;
        } catch (error) {
          console.error(`[herald] broadcast ${broadcast.id}: an inbox delivery failed: ${error instanceof Error ? error.name : "error"}`);
        }
      }),
    ),
  );
  return delivered;
}

/**
 * The message-log rows of a message's external copies, as the recipients' preferences allow (docs/broadcasts.md):
 * the e-mail/webhook copy, and one per push subscription and verified target (docs/channels.md), for each
 * recipient's inbox item (`itemIds`: user id → item id) whose user is known. Ids are derived from (broadcast, user,
 * method, destination), so a redelivered batch inserts nothing new.
 */
async function externalCopies(
  config: ReturnType<typeof getConfig>,
  broadcast: BroadcastRow,
  template: TemplateRow,
  itemIds: Map<string, string>,
  people: Map<string, { id: string; email: string; name: string; username: string }>,
  disabledBy: Map<string, boolean>,
  reachOf: ReturnType<typeof destinationsByUser>,
): Promise<MessageRow[]> {
  const templateMethod = template.method || config.NOTIFICATIONS_METHOD;
  const at = Date.now();
  const now = nowIso(at);
  const labels = labelsOf(broadcast);
  const copies = [...itemIds].flatMap(([userId, itemId]) => {
    const user = people.get(userId);
    if (!user) return [];
    const preference = disabledBy.get(user.id);
    const disabled = !template.mandatory && (preference ?? !template.enabledByDefault);
    const { destinations, switches } = reachOf(user.id);
    return plannedCopies([templateMethod], destinations, template, disabled).map((copy) => ({
      ...copy,
      user,
      itemId,
      preference,
      disabled,
      switches,
    }));
  });
  return Promise.all(
    copies.map(async ({ method, destination, user, itemId, preference, disabled, switches }): Promise<MessageRow> => {
      const readAware = isReadAware(method, broadcast.emailWhenUnreadAfterMs, true);
      const initial = initialState(config, method, disabled ? (preference !== undefined ? "preference" : "default") : undefined);
      return {
        id: await derivedUuid("broadcast", broadcast.id, user.id, method, ...(destination === null ? [] : [destination])),
        // The inbox item's id: a read-aware e-mail asks the recipient's object about this item.
        notificationId: itemId,
        templateId: template.id,
        userId: user.id,
        method,
        destination,
        ...applySwitch(initial, switches, { method, destination }, template.mandatory),
        payload: messagePayload(template, user, { labels, targets: broadcast.targets }),
        targets: broadcast.targets,
        createdBy: broadcast.createdBy,
        attempts: 0,
        nextRetryAfter: readAware ? nowIso(at + broadcast.emailWhenUnreadAfterMs) : null,
        leasedUntil: null,
        createdAt: now,
        updatedAt: now,
        sentAt: null,
        sendIfUnread: readAware,
      };
    }),
  );
}

/**
 * Quiet hours and digests apply to a broadcast's copies as to any notification's (docs/schedule.md): each recipient
 * with a schedule has theirs held. Only recipients with a digest cost an RPC (their object opens or joins a window).
 */
async function holdBySchedule(
  env: Env,
  copies: MessageRow[],
  template: TemplateRow,
  people: Map<string, { id: string; email: string; name: string; username: string }>,
  scheduleFor: Map<string, Schedule>,
): Promise<void> {
  const at = Date.now();
  const byUser = new Map<string, MessageRow[]>();
  for (const copy of copies) {
    if (!scheduleFor.has(copy.userId)) continue;
    const rows = byUser.get(copy.userId);
    if (rows) rows.push(copy);
    else byUser.set(copy.userId, [copy]);
  }
  await Promise.all(
    [...byUser].map(async ([userId, rows]) => {
      const schedule = scheduleFor.get(userId);
      const user = people.get(userId);
      if (!schedule || !user) return;
      holdForQuietHours(rows, template, schedule, at);
      if (schedule.digest.kind !== "off" && !template.mandatory) await holdForDigest(env, rows, schedule, user, at);
    }),
  );
}

/** The Broadcast template's labels: the broadcast's own title and message, as N1 passes them to its template. */
function labelsOf(broadcast: BroadcastRow): Record<string, string> {
  return { custom_title: broadcast.title, custom_message: broadcast.message };
}

/**
 * The message-log rows of a consumer batch's copies (up to 1,000) in one statement: the rows travel as one JSON
 * parameter (D1 binds at most 100), and a row whose derived id is already there (a redelivered batch) is left as it
 * is, whatever became of it since. The SELECT lists every column in the schema's order (src/db/schema.ts), as Drizzle's INSERT … SELECT names them.
 */
function insertCopies(db: Database, rows: MessageRow[]) {
  const json = JSON.stringify(
    rows.map((r) => ({
      id: r.id,
      notification_id: r.notificationId,
      template_id: r.templateId,
      user_id: r.userId,
      method: r.method,
      destination: r.destination,
      status: r.status,
      status_reason: r.statusReason,
      payload: r.payload,
      targets: r.targets,
      created_by: r.createdBy,
      next_retry_after: r.nextRetryAfter,
      created_at: r.createdAt,
      send_if_unread: r.sendIfUnread ? 1 : 0,
    })),
  );
  // `WHERE true` lets SQLite read ON CONFLICT as the upsert clause after a SELECT.
  return db
    .insert(notificationMessages)
    .select(
      sql`SELECT value ->> 'id', value ->> 'notification_id', value ->> 'template_id', value ->> 'user_id', value ->> 'method',
        value ->> 'destination', value ->> 'status', value ->> 'status_reason', value -> 'payload', value -> 'targets', value ->> 'created_by', 0,
        value ->> 'next_retry_after', NULL, value ->> 'created_at', value ->> 'created_at', NULL, value ->> 'send_if_unread'
        FROM json_each(${json}) WHERE true`,
    )
    .onConflictDoNothing();
}

/**
 * Delivery messages that failed on every queue retry: their recipients not yet delivered are recorded as failed, so
 * the progress converges. A resolution step is left to the cron, which restarts its shard from the stored cursor.
 */
export async function deadLetterSteps(env: Env, steps: BroadcastQueueMessage[]): Promise<void> {
  const db = database(env.DB);
  const now = nowIso();
  for (const step of steps) {
    if (!("deliver" in step)) {
      console.error(`[herald] broadcast ${step.resolve}: a resolution step of shard ${step.shard} was dead-lettered; the cron restarts it`);
      continue;
    }
    const size = step.userIds.length;
    await db.batch([
      db
        .insert(broadcastBatches)
        .values({ broadcastId: step.deliver, batch: step.batch, recipients: size, delivered: 0, failed: size, updatedAt: now })
        .onConflictDoUpdate({
          target: [broadcastBatches.broadcastId, broadcastBatches.batch],
          set: { failed: sql`${broadcastBatches.recipients} - ${broadcastBatches.delivered}`, updatedAt: now },
        }),
      completeIfDone(db, step.deliver, now),
    ]);
  }
}

/** The cron's part (every minute): restart shards whose chain stalled, and forget idempotency keys older than 24 hours. */
export async function broadcastHousekeeping(env: Env, at = Date.now()): Promise<void> {
  const db = database(env.DB);
  const now = nowIso(at);
  const stalled = await db
    .select({ broadcastId: broadcastShards.broadcastId, shard: broadcastShards.shard, cursor: broadcastShards.cursor })
    .from(broadcastShards)
    .where(and(eq(broadcastShards.done, false), lt(broadcastShards.updatedAt, nowIso(at - STALLED_AFTER_MS))))
    .limit(100);
  // Touched first, in one batch, so a restart that fails to send is tried again a minute later, not at every run.
  const [first, ...rest] = stalled.map((s) =>
    db
      .update(broadcastShards)
      .set({ updatedAt: now })
      .where(and(eq(broadcastShards.broadcastId, s.broadcastId), eq(broadcastShards.shard, s.shard))),
  );
  if (first) await db.batch([first, ...rest]);
  await sendSteps(
    env,
    stalled.map((s) => ({ resolve: s.broadcastId, shard: s.shard, cursor: s.cursor })),
  );
  await db.delete(broadcastIdempotencyKeys).where(lt(broadcastIdempotencyKeys.createdAt, nowIso(at - KEYS_KEPT_MS)));
}
