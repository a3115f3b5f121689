import { and, asc, eq, isNotNull, isNull, lt, lte, min } from "drizzle-orm";
import { uuidv7 } from "../lib/crypto";
import { digestEntries, digestWindows, inboxNotifications } from "./schema";
import type { InboxStorage } from "./storage";

/** A held e-mail copy, as the enqueue hands it to the object (docs/schedule.md, "Digests"). */
export interface DigestHold {
  notificationId: string;
  /** The e-mail copy's id in the message log. */
  messageId: string;
}

/** One item a digest lists: its inbox title (Markdown) and its link (the item's first action), newest first. */
export interface DigestItem {
  notificationId: string;
  messageId: string;
  title: string;
  url: string | null;
}

/**
 * What the window's end decided, recorded before anything leaves the object: the e-mail copies the digest lists (every
 * item still unread, not archived and not snoozed), those it leaves out (read, archived or snoozed), and those whose
 * inbox copy had not arrived, which go out on their own (nothing could have read them).
 */
export interface DigestDecision {
  listed: DigestItem[];
  leftOut: string[];
  alone: string[];
}

export interface ClosedWindow {
  id: string;
  endsAt: number;
  recipient: Record<string, string>;
  decision: DigestDecision;
}

/** What became of one held copy, for a send of it that the cron re-drove (src/notifications/dispatch.ts). */
export type DigestFate = { fate: "alone" } | { fate: "listed" | "left_out"; digestId: string };

/** How long a closed window and its entries are kept: a held copy is asked about within a day or two of its window. */
const KEPT_MS = 30 * 24 * 60 * 60 * 1000;
/** A hand-off to the message log that failed (D1 unreachable) is tried again this much later. */
const HAND_OFF_RETRY_MS = 30_000;

/**
 * Digest windows in the inbox object (docs/schedule.md, "Digests"): holding copies, deciding each window once when
 * it ends, and keeping that decision. Everything here is synchronous SQLite on the object's thread, so a window's end
 * and a read cannot interleave: a read before the decision leaves the item out, one after it finds it listed.
 */
export class InboxDigests {
  constructor(private readonly storage: InboxStorage) {}

  /**
   * Holds a copy for the open window, or opens one that ends at `endsAt`. Idempotent on the notification: a second
   * hold of the same copy finds it where it is.
   */
  hold(entry: DigestHold, endsAt: number, recipient: Record<string, string>): { digestId: string; endsAt: number } {
    const { db } = this.storage;
    return this.storage.storage.transactionSync(() => {
      const held = db
        .select({ id: digestWindows.id, endsAt: digestWindows.endsAt })
        .from(digestEntries)
        .innerJoin(digestWindows, eq(digestWindows.id, digestEntries.windowId))
        .where(eq(digestEntries.notificationId, entry.notificationId))
        .get();
      if (held) return { digestId: held.id, endsAt: held.endsAt };
      let open = db.select({ id: digestWindows.id, endsAt: digestWindows.endsAt }).from(digestWindows).where(isNull(digestWindows.decision)).get();
      if (!open) {
        open = { id: uuidv7(), endsAt };
        db.insert(digestWindows).values({ id: open.id, endsAt, recipient, decision: null, handOffAt: endsAt }).run();
      }
      db.insert(digestEntries).values({ notificationId: entry.notificationId, messageId: entry.messageId, windowId: open.id }).run();
      return { digestId: open.id, endsAt: open.endsAt };
    });
  }

  /** When the digest duty next has work: an open window's end, or a hand-off to try again. */
  nextDue(): number | undefined {
    const row = this.storage.db
      .select({ at: min(digestWindows.handOffAt) })
      .from(digestWindows)
      .where(isNotNull(digestWindows.handOffAt))
      .get();
    return row?.at ?? undefined;
  }

  /**
   * Closes every open window that has ended by `now` (one transaction each: the decision is recorded with the window)
   * and returns every closed window whose hand-off is due, the ones just closed included.
   */
  closeDue(now: number): ClosedWindow[] {
    const { db } = this.storage;
    const ending = db
      .select({ id: digestWindows.id })
      .from(digestWindows)
      .where(and(isNull(digestWindows.decision), lte(digestWindows.endsAt, now)))
      .all();
    for (const { id } of ending) {
      this.storage.storage.transactionSync(() => {
        db.update(digestWindows)
          .set({ decision: this.decide(id) })
          .where(and(eq(digestWindows.id, id), isNull(digestWindows.decision)))
          .run();
      });
    }
    return db
      .select()
      .from(digestWindows)
      .where(and(isNotNull(digestWindows.decision), lte(digestWindows.handOffAt, now)))
      .orderBy(asc(digestWindows.endsAt))
      .all()
      .map((w) => ({ id: w.id, endsAt: w.endsAt, recipient: w.recipient, decision: w.decision as DigestDecision }));
  }

  /** The window's items as the inbox has them now, newest first. */
  private decide(windowId: string): DigestDecision {
    const rows = this.storage.db
      .select({
        notificationId: digestEntries.notificationId,
        messageId: digestEntries.messageId,
        title: inboxNotifications.title,
        actions: inboxNotifications.actions,
        readAt: inboxNotifications.readAt,
        archivedAt: inboxNotifications.archivedAt,
        snoozedUntil: inboxNotifications.snoozedUntil,
        createdAt: inboxNotifications.createdAt,
        present: inboxNotifications.id,
      })
      .from(digestEntries)
      .leftJoin(inboxNotifications, eq(inboxNotifications.id, digestEntries.notificationId))
      .where(eq(digestEntries.windowId, windowId))
      .all();
    const decision: DigestDecision = { listed: [], leftOut: [], alone: [] };
    const listed: (DigestItem & { createdAt: string })[] = [];
    for (const row of rows) {
      if (row.present === null) decision.alone.push(row.messageId);
      else if (row.readAt !== null || row.archivedAt !== null || row.snoozedUntil !== null) decision.leftOut.push(row.messageId);
      else
        listed.push({
          notificationId: row.notificationId,
          messageId: row.messageId,
          title: row.title ?? "",
          url: row.actions?.[0]?.url ?? null,
          createdAt: row.createdAt ?? "",
        });
    }
    listed.sort((a, b) => (a.createdAt === b.createdAt ? b.notificationId.localeCompare(a.notificationId) : b.createdAt.localeCompare(a.createdAt)));
    decision.listed = listed.map(({ createdAt: _at, ...item }) => item);
    return decision;
  }

  /** The hand-off succeeded: nothing more to do for the window. Windows past their keeping go, with their entries. */
  handedOff(windowId: string, now: number): void {
    const { db } = this.storage;
    this.storage.storage.transactionSync(() => {
      db.update(digestWindows).set({ handOffAt: null }).where(eq(digestWindows.id, windowId)).run();
      const old = db
        .select({ id: digestWindows.id })
        .from(digestWindows)
        .where(and(isNotNull(digestWindows.decision), isNull(digestWindows.handOffAt), lt(digestWindows.endsAt, now - KEPT_MS)))
        .all();
      for (const { id } of old) {
        db.delete(digestEntries).where(eq(digestEntries.windowId, id)).run();
        db.delete(digestWindows).where(eq(digestWindows.id, id)).run();
      }
    });
  }

  /** The hand-off failed: try again a little later. */
  handOffFailed(windowId: string, now: number): void {
    this.storage.db
      .update(digestWindows)
      .set({ handOffAt: now + HAND_OFF_RETRY_MS })
      .where(eq(digestWindows.id, windowId))
      .run();
  }

  /**
   * A held copy's send was re-driven before its window was handed off (the object was unreachable for a day): if its
   * window is still open it leaves the window and goes out on its own; if the window has decided, the decision stands.
   */
  release(notificationId: string): DigestFate {
    const { db } = this.storage;
    return this.storage.storage.transactionSync(() => {
      const held = db
        .select({ windowId: digestEntries.windowId, messageId: digestEntries.messageId, decision: digestWindows.decision })
        .from(digestEntries)
        .innerJoin(digestWindows, eq(digestWindows.id, digestEntries.windowId))
        .where(eq(digestEntries.notificationId, notificationId))
        .get();
      if (!held) return { fate: "alone" };
      const decision = held.decision as DigestDecision | null;
      if (!decision) {
        db.delete(digestEntries).where(eq(digestEntries.notificationId, notificationId)).run();
        return { fate: "alone" };
      }
      if (decision.listed.some((item) => item.messageId === held.messageId)) return { fate: "listed", digestId: held.windowId };
      if (decision.leftOut.includes(held.messageId)) return { fate: "left_out", digestId: held.windowId };
      return { fate: "alone" };
    });
  }
}
