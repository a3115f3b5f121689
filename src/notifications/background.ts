import { and, asc, eq, inArray, isNull, lt, lte, or } from "drizzle-orm";
import { purgePasscodeMails, requestPasscode } from "../auth/password-reset";
import { database } from "../db/client";
import { notificationMessages, notificationTemplates } from "../db/schema";
import { inSlices } from "../db/slices";
import type { Env, NotificationQueueMessage } from "../env";
import { nowIso } from "../lib/crypto";
import { dispatchMessage, kickMessages } from "./dispatch";
import { readPaused } from "./settings";
import { FINISHED_STATUSES, moveMessages } from "./status";

export const DEAD_LETTER_QUEUE = "herald-notifications-dlq";
const PURGE_AFTER_MS = 7 * 24 * 60 * 60 * 1000;
/**
 * The cron leaves fresh messages to the normal path (direct send, queue, scheduled retry) and only picks up
 * stragglers. Re-driving a message that is also still queued is harmless: the lease lets only one send happen.
 */
const STRAGGLER_AGE_MS = 30_000;
const REDRIVE_BATCH = 500;

/**
 * The queue consumer. Our retry schedule lives in D1 (dispatchMessage re-enqueues with a delay), so a message is
 * acked once handled; only an unexpected crash asks the queue to retry, and what keeps crashing reaches the
 * dead-letter queue, whose consumer records it as a permanent failure with the reason.
 */
export async function handleQueue(
  batch: MessageBatch<NotificationQueueMessage>,
  env: Env,
  ctx: Pick<ExecutionContext, "waitUntil"> = { waitUntil: () => undefined },
  handOffMs = HAND_OFF_MS,
): Promise<void> {
  if (batch.queue === DEAD_LETTER_QUEUE) {
    const db = database(env.DB);
    // Whatever was not finished yet: pending, leased or waiting for a retry.
    for (const ids of inSlices(batch.messages.flatMap((m) => idsOf(m.body)))) {
      await moveMessages(db, inArray(notificationMessages.id, ids), "permanent_failure", {
        statusReason: "dead-lettered: the consumer failed on every queue retry",
        leasedUntil: null,
      });
    }
    batch.ackAll();
    return;
  }
  // Concurrently: a receiver that hangs holds up only its own message, never the rest of the batch. When one id of
  // a multi-id message crashes, the whole message is retried: the ids already sent are no longer leasable.
  // Passcode requests first, one after another in the order they were asked: each is a few D1 statements, and the
  // mails they enqueue then go out with the rest of this batch's lane.
  for (const message of batch.messages) {
    if (!("passcodeRequest" in message.body)) continue;
    try {
      await requestPasscode(env, ctx, message.body.passcodeRequest);
      message.ack();
    } catch (error) {
      console.error(`[herald] passcode request failed: ${error instanceof Error ? error.name : "error"}`);
      message.retry();
    }
  }
  await Promise.all(
    batch.messages.map(async (message) => {
      if ("passcodeRequest" in message.body) return;
      const sends = Promise.all(idsOf(message.body).map((id) => dispatchMessage(env, id)));
      // A send still running after the hand-off time goes on in the background: the batch returns, so the consumer
      // takes the next one instead of waiting out a stalled server (up to RFC 5321's minutes). The message is acked:
      // its lease, renewed while the send lives, and the cron own it from here (docs/email.md, "Two lanes").
      ctx.waitUntil(sends.catch(() => undefined));
      let timer: ReturnType<typeof setTimeout> | undefined;
      const handedOff = new Promise<"handed-off">((resolve) => {
        timer = setTimeout(() => resolve("handed-off"), handOffMs);
      });
      try {
        await Promise.race([sends, handedOff]);
        message.ack();
      } catch (error) {
        console.error(`[herald] queue consumer failed on message ${message.id}: ${error instanceof Error ? error.name : "error"}`);
        message.retry();
      } finally {
        clearTimeout(timer);
      }
    }),
  );
}

/** How long the consumer waits for a batch's sends before it hands the slow ones off (see handleQueue). */
const HAND_OFF_MS = 10_000;

/** The message log's ids a message names; a passcode request names none. */
function idsOf(body: NotificationQueueMessage): string[] {
  if ("passcodeRequest" in body) return [];
  return "messageIds" in body ? body.messageIds : [body.messageId];
}

/**
 * Sends every due message again: expired leases (a worker died mid-send) become retryable, then due messages are
 * kicked oldest first. `minAgeMs` 0 is the resume path (everything pending, now). `at` is the scheduling clock.
 */
export async function redrive(env: Env, minAgeMs: number, at = Date.now()): Promise<number> {
  const db = database(env.DB);
  const now = nowIso(at);
  await moveMessages(db, lt(notificationMessages.leasedUntil, now), "temporary_failure", {
    statusReason: "lease expired before the send finished",
    leasedUntil: null,
    updatedAt: now,
  });
  if (await readPaused(db)) return 0;
  const cutoff = nowIso(at - minAgeMs);
  const due = await db
    .select({
      id: notificationMessages.id,
      method: notificationMessages.method,
      nextRetryAfter: notificationMessages.nextRetryAfter,
      mandatory: notificationTemplates.mandatory,
    })
    .from(notificationMessages)
    .leftJoin(notificationTemplates, eq(notificationTemplates.id, notificationMessages.templateId))
    .where(
      or(
        // Pending past the straggler age: its direct send or queue message was lost. A read-aware e-mail waits
        // for its due time (`next_retry_after`), here as on the queue.
        and(
          eq(notificationMessages.status, "pending"),
          lte(notificationMessages.createdAt, cutoff),
          or(isNull(notificationMessages.nextRetryAfter), lte(notificationMessages.nextRetryAfter, now)),
        ),
        // Every retry that is due (a lease that expired above has no retry time: due at once).
        and(
          eq(notificationMessages.status, "temporary_failure"),
          or(isNull(notificationMessages.nextRetryAfter), lte(notificationMessages.nextRetryAfter, now)),
        ),
      ),
    )
    .orderBy(asc(notificationMessages.createdAt), asc(notificationMessages.id))
    .limit(REDRIVE_BATCH);
  await kickMessages(env, due, at);
  return due.length;
}

/** Finished messages (sent, failed for good, inhibited, skipped) are kept 7 days for the admin view, then purged. */
async function purgeFinished(env: Env): Promise<void> {
  await database(env.DB)
    .delete(notificationMessages)
    .where(
      and(inArray(notificationMessages.status, [...FINISHED_STATUSES]), lt(notificationMessages.updatedAt, nowIso(Date.now() - PURGE_AFTER_MS))),
    );
}

export async function handleScheduled(env: Env): Promise<void> {
  await redrive(env, STRAGGLER_AGE_MS);
  await purgeFinished(env);
  await purgePasscodeMails(env);
}
