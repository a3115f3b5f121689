import { eq, lt } from "drizzle-orm";
import { nowIso } from "../lib/crypto";
import { emailDecisions } from "./schema";
import type { InboxStorage } from "./storage";
import type { InboxStore } from "./store";

/** How long a read-aware e-mail decision is kept (docs/broadcasts.md, "Read-aware e-mail"). */
const DECISIONS_KEPT_MS = 30 * 24 * 60 * 60 * 1000;

/**
 * Read-aware e-mail (docs/broadcasts.md): whether the e-mail copy of notification `id` goes out now that it is due.
 * It does while the inbox copy is unread and not archived (or absent: the user cannot have read what never arrived).
 * The first answer is kept and given again, so a send that is retried after a failure is never skipped, and a skipped
 * one never sent. On the object's thread the answer and a read cannot interleave: a read that lands first skips the
 * e-mail, one that lands after it finds the e-mail already decided.
 */
export function decideEmail(storage: InboxStorage, store: InboxStore, id: string): { send: boolean } {
  const { db } = storage;
  const decided = db.select({ send: emailDecisions.send }).from(emailDecisions).where(eq(emailDecisions.notificationId, id)).get();
  if (decided) return decided;
  const item = store.stateOf(id);
  const send = !item || (item.readAt === null && item.archivedAt === null);
  const now = Date.now();
  db.insert(emailDecisions)
    .values({ notificationId: id, send, decidedAt: nowIso(now) })
    .run();
  // A decision is asked for only while its message is being sent, which ends within NOTIFICATIONS_MAX_AGE of its
  // creation (days): a month later nobody asks again.
  db.delete(emailDecisions)
    .where(lt(emailDecisions.decidedAt, nowIso(now - DECISIONS_KEPT_MS)))
    .run();
  return { send };
}

/**
 * Retention removes only read items (docs/inbox.md, "Retention"). A decision asked after the removal must answer as
 * the item was, read, and not as for one that never arrived, so recent removed items get theirs now: a decision is
 * only ever asked within DECISIONS_KEPT_MS of its item's creation. Runs in the sweep's transaction, before the rows go.
 */
export function decideRemoved(storage: InboxStorage, idsJson: string, now: number): void {
  storage.sql.exec(
    "INSERT OR IGNORE INTO email_decisions (notification_id, send, decided_at) SELECT id, 0, ? FROM inbox_notifications WHERE id IN (SELECT value FROM json_each(?)) AND created_at > ?",
    nowIso(now),
    idsJson,
    nowIso(now - DECISIONS_KEPT_MS),
  );
}
