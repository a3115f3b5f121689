import { and, eq, isNull, lte, or, sql } from "drizzle-orm";
import { type Config, getConfig } from "../config/config";
import { type Database, database } from "../db/client";
import { type DispatchMethod, type MessageRow, notificationMessages, notificationTemplates, type TemplateRow, users } from "../db/schema";
import type { Env, NotificationQueueMessage } from "../env";
import { userInbox } from "../inbox/address";
import type { DigestFate } from "../inbox/digests";
import { nowIso } from "../lib/crypto";
import { DIGEST_TEMPLATE, renderDigest, settleHeld, settleListed } from "../schedule/digest";
import { ScheduleMessages } from "../schedule/messages";
import { TARGET_VERIFICATION_TEMPLATE } from "../targets/template";
import { sendToInbox } from "./channels/inbox";
import { sendPush } from "./channels/push";
import { sendEmail } from "./channels/smtp";
import { sendTarget } from "./channels/target";
import { type Channel, DeliveryError } from "./channels/types";
import { sendWebhook } from "./channels/webhook";
import { renderTemplate } from "./render";
import { unseal } from "./sealed";
import { readPaused } from "./settings";
import { moveMessages } from "./status";
import { DIGEST_TEMPLATE_ID, TARGET_VERIFICATION_TEMPLATE_ID, TEMPLATE_IDS } from "./templates";

const CHANNELS: Record<DispatchMethod, Channel> = { smtp: sendEmail, webhook: sendWebhook, inbox: sendToInbox, push: sendPush, target: sendTarget };
/**
 * How long one send may take: inside the queue consumer's 15-minute wall-clock limit, and long enough for RFC 5321's
 * 10-minute wait for the final reply to DATA (docs/email.md).
 */
const SEND_BUDGET_MS = 13 * 60_000;
/**
 * A lease is short and renewed while its send is alive (docs/email.md, "Never lose, never duplicate"): at each SMTP
 * stage reached and every RENEW_EVERY_MS while a reply is awaited. A holder that dies stops renewing, so the cron
 * takes the message back about a minute later, not after the longest possible send.
 */
const LEASE_MS = 60_000;
const RENEW_EVERY_MS = 20_000;
const MAX_BACKOFF_MS = 60 * 60 * 1000;

/** `not_taken`: paused, not due yet, or another consumer holds it; `skipped`: a read-aware e-mail whose inbox copy was read. */
export type DispatchOutcome = "sent" | "retry" | "failed" | "skipped" | "not_taken";

/** The message-log reason of a passcode e-mail that could not be sent before its code expired (docs/email.md). */
export const PASSCODE_EXPIRED = "the passcode expired (OTP_TTL) before it could be sent; the user can ask for a new one";

/** When a message stops being worth sending: a passcode when its code expires; anything else never. */
function expiryOf(config: Config, message: MessageRow): number | undefined {
  return message.templateId === TEMPLATE_IDS.oneTimePasscode ? Date.parse(message.createdAt) + config.OTP_TTL : undefined;
}

/**
 * The queue a message travels: mandatory templates (passcodes, security notices) have a lane of their own, so they
 * never wait behind a batch held up by a slow receiver (docs/email.md, "Two lanes").
 */
function laneOf(env: Env, mandatory: boolean): Queue<NotificationQueueMessage> {
  return mandatory ? env.NOTIFICATION_URGENT_QUEUE : env.NOTIFICATION_QUEUE;
}

/** The message-log reason of a read-aware e-mail that was not sent (docs/broadcasts.md). */
export const READ_BEFORE_DUE = "read in the inbox before the e-mail was due";

/** Exponential backoff with jitter: attempt n waits between half and all of base·2^(n-1), capped at an hour. */
function backoffMs(config: Config, attempts: number): number {
  const ceiling = Math.min(MAX_BACKOFF_MS, config.NOTIFICATIONS_RETRY_BASE * 2 ** Math.min(30, Math.max(0, attempts - 1)));
  return Math.round(ceiling / 2 + Math.random() * (ceiling / 2));
}

/** "4d 23h", "2h 5m", "90s": how long a message was tried, for its final reason. */
function formatAge(ms: number): string {
  const s = Math.floor(ms / 1000);
  const [d, h, m] = [Math.floor(s / 86_400), Math.floor((s % 86_400) / 3600), Math.floor((s % 3600) / 60)];
  if (d > 0) return `${d}d ${h}h`;
  if (h > 0) return `${h}h ${m}m`;
  return m > 0 ? `${m}m ${s % 60}s` : `${s}s`;
}

/** Takes the message if it is due: one UPDATE decides, so two consumers never send the same message. */
async function lease(db: Database, id: string, at: number, leaseMs: number): Promise<MessageRow | undefined> {
  const now = nowIso(at);
  const due = and(eq(notificationMessages.id, id), or(isNull(notificationMessages.nextRetryAfter), lte(notificationMessages.nextRetryAfter, now)));
  const rows = await moveMessages(db, due, "leased", {
    leasedUntil: nowIso(at + leaseMs),
    attempts: sql`${notificationMessages.attempts} + 1`,
    updatedAt: now,
  }).returning();
  return rows[0];
}

/** The lease on a message was taken back (it expired and the cron re-drove it): this holder must not send. */
class LeaseLost extends Error {
  override name = "LeaseLost";
}

/**
 * Keeps a message's lease while its send is alive. Each renewal is one conditional UPDATE that also checks the lease
 * is still the one this holder set, so a holder whose lease expired learns it before its next command instead of
 * sending a second copy. Times are on the scheduling clock (`at` plus the real time elapsed since the lease).
 */
class LeaseKeeper {
  private until: string;
  private renewedAt = Date.now();
  private readonly startedAt = Date.now();
  private lost = false;
  private inFlight: Promise<void> = Promise.resolve();
  private timer: ReturnType<typeof setInterval> | undefined;

  constructor(
    private readonly db: Database,
    private readonly id: string,
    private readonly at: number,
    private readonly leaseMs: number,
    leasedUntil: string,
  ) {
    this.until = leasedUntil;
  }

  /** Renews on a timer too: a stage can legitimately wait minutes for a reply (the final one up to ten). */
  start(): void {
    this.timer = setInterval(() => void this.renew(), Math.min(RENEW_EVERY_MS, this.leaseMs / 3));
  }

  /** Called as each SMTP stage is reached: renews when due, and stops the send if the lease was lost. */
  readonly progress = async (): Promise<void> => {
    if (Date.now() - this.renewedAt >= Math.min(RENEW_EVERY_MS, this.leaseMs / 3)) await this.renew();
    else await this.inFlight;
    if (this.lost) throw new LeaseLost();
  };

  private renew(): Promise<void> {
    this.inFlight = this.inFlight.then(async () => {
      if (this.lost) return;
      const next = nowIso(this.at + (Date.now() - this.startedAt) + this.leaseMs);
      const rows = await this.db
        .update(notificationMessages)
        .set({ leasedUntil: next })
        .where(and(eq(notificationMessages.id, this.id), eq(notificationMessages.status, "leased"), eq(notificationMessages.leasedUntil, this.until)))
        .returning({ id: notificationMessages.id })
        .catch(() => undefined);
      // A failed UPDATE (D1 unreachable) keeps the old lease: the send goes on, and the cron decides if it runs out.
      if (rows === undefined) return;
      if (rows.length === 0) this.lost = true;
      else {
        this.until = next;
        this.renewedAt = Date.now();
      }
    });
    return this.inFlight;
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.inFlight;
  }
}

/** The payload as it leaves: sealed labels opened (and never echoed), actions rendered. */
async function openPayload(config: Config, message: MessageRow): Promise<Record<string, unknown> & { labels: Record<string, string> }> {
  const { sealed_labels: sealed, ...payload }: Record<string, unknown> = message.payload;
  const labels = { ...(payload.labels as Record<string, string>) };
  if (typeof sealed === "string") Object.assign(labels, await unseal(config.SECRET_KEY, sealed));
  return { ...payload, labels };
}

/**
 * Delivers one message by its method and records the outcome (docs/email.md): sent; a retryable failure scheduled
 * with backoff until the message is NOTIFICATIONS_MAX_AGE old, then a permanent failure; or a permanent failure with
 * its reason. `now` is the scheduling clock (the tests drive days of retries with it); sends use real time.
 */
export async function dispatchMessage(
  env: Env,
  id: string,
  now = Date.now(),
  { leaseMs = LEASE_MS }: { leaseMs?: number } = {},
): Promise<DispatchOutcome> {
  const config = getConfig(env);
  const db = database(env.DB);
  if (await readPaused(db)) return "not_taken";
  const message = await lease(db, id, now, leaseMs);
  if (!message) return "not_taken";
  const keeper = new LeaseKeeper(db, id, now, leaseMs, message.leasedUntil ?? "");

  const [templates, recipients] = await db.batch([
    db.select().from(notificationTemplates).where(eq(notificationTemplates.id, message.templateId)),
    db
      .select({ name: users.name, username: users.username, email: users.email, deleted: users.deleted })
      .from(users)
      .where(eq(users.id, message.userId)),
  ]);
  // A deleted account receives nothing, and keeps nothing: a copy that was on its way when it was deleted goes, unsent
  // (docs/privacy.md, "Erasure").
  if (recipients[0]?.deleted) {
    await keeper.stop();
    await db.delete(notificationMessages).where(eq(notificationMessages.id, id));
    return "skipped";
  }
  // A digest and a target's verification are written by code, not from a stored template (docs/schedule.md,
  // "Digests"; docs/targets.md, "Verification").
  const digest = message.templateId === DIGEST_TEMPLATE_ID;
  const template = digest ? DIGEST_TEMPLATE : message.templateId === TARGET_VERIFICATION_TEMPLATE_ID ? TARGET_VERIFICATION_TEMPLATE : templates[0];

  const expiresAt = expiryOf(config, message);
  try {
    if (!template) throw new DeliveryError("the template no longer exists", false);
    if (expiresAt !== undefined && now >= expiresAt) throw new DeliveryError(PASSCODE_EXPIRED, false);
    if (message.statusReason === ScheduleMessages.heldDigest) {
      // Held for a digest and re-driven on its own: the window's decision, if it has one, stands.
      const fate = await digestFate(env, message);
      if (fate.fate !== "alone") {
        await settleHeld(db, message.id, fate.fate, fate.digestId);
        return fate.fate === "listed" ? "sent" : "skipped";
      }
    }
    if (message.sendIfUnread && !(await stillUnread(env, message))) {
      // Held by quiet hours, it says so; otherwise it waited for its read-aware delay (docs/schedule.md, "Quiet hours").
      const reason = message.statusReason === ScheduleMessages.heldQuiet ? ScheduleMessages.readDuringQuiet : READ_BEFORE_DUE;
      await finish(db, message, { status: "skipped", statusReason: reason, sentAt: null });
      return "skipped";
    }
    const payload = await openPayload(config, message).catch(() => {
      // Only a changed SECRET_KEY makes sealed labels unreadable; retrying cannot help.
      throw new DeliveryError("sealed labels could not be opened (was SECRET_KEY changed?)", false);
    });
    const user = recipients[0] ?? { name: "", username: String(payload.user_username ?? ""), email: String(payload.user_email ?? "") };
    const rendered = digest
      ? renderDigest(message, config.ACCESS_URL)
      : renderTemplate(template, {
          user,
          labels: payload.labels,
          data: (payload.data as Record<string, unknown>) ?? {},
          baseUrl: config.ACCESS_URL,
        });
    // A passcode's send stops when the code expires: it would arrive useless (the deadline is on the real clock).
    const deadline = Math.min(Date.now() + SEND_BUDGET_MS, expiresAt === undefined ? Number.POSITIVE_INFINITY : Date.now() + (expiresAt - now));
    keeper.start();
    try {
      await CHANNELS[message.method]({
        env,
        config,
        message,
        template,
        rendered,
        payload: { ...payload, actions: rendered.actions },
        deadline,
        progress: keeper.progress,
      });
    } finally {
      await keeper.stop();
    }
    await finish(db, message, { status: "sent", statusReason: null, sentAt: nowIso() });
    if (digest) await settleListed(db, message, { status: "sent", reason: null });
    return "sent";
  } catch (error) {
    // Another holder has the message now; whatever this one records would be about a send it no longer owns.
    if (error instanceof LeaseLost) return "not_taken";
    const failure = error instanceof DeliveryError ? error : new DeliveryError("unexpected delivery error", true);
    if (!(error instanceof DeliveryError))
      console.error(`[herald] delivery of message ${id} failed unexpectedly: ${error instanceof Error ? error.name : "error"}`);
    const age = now - Date.parse(message.createdAt);
    // The last try falls at the maximum age itself, not somewhere past it.
    const wait = Math.max(backoffMs(config, message.attempts), failure.retryAfterMs ?? 0);
    const retryAt = Math.min(now + wait, Date.parse(message.createdAt) + config.NOTIFICATIONS_MAX_AGE);
    if (failure.retryable && expiresAt !== undefined && retryAt >= expiresAt) {
      await finish(db, message, { status: "permanent_failure", statusReason: `${PASSCODE_EXPIRED}; last try: ${failure.message}`, sentAt: null });
      return "failed";
    }
    if (failure.retryable && age < config.NOTIFICATIONS_MAX_AGE) {
      await moveMessages(db, eq(notificationMessages.id, id), "temporary_failure", {
        statusReason: failure.message,
        nextRetryAfter: nowIso(retryAt),
        leasedUntil: null,
        updatedAt: nowIso(now),
      });
      await laneOf(env, template?.mandatory ?? false).send({ messageId: id }, { delaySeconds: Math.max(0, Math.ceil((retryAt - now) / 1000)) });
      return "retry";
    }
    const reason = failure.retryable
      ? `gave up after ${message.attempts} attempts over ${formatAge(age)} (NOTIFICATIONS_MAX_AGE): ${failure.message}`
      : failure.message;
    await finish(db, message, { status: "permanent_failure", statusReason: reason, sentAt: null });
    if (digest) await settleListed(db, message, { status: "permanent_failure", reason });
    return "failed";
  }
}

/** What the recipient's inbox object decided for a copy held for its digest (src/inbox/digests.ts, `release`). */
async function digestFate(env: Env, message: MessageRow): Promise<DigestFate> {
  try {
    return await userInbox(env, message.userId).digestFate(message.notificationId);
  } catch {
    throw new DeliveryError("the inbox could not say what its digest decided", true);
  }
}

/**
 * Read-aware e-mail (docs/broadcasts.md): asked of the recipient's inbox object when the e-mail falls due, under this
 * message's lease. The object keeps its first answer, so a retry after a failed send gets "send" again.
 */
async function stillUnread(env: Env, message: MessageRow): Promise<boolean> {
  try {
    const inbox = userInbox(env, message.userId);
    return (await inbox.emailDecision(message.notificationId)).send;
  } catch {
    throw new DeliveryError("the inbox could not say whether the notification was read", true);
  }
}

/** The lease holder records the final outcome. A finished message keeps no sealed labels: they were needed only to send. */
async function finish(
  db: Database,
  message: MessageRow,
  outcome: { status: "sent" | "permanent_failure" | "skipped" } & Pick<MessageRow, "statusReason" | "sentAt">,
) {
  const { sealed_labels: _dropped, ...payload } = message.payload;
  const { status, ...fields } = outcome;
  await moveMessages(db, eq(notificationMessages.id, message.id), status, { ...fields, payload, leasedUntil: null, nextRetryAfter: null }, [
    "leased",
  ]);
}

/**
 * The inbox fast path for a message just enqueued (notifier running): everything needed is already in memory, so
 * the user's object gets the notification right away and one UPDATE records it — a watcher sees it after the
 * enqueue's two D1 round trips plus this RPC. On failure the message goes to the queue like any retry.
 */
export async function deliverInboxNow(
  env: Env,
  message: MessageRow,
  template: TemplateRow,
  user: { name: string; username: string; email: string },
  labels: Record<string, string>,
): Promise<void> {
  const config = getConfig(env);
  try {
    const rendered = renderTemplate(template, {
      user,
      labels,
      data: (message.payload.data as Record<string, unknown>) ?? {},
      baseUrl: config.ACCESS_URL,
    });
    await sendToInbox({ env, config, message, template, rendered, payload: message.payload, deadline: Date.now() + SEND_BUDGET_MS });
    const now = nowIso();
    await moveMessages(database(env.DB), eq(notificationMessages.id, message.id), "sent", { attempts: 1, sentAt: now, updatedAt: now }, ["pending"]);
  } catch (error) {
    console.error(`[herald] direct inbox delivery of ${message.id} failed: ${error instanceof Error ? error.name : "error"}`);
    await env.NOTIFICATION_QUEUE.send({ messageId: message.id });
  }
}

/** Message ids per notifications-queue message, and queue messages per `sendBatch` (the Queues limit is 100 of each). */
const IDS_PER_QUEUE_MESSAGE = 100;
const QUEUE_MESSAGES_PER_SEND = 100;
/** The longest `delaySeconds` Queues accepts; a message due later is left to the cron's re-drive. */
const MAX_QUEUE_DELAY_S = 86_400;

/** A message to put on a queue: mandatory ones travel the urgent lane (`laneOf`). */
type Queued = Pick<MessageRow, "id" | "nextRetryAfter"> & { mandatory?: boolean | null };

/**
 * Puts external messages onto the notifications queues, up to 100 ids per queue message, each delayed until it is
 * due (`next_retry_after`: a read-aware e-mail waits for its delay), mandatory ones on their own lane.
 */
export async function enqueueExternal(env: Env, messages: Queued[], now = Date.now()): Promise<void> {
  for (const mandatory of [true, false]) {
    const lane = messages.filter((m) => (m.mandatory ?? false) === mandatory);
    if (lane.length > 0) await enqueueOnLane(laneOf(env, mandatory), lane, now);
  }
}

async function enqueueOnLane(queue: Queue<NotificationQueueMessage>, messages: Queued[], now: number): Promise<void> {
  const byDelay = new Map<number, string[]>();
  for (const m of messages) {
    const delay = m.nextRetryAfter ? Math.max(0, Math.ceil((Date.parse(m.nextRetryAfter) - now) / 1000)) : 0;
    if (delay > MAX_QUEUE_DELAY_S) continue;
    const ids = byDelay.get(delay);
    if (ids) ids.push(m.id);
    else byDelay.set(delay, [m.id]);
  }
  const queued: MessageSendRequest<NotificationQueueMessage>[] = [];
  for (const [delaySeconds, ids] of byDelay) {
    for (let i = 0; i < ids.length; i += IDS_PER_QUEUE_MESSAGE) {
      queued.push({ body: { messageIds: ids.slice(i, i + IDS_PER_QUEUE_MESSAGE) }, delaySeconds });
    }
  }
  for (let i = 0; i < queued.length; i += QUEUE_MESSAGES_PER_SEND) {
    await queue.sendBatch(queued.slice(i, i + QUEUE_MESSAGES_PER_SEND));
  }
}

/**
 * Starts delivery of freshly committed (or re-driven) messages: inbox copies go straight to the user's object, in
 * order, for the lowest latency to watchers; external ones go onto the queue.
 */
export async function kickMessages(env: Env, messages: (Queued & Pick<MessageRow, "method">)[], now = Date.now()): Promise<void> {
  const external = messages.filter((m) => m.method !== "inbox");
  if (external.length > 0) await enqueueExternal(env, external, now);
  for (const message of messages) {
    if (message.method !== "inbox") continue;
    try {
      await dispatchMessage(env, message.id, now);
    } catch (error) {
      // The row is still pending or leased: the cron re-drives it.
      console.error(`[herald] direct inbox delivery of ${message.id} failed: ${error instanceof Error ? error.name : "error"}`);
    }
  }
}
