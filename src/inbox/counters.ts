import { eq, sql } from "drizzle-orm";
import { inboxCounters, inboxTemplateCounts } from "./schema";
import type { InboxStorage } from "./storage";

/** The counters kept beside the rows, so that no request ever counts the whole inbox (docs/inbox.md, "Exact counts"). */
const COUNTERS = ["unread", "archived", "snoozed", "total", "seq"] as const;
export type CounterName = (typeof COUNTERS)[number];

/**
 * The inbox's counters and per-template counts. Written in the same transaction as the change they follow; read from
 * memory after the first read of an object's life. `forget` drops the memory when a transaction rolls back.
 */
export class InboxCounters {
  private values: Map<CounterName, number> | undefined;

  constructor(private readonly storage: InboxStorage) {}

  private all(): Map<CounterName, number> {
    this.values ??= new Map(
      this.storage.db
        .select()
        .from(inboxCounters)
        .all()
        .map((row) => [row.name as CounterName, row.value]),
    );
    return this.values;
  }

  get(name: CounterName): number {
    return this.all().get(name) ?? 0;
  }

  set(name: CounterName, value: number): void {
    this.all().set(name, value);
    this.storage.db.insert(inboxCounters).values({ name, value }).onConflictDoUpdate({ target: inboxCounters.name, set: { value } }).run();
  }

  bump(deltas: Partial<Record<CounterName, number>>): void {
    for (const name of COUNTERS) {
      const delta = deltas[name] ?? 0;
      if (delta !== 0) this.set(name, this.get(name) + delta);
    }
  }

  bumpTemplate(templateId: string, unread: number, total: number): void {
    if (unread === 0 && total === 0) return;
    this.storage.db
      .insert(inboxTemplateCounts)
      .values({ templateId, unread, total })
      .onConflictDoUpdate({
        target: inboxTemplateCounts.templateId,
        set: { unread: sql`${inboxTemplateCounts.unread} + ${unread}`, total: sql`${inboxTemplateCounts.total} + ${total}` },
      })
      .run();
  }

  /** Retention removed a template's last items: it leaves the per-template counts, as it left the list. */
  dropEmptyTemplates(): void {
    this.storage.db.delete(inboxTemplateCounts).where(eq(inboxTemplateCounts.total, 0)).run();
  }

  /** Mark-all-as-read: nothing is unread any more, in any template. */
  noneUnread(): void {
    this.set("unread", 0);
    this.storage.db.update(inboxTemplateCounts).set({ unread: 0 }).run();
  }

  byTemplate(): { template_id: string; unread: number; total: number }[] {
    // Plain SQL text, as the list: no query to build per call.
    return this.storage.sql
      .exec<{ template_id: string; unread: number; total: number }>(
        "SELECT template_id, unread, total FROM inbox_template_counts ORDER BY template_id",
      )
      .toArray()
      .map((t) => ({ template_id: t.template_id, unread: t.unread, total: t.total }));
  }

  /** SQLite rolled a transaction back: what memory holds may no longer be true. */
  forget(): void {
    this.values = undefined;
  }
}
