import { eq } from "drizzle-orm";
import type { Config } from "../config/config";
import { nowIso } from "../lib/crypto";
import type { InboxLimits } from "./model";
import { inboxRetention } from "./schema";
import type { InboxStorage } from "./storage";
import type { InboxStore, Swept } from "./store";
import type { SequencedEvent } from "./watch";

/** The limits of the configuration, as every producer hands them to the inbox with a delivery. */
export function inboxLimits(config: Pick<Config, "INBOX_MAX_ITEMS" | "INBOX_RETENTION">): InboxLimits {
  return { maxItems: config.INBOX_MAX_ITEMS, retentionMs: config.INBOX_RETENTION };
}

/**
 * Items removed per alarm run at most. A run is one transaction on the object's single thread, so this bounds how long
 * a request can wait behind it; a sweep with more to do takes the next run, right after, and requests in between. An
 * item removed writes its row and, for an id that does not sort by time, a page of each of two indexes (the inbox's
 * and the tombstones'), so every few runs SQLite's commit also checkpoints its write-ahead log and waits for the
 * disk's flush, whatever the page. At 50 a run's own work is 4–5 ms at the median on the bench machine, its p99 under
 * 20 ms (docs/benchmarks.md, "Export and retention"); a larger page makes every run longer and no flush shorter.
 */
export const SWEEP_PAGE = 50;
/** A sweep for age runs at most once a day: items that expire one by one are removed together, not an alarm each. */
const SWEEP_EVERY_MS = 24 * 60 * 60 * 1000;

/**
 * Retention (docs/inbox.md, "Retention"): read and archived items older than the retention, and the oldest of them
 * beyond the cap, give way; unread and snoozed items never do. The Worker hands the object its limits with every
 * delivery (the object holds no configuration of its own, as with the watch's socket limit); they are kept here for
 * the alarm, which sweeps without a request. The sweep itself, one page in one transaction, is the store's.
 */
export class InboxRetention {
  constructor(
    private readonly storage: InboxStorage,
    private readonly store: InboxStore,
  ) {}

  private settings() {
    return this.storage.db.select().from(inboxRetention).where(eq(inboxRetention.id, 1)).get();
  }

  /** Keeps the limits a delivery came with; true when they were new (the alarm must follow). */
  follow(limits: InboxLimits): boolean {
    const kept = this.settings();
    if (kept && kept.maxItems === limits.maxItems && kept.retentionMs === limits.retentionMs) return false;
    this.storage.db
      .insert(inboxRetention)
      .values({ id: 1, maxItems: limits.maxItems, retentionMs: limits.retentionMs, lastSweep: null })
      .onConflictDoUpdate({ target: inboxRetention.id, set: { maxItems: limits.maxItems, retentionMs: limits.retentionMs } })
      .run();
    return true;
  }

  /** How many items may give way: read and not snoozed (archived items are read), from the counters alone. */
  removable(): number {
    const { counters } = this.store;
    return counters.get("total") - counters.get("unread") - counters.get("snoozed");
  }

  /** Whether the inbox holds more than `limits` allow while some item may give way: a sweep is due at once. */
  overCap(limits: InboxLimits): boolean {
    return this.store.counters.get("total") > limits.maxItems && this.removable() > 0;
  }

  /**
   * When a sweep is next due: now while the inbox is over its cap with something to remove; otherwise when its oldest
   * removable item outlives the retention, but not sooner than a day after the last sweep finished; never while
   * nothing may give way (a read or an archive that changes that re-arms the alarm).
   */
  nextDue(now: number): number | undefined {
    const kept = this.settings();
    if (!kept || this.removable() <= 0) return undefined;
    if (this.store.counters.get("total") > kept.maxItems) return now;
    const oldest = this.store.oldestRemovable();
    if (oldest === undefined) return undefined;
    return Math.max(Date.parse(oldest) + kept.retentionMs, (kept.lastSweep ?? Number.NEGATIVE_INFINITY) + SWEEP_EVERY_MS);
  }

  /** One sweep step at `now` under `limits`: what is past the retention, or beyond the cap, up to SWEEP_PAGE items. */
  sweep(now: number, limits: InboxLimits): Swept {
    const excess = Math.max(0, this.store.counters.get("total") - limits.maxItems);
    return this.store.sweep(nowIso(now - limits.retentionMs), excess, SWEEP_PAGE, now);
  }

  /**
   * The alarm's step, under the kept limits and only when due. A sweep that finished is recorded, which puts the next
   * one for age a day away at the earliest; one that filled its page leaves the sweep due, so the alarm runs again.
   */
  sweepDue(now: number): SequencedEvent[] {
    const kept = this.settings();
    const due = this.nextDue(now);
    if (!kept || due === undefined || due > now) return [];
    const swept = this.sweep(now, kept);
    if (!swept.more) this.storage.db.update(inboxRetention).set({ lastSweep: now }).where(eq(inboxRetention.id, 1)).run();
    return swept.sequenced;
  }
}
