import { and, asc, eq, inArray, isNotNull, isNull, lte, min, sql } from "drizzle-orm";
import type * as z from "zod";
import { inSlices } from "../db/slices";
import type { InboxCounters } from "./counters";
import { decideRemoved } from "./email-decisions";
import { EventLog } from "./event-log";
import { type Cursor, listStatement, type StateRow, selectionStatement } from "./list-sql";
import { fallbackIcon, type InboxDelivery, type ListFilter, toInboxNotification } from "./model";
import { type InboxRow, inboxNotifications } from "./schema";
import type { InboxCountsResponse } from "./schemas";
import { applyAction, type BulkAction, type ChangedFields, changed, contribution, type InboxAction } from "./states";
import type { InboxStorage } from "./storage";
import type { InboxEvent, SequencedEvent } from "./watch";

/**
 * The largest page kept in memory (docs/inbox.md, "The last page, kept"): a default page of 25 ordinary notifications
 * is about 10,000 characters. Objects share their isolate's memory, so a long page is not kept.
 */
const PAGE_KEPT_MAX_CHARS = 32 * 1024;
/** Ids per change event: a bulk change to more items is several events, so no row nears SQLite's 2 MB limit. */
const IDS_PER_EVENT = 2_000;
/**
 * How long a removed item's `created_at` is kept for list cursors (docs/inbox.md, "Retention"): as long as the event
 * log keeps its events at the least, well beyond any paging through a list.
 */
const REMOVED_KEPT_MS = 7 * 24 * 60 * 60 * 1000;

/** What may give way, oldest first: read and not snoozed, on the `inbox_removable` index (docs/inbox.md, "Retention"). */
export const OLDEST_REMOVABLE =
  "SELECT id, template_id, created_at, archived_at FROM inbox_notifications WHERE read_at IS NOT NULL AND snoozed_until IS NULL ORDER BY created_at, id LIMIT ?";
/** The ids of one sweep, bound once as a JSON array. */
const SWEPT_IDS = "SELECT value FROM json_each(?)";
/** A removed item's targets rows, by their whole key (no index on the notification id is needed). */
export const DELETE_SWEPT_TARGETS = `DELETE FROM inbox_targets WHERE (target, created_at, notification_id) IN (SELECT targets.value, n.created_at, n.id FROM inbox_notifications AS n, json_each(n.targets) AS targets WHERE n.id IN (${SWEPT_IDS}))`;

const STATE_COLUMNS = {
  id: inboxNotifications.id,
  templateId: inboxNotifications.templateId,
  readAt: inboxNotifications.readAt,
  archivedAt: inboxNotifications.archivedAt,
  snoozedUntil: inboxNotifications.snoozedUntil,
};

/**
 * A delivered notification's rows in inbox_targets, one per distinct target: the backfill of
 * drizzle/inbox/0003_filter_indexes.sql for one notification, so old and new rows are written alike.
 */
const INSERT_TARGETS =
  "INSERT INTO inbox_targets (target, created_at, notification_id) SELECT DISTINCT targets.value, n.created_at, n.id FROM inbox_notifications AS n, json_each(n.targets) AS targets WHERE n.id = ?";

export type ListResult =
  | { ok: true /** A JSON array of InboxNotification, newest first. */; notificationsJson: string; unreadCount: number; seq: number }
  | { ok: false; reason: "unknown_cursor" };

/** Every count of the inbox, as `GET /notifications/inbox/counts` documents it (src/inbox/schemas.ts). */
export type InboxCounts = z.infer<typeof InboxCountsResponse>;

/** A bulk action's selection: these ids (others' are simply not here), or what the list would show for a filter. */
export type BulkSelection = { ids: string[] } | { filter: ListFilter };

/** What one retention sweep did: its events, how many items it removed, and whether it filled its page (more may be due). */
export interface Swept {
  sequenced: SequencedEvent[];
  removed: number;
  more: boolean;
}

/** What a change did: the events it numbered, and whether a snooze started or ended (the alarm must follow). */
export interface Changed {
  sequenced: SequencedEvent[];
  snoozesMoved: boolean;
}

/** What applying an action to some rows did, inside its transaction: the rows' states after it and the events. */
interface Applied {
  rows: Map<string, StateRow>;
  events: InboxEvent[];
  snoozesMoved: boolean;
}

/**
 * One user's inbox as data: the rows, their counts and their numbered events, changed only in transactions that
 * commit all three together (docs/inbox.md). Synchronous SQLite on the object's single thread: no two changes
 * interleave. Who is told of a change (the watch sockets) and when the object wakes (its alarm) are the object's.
 */
export class InboxStore {
  readonly events: EventLog;
  /**
   * The last page listed, as the JSON `list` answered it, and the arguments it was asked with (docs/inbox.md, "The
   * last page, kept"). Every change runs in `transact`, which drops it first, so a kept page is always what the SQL
   * would answer now.
   */
  private lastPage: { key: string; json: string } | undefined;

  constructor(
    private readonly storage: InboxStorage,
    readonly counters: InboxCounters,
  ) {
    this.events = new EventLog(storage, counters);
  }

  /** Everything memory kept of the rows (the last page, the counters): the storage was erased under it. */
  forget(): void {
    this.lastPage = undefined;
    this.counters.forget();
  }

  /**
   * A transaction: the only way the inbox's rows change. It drops the kept page before the work, and a failure also
   * drops the in-memory counters (SQLite rolled back; memory must not lie).
   */
  private transact<T>(work: () => T): T {
    this.lastPage = undefined;
    try {
      return this.storage.storage.transactionSync(work);
    } catch (error) {
      this.counters.forget();
      throw error;
    }
  }

  /**
   * Stores a notification. Idempotent on the message id: a redelivery finds the row, or the trace of its removal, and
   * numbers no event.
   */
  deliver(delivery: InboxDelivery): SequencedEvent[] {
    return this.transact(() => {
      // Retention removed it (docs/inbox.md, "Retention"): a redelivery must not bring it back as new.
      if (this.storage.sql.exec("SELECT 1 FROM inbox_removed WHERE id = ?", delivery.id).toArray().length > 0) return [];
      const inserted = this.storage.db
        .insert(inboxNotifications)
        .values({
          id: delivery.id,
          userId: delivery.userId,
          templateId: delivery.templateId,
          targets: delivery.targets,
          title: delivery.title,
          content: delivery.content,
          icon: delivery.icon.trim() === "" ? fallbackIcon(delivery.templateGroup) : delivery.icon,
          actions: delivery.actions,
          readAt: null,
          createdAt: delivery.createdAt,
          archivedAt: null,
          snoozedUntil: null,
        })
        .onConflictDoNothing()
        .returning()
        .get();
      if (!inserted) return [];
      if (inserted.targets.length > 0) this.storage.sql.exec(INSERT_TARGETS, inserted.id);
      this.counters.bump({ total: 1, unread: 1 });
      this.counters.bumpTemplate(inserted.templateId, 1, 1);
      return this.events.record([{ notification: toInboxNotification(inserted) }]);
    });
  }

  /** One item's read, archive or snooze state; null when the notification is not in this inbox. */
  changeOne(id: string, action: InboxAction, now: string): (Changed & { row: InboxRow }) | null {
    return this.transact(() => {
      const row = this.storage.db.select().from(inboxNotifications).where(eq(inboxNotifications.id, id)).get();
      if (!row) return null;
      const applied = this.apply([row], action, now);
      return { row: { ...row, ...applied.rows.get(id) }, sequenced: this.events.record(applied.events), snoozesMoved: applied.snoozesMoved };
    });
  }

  /**
   * Mark-all-as-read: every unread notification becomes read at `readAt`; already-read ones keep their `read_at`,
   * snoozed ones their state (unread is neither read nor snoozed: a snoozed item keeps its state until it wakes).
   */
  markAllRead(readAt: string): SequencedEvent[] {
    return this.transact(() => {
      const isUnread = and(isNull(inboxNotifications.readAt), isNull(inboxNotifications.snoozedUntil));
      const unread = this.storage.db.select({ n: sql<number>`count(*)` }).from(inboxNotifications).where(isUnread).get()?.n ?? 0;
      if (unread === 0) return [];
      this.storage.db.update(inboxNotifications).set({ readAt }).where(isUnread).run();
      this.counters.noneUnread();
      return this.events.record([{ change: { all: true, read_at: readAt } }]);
    });
  }

  /**
   * A bulk action in one transaction: every selected item that the action changes, or none. Ids that are not in this
   * inbox are not here to find, so they are neither counted nor revealed.
   */
  bulk(action: BulkAction, selection: BulkSelection, now: string): Changed & { updated: number } {
    return this.transact(() => {
      const rows =
        "ids" in selection
          ? inSlices([...new Set(selection.ids)]).flatMap((slice) =>
              this.storage.db.select(STATE_COLUMNS).from(inboxNotifications).where(inArray(inboxNotifications.id, slice)).all(),
            )
          : this.selected(selection.filter);
      const applied = this.apply(rows, { kind: action }, now);
      return { updated: applied.rows.size, sequenced: this.events.record(applied.events), snoozesMoved: applied.snoozesMoved };
    });
  }

  /** Wakes every item whose snooze is due at `due`: unread again, an event carrying the notification itself. */
  wakeDue(due: string): SequencedEvent[] {
    return this.transact(() => {
      const rows = this.storage.db
        .select(STATE_COLUMNS)
        .from(inboxNotifications)
        .where(and(isNotNull(inboxNotifications.snoozedUntil), lte(inboxNotifications.snoozedUntil, due)))
        .orderBy(asc(inboxNotifications.snoozedUntil), asc(inboxNotifications.id))
        .all();
      return this.events.record(this.apply(rows, { kind: "wake" }, due).events);
    });
  }

  /** When the next snoozed item wakes (epoch ms), if any is snoozed. */
  nextWake(): number | undefined {
    const at =
      this.storage.db
        .select({ at: min(inboxNotifications.snoozedUntil) })
        .from(inboxNotifications)
        .where(isNotNull(inboxNotifications.snoozedUntil))
        .get()?.at ?? null;
    return at === null ? undefined : Date.parse(at);
  }

  /** The `created_at` of the oldest item that may give way (docs/inbox.md, "Retention"), if any may. */
  oldestRemovable(): string | undefined {
    const [row] = this.storage.sql.exec<{ created_at: string }>(OLDEST_REMOVABLE, 1).toArray();
    return row?.created_at;
  }

  /**
   * Removes, oldest first, the items that may give way (read and not snoozed: never an unread one) that are either
   * created before `cutoff` or among the first `excess` — at most `page` of them (docs/inbox.md, "Retention"). One
   * transaction: the rows, their targets rows, the counters, and one event per IDS_PER_EVENT ids, so the counts and
   * `seq` stay exact and a synced watcher, live or resuming, drops them too. Each removed item's `created_at` is kept
   * a while, so a list cursor naming it still pages on.
   */
  sweep(cutoff: string, excess: number, page: number, now: number): Swept {
    return this.transact(() => {
      const oldest = this.storage.sql
        .exec<{ id: string; template_id: string; created_at: string; archived_at: string | null }>(OLDEST_REMOVABLE, page)
        .toArray();
      // Both rules pick a prefix of the same oldest-first order, so together they pick the longer prefix.
      const end = oldest.findIndex((row, i) => i >= excess && row.created_at >= cutoff);
      const gone = end === -1 ? oldest : oldest.slice(0, end);
      if (gone.length === 0) return { sequenced: [], removed: 0, more: false };
      const ids = gone.map((row) => row.id);
      const idsJson = JSON.stringify(ids);
      const { sql } = this.storage;
      sql.exec(
        `INSERT OR REPLACE INTO inbox_removed (id, created_at, removed_at) SELECT id, created_at, ? FROM inbox_notifications WHERE id IN (${SWEPT_IDS})`,
        now,
        idsJson,
      );
      decideRemoved(this.storage, idsJson, now);
      sql.exec(DELETE_SWEPT_TARGETS, idsJson);
      sql.exec(`DELETE FROM inbox_notifications WHERE id IN (${SWEPT_IDS})`, idsJson);
      sql.exec("DELETE FROM inbox_removed WHERE removed_at < ?", now - REMOVED_KEPT_MS);
      // Read and not snoozed: nothing removed was unread or snoozed, so those counts stand as they are.
      this.counters.bump({ total: -gone.length, archived: -gone.filter((row) => row.archived_at !== null).length });
      const perTemplate = new Map<string, number>();
      for (const row of gone) perTemplate.set(row.template_id, (perTemplate.get(row.template_id) ?? 0) + 1);
      for (const [templateId, removed] of perTemplate) this.counters.bumpTemplate(templateId, 0, -removed);
      this.counters.dropEmptyTemplates();
      const events: InboxEvent[] = inSlices(ids, IDS_PER_EVENT).map((slice) => ({ change: { ids: slice, removed: true as const } }));
      return { sequenced: this.events.record(events), removed: gone.length, more: gone.length === page };
    });
  }

  /**
   * The inbox list: newest first, keyset-paged on (created_at, id) so equal timestamps are never skipped or repeated.
   * Run as SQL text kept per filter shape (src/inbox/list-sql.ts): this is the inbox's hottest call.
   */
  list(filter: ListFilter, startingBefore: string | undefined, limit: number): ListResult {
    const key = JSON.stringify([filter.targets, filter.templates, filter.readStatus, filter.archived, filter.snoozed, startingBefore ?? null, limit]);
    const answer = (json: string): ListResult => ({
      ok: true,
      notificationsJson: json,
      unreadCount: this.counters.get("unread"),
      seq: this.counters.get("seq"),
    });
    if (this.lastPage?.key === key) return answer(this.lastPage.json);
    let cursor: Cursor | undefined;
    if (startingBefore !== undefined) {
      // A cursor that retention removed since still pages on from where it was (docs/inbox.md, "Retention").
      const [row] = this.storage.sql
        .exec<{ created_at: string }>(
          "SELECT created_at FROM inbox_notifications WHERE id = ? UNION ALL SELECT created_at FROM inbox_removed WHERE id = ? LIMIT 1",
          startingBefore,
          startingBefore,
        )
        .toArray();
      if (!row) return { ok: false, reason: "unknown_cursor" };
      cursor = { createdAt: row.created_at, id: startingBefore };
    }
    const { text, params } = listStatement(filter, cursor, limit);
    const { json } = this.storage.sql.exec<{ json: string }>(text, ...params).one();
    this.lastPage = json.length <= PAGE_KEPT_MAX_CHARS ? { key, json } : undefined;
    return answer(json);
  }

  /** Every count at once, read from the counters kept with each change: no row is counted here. */
  counts(): InboxCounts {
    const { counters } = this;
    return {
      unread: counters.get("unread"),
      archived: counters.get("archived"),
      snoozed: counters.get("snoozed"),
      total: counters.get("total"),
      by_template: counters.byTemplate(),
      seq: counters.get("seq"),
    };
  }

  /** Which of these ids are notifications in this inbox. */
  existing(ids: string[]): string[] {
    // One statement of one binding whatever the number of ids (the ids as a JSON array): no query to build per call
    // and no slicing under the bindings limit.
    return this.storage.sql
      .exec<{ id: string }>("SELECT id FROM inbox_notifications WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id", JSON.stringify(ids))
      .toArray()
      .map((r) => r.id);
  }

  /** The state of one notification, for the read-aware e-mail decision; undefined when it is not in this inbox. */
  stateOf(id: string): Pick<InboxRow, "readAt" | "archivedAt"> | undefined {
    return this.storage.db
      .select({ readAt: inboxNotifications.readAt, archivedAt: inboxNotifications.archivedAt })
      .from(inboxNotifications)
      .where(eq(inboxNotifications.id, id))
      .get();
  }

  /** What the list would show for a bulk action's filter, every page of it, newest first (the list's SQL). */
  private selected(filter: ListFilter): StateRow[] {
    const { text, params } = selectionStatement(filter);
    return this.storage.sql.exec<StateRow>(text, ...params).toArray();
  }

  /**
   * Applies an action to these rows inside the caller's transaction: one UPDATE per slice of rows that change alike,
   * the counters by the difference each row makes, and the events — a change per group of ids that changed the same
   * fields to the same values, or, for a wake, the notification itself.
   */
  private apply(rows: StateRow[], action: InboxAction, now: string): Applied {
    const after = new Map<string, StateRow>();
    const groups = new Map<string, { fields: ChangedFields; ids: string[] }>();
    const totals = { unread: 0, archived: 0, snoozed: 0 };
    const templates = new Map<string, number>();
    for (const row of rows) {
      const next = applyAction(row, action, now);
      const fields = changed(row, next);
      if (!fields) continue;
      const [was, is] = [contribution(row), contribution(next)];
      totals.unread += is.unread - was.unread;
      totals.archived += is.archived - was.archived;
      totals.snoozed += is.snoozed - was.snoozed;
      if (is.unread !== was.unread) templates.set(row.templateId, (templates.get(row.templateId) ?? 0) + is.unread - was.unread);
      after.set(row.id, { ...row, ...next });
      const key = JSON.stringify(fields);
      const group = groups.get(key) ?? { fields, ids: [] };
      group.ids.push(row.id);
      groups.set(key, group);
    }
    for (const { fields, ids } of groups.values()) {
      const set = {
        ...("read_at" in fields ? { readAt: fields.read_at } : {}),
        ...("archived_at" in fields ? { archivedAt: fields.archived_at } : {}),
        ...("snoozed_until" in fields ? { snoozedUntil: fields.snoozed_until } : {}),
      };
      for (const slice of inSlices(ids)) this.storage.db.update(inboxNotifications).set(set).where(inArray(inboxNotifications.id, slice)).run();
    }
    this.counters.bump(totals);
    for (const [templateId, unread] of templates) this.counters.bumpTemplate(templateId, unread, 0);
    // A wake is pushed as the notification itself, read back whole once its new state is written.
    const events: InboxEvent[] =
      action.kind === "wake"
        ? this.wokenEvents([...after.keys()])
        : [...groups.values()].flatMap(({ fields, ids }) => inSlices(ids, IDS_PER_EVENT).map((slice) => ({ change: { ids: slice, ...fields } })));
    return { rows: after, events, snoozesMoved: totals.snoozed !== 0 || action.kind === "snooze" };
  }

  /** The notifications that just woke, whole and in the order they were due (the order of `ids`). */
  private wokenEvents(ids: string[]): InboxEvent[] {
    const rows = new Map(
      inSlices(ids).flatMap((slice) =>
        this.storage.db
          .select()
          .from(inboxNotifications)
          .where(inArray(inboxNotifications.id, slice))
          .all()
          .map((row) => [row.id, row] as const),
      ),
    );
    return ids.flatMap((id) => {
      const row = rows.get(id);
      return row ? [{ notification: toInboxNotification(row), wake: true as const }] : [];
    });
  }
}
