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
