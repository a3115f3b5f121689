import { and, inArray, type SQL } from "drizzle-orm";
import type { SQLiteUpdateSetSource } from "drizzle-orm/sqlite-core";
import type { Database } from "../db/client";
import { MESSAGE_STATUSES, type MessageStatus, notificationMessages } from "../db/schema";
import { nowIso } from "../lib/crypto";

/**
 * The delivery life of a message (docs/api.md, "Notification delivery"). Enqueue writes one of these; every later
 * change goes through `moveMessages`.
 * - `pending`: waiting for its first send; `inhibited`: the user's preference (or the template's default) turned it
 *   off; `permanent_failure` at once: nothing could ever send it (no SMTP smarthost).
 */
export const INITIAL_STATUSES = ["pending", "inhibited", "permanent_failure"] as const satisfies readonly MessageStatus[];
export type InitialStatus = (typeof INITIAL_STATUSES)[number];

/**
 * Every status a message may move to from each status; the finished ones (sent, failed for good, inhibited) go
 * nowhere. Why each edge exists:
 * - pending → leased: a consumer takes it; → sent: the inbox fast path records a direct delivery, or a digest that named
 *   an e-mail copy held for it was sent; → permanent_failure: the dead-letter queue gave up on it before any consumer
 *   could lease it, or its digest failed; → skipped: a digest left it out, read before the window ended
 *   (docs/schedule.md, "Digests");
 * - leased → sent / temporary_failure / permanent_failure: the holder records the outcome (or the cron finds the
 *   lease expired and makes it retryable);
 * - temporary_failure → leased: the retry is taken; → permanent_failure: the dead-letter queue gave up on it;
 * - leased → skipped: a read-aware e-mail fell due after its inbox copy was read or archived (docs/broadcasts.md).
 */
export const DELIVERY_TRANSITIONS = {
  pending: ["leased", "sent", "permanent_failure", "skipped"],
  leased: ["sent", "temporary_failure", "permanent_failure", "skipped"],
  temporary_failure: ["leased", "permanent_failure"],
  sent: [],
  permanent_failure: [],
  inhibited: [],
  skipped: [],
} as const satisfies Record<MessageStatus, readonly MessageStatus[]>;

/** Where a message's delivery ends: nothing moves it on (the cron purges these after 7 days). */
export const FINISHED_STATUSES = ["sent", "permanent_failure", "inhibited", "skipped"] as const satisfies readonly MessageStatus[];

/** The statuses from which a message may move to `To`. */
export type SourceOf<To extends MessageStatus> = {
  [From in MessageStatus]: To extends (typeof DELIVERY_TRANSITIONS)[From][number] ? From : never;
}[MessageStatus];

export function sourcesOf<To extends MessageStatus>(to: To): SourceOf<To>[] {
  return MESSAGE_STATUSES.filter((from): from is SourceOf<To> => (DELIVERY_TRANSITIONS[from] as readonly MessageStatus[]).includes(to));
}

/** The columns a transition may set beside the status (the status itself is the transition's). */
export type TransitionFields = Omit<SQLiteUpdateSetSource<typeof notificationMessages>, "status" | "id">;

/**
 * The one way a message's status changes: an UPDATE of the messages `where` selects, guarded by the statuses the
 * table allows moving from (narrowed by `from` when the writer knows more, e.g. only the lease holder finishes a send).
 * A writer acting on a stale view changes nothing, instead of turning a sent message back into a retry. Returns the
 * statement, to run, batch or `.returning()`.
 */
export function moveMessages<To extends MessageStatus>(
  db: Database,
  where: SQL | undefined,
  to: To,
  fields: TransitionFields = {},
  from: readonly SourceOf<To>[] = sourcesOf(to),
) {
  return db
    .update(notificationMessages)
    .set({ updatedAt: nowIso(), ...fields, status: to })
    .where(and(where, inArray(notificationMessages.status, [...from])));
}
