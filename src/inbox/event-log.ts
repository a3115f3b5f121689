import { and, asc, gt, lt, lte, min } from "drizzle-orm";
import { inSlices } from "../db/slices";
import type { InboxCounters } from "./counters";
import { inboxEvents } from "./schema";
import type { InboxStorage } from "./storage";
import type { InboxEvent, SequencedEvent } from "./watch";

/** Events kept for resume (docs/inbox.md, "Sequenced sync and resume"): at least this many, and at least this long. */
const EVENTS_KEPT = 10_000;
const EVENTS_KEPT_MS = 7 * 24 * 60 * 60 * 1000;
/** Events read per query while replaying, so a long replay never holds every frame in memory at once. */
const REPLAY_PAGE = 500;

/**
 * The inbox's numbered events: every change gets the next `seq` of the user's sequence in the transaction that makes
 * it, and the events are kept so that a watcher can resume after any of them.
 */
export class EventLog {
  constructor(
    private readonly storage: InboxStorage,
    private readonly counters: InboxCounters,
  ) {}

  /**
   * Numbers the events of the current transaction (the next values of the sequence, no gaps), stores them, and
   * forgets what is both beyond the last EVENTS_KEPT and older than EVENTS_KEPT_MS.
   */
  record(events: InboxEvent[]): SequencedEvent[] {
    if (events.length === 0) return [];
    const { db } = this.storage;
    const at = Date.now();
    const unread = this.counters.get("unread");
    let seq = this.counters.get("seq");
    const sequenced = events.map((event) => ({ seq: ++seq, event, unread }));
    for (const slice of inSlices(sequenced, 20)) {
      db.insert(inboxEvents)
        .values(slice.map((e) => ({ seq: e.seq, at, event: JSON.stringify(e.event), unread })))
        .run();
    }
    this.counters.set("seq", seq);
    db.delete(inboxEvents)
      .where(and(lte(inboxEvents.seq, seq - EVENTS_KEPT), lt(inboxEvents.at, at - EVENTS_KEPT_MS)))
      .run();
    return sequenced;
  }

  /** Whether every event after `afterSeq` is still kept. */
  keepsAfter(afterSeq: number): boolean {
    if (afterSeq === this.counters.get("seq")) return true;
    const oldest =
      this.storage.db
        .select({ seq: min(inboxEvents.seq) })
        .from(inboxEvents)
        .get()?.seq ?? null;
    return oldest !== null && oldest <= afterSeq + 1;
  }

  /** Every event after `afterSeq`, in order, read a page at a time. */
  *after(afterSeq: number): Generator<SequencedEvent> {
    const last = this.counters.get("seq");
    for (let from = afterSeq; from < last; ) {
      const page = this.storage.db.select().from(inboxEvents).where(gt(inboxEvents.seq, from)).orderBy(asc(inboxEvents.seq)).limit(REPLAY_PAGE).all();
      if (page.length === 0) return;
      for (const row of page) yield { seq: row.seq, event: JSON.parse(row.event) as InboxEvent, unread: row.unread };
      from = page[page.length - 1]?.seq ?? last;
    }
  }
}
