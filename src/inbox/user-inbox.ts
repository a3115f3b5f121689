import { DurableObject } from "cloudflare:workers";
import { and, asc, eq, gt, inArray, isNotNull, isNull, lt, lte, min, sql } from "drizzle-orm";
import { type DrizzleSqliteDODatabase, drizzle } from "drizzle-orm/durable-sqlite";
import { migrate } from "drizzle-orm/durable-sqlite/migrator";
import migrations from "../../drizzle/inbox/migrations.js";
import { database } from "../db/client";
import { apiKeys } from "../db/schema";
import { inSlices } from "../db/slices";
import type { Env } from "../env";
import { nowIso } from "../lib/crypto";
import { InboxMessages } from "./messages";
import { fallbackIcon, type InboxDelivery, type InboxNotification, type ListFilter, toInboxNotification, type WatchFormat } from "./model";
import * as schema from "./schema";
import { emailDecisions, type InboxRow, inboxCounters, inboxEvents, inboxNotifications, inboxTemplateCounts } from "./schema";
import { applyAction, type BulkAction, type ChangedFields, changed, contribution, type InboxAction } from "./states";
import {
  AFTER_SEQ_AHEAD,
  CLOSE_RESYNC,
  CLOSE_SESSION_ENDED,
  frameFor,
  type InboxEvent,
  type SequencedEvent,
  sendOrClose,
  WATCH_HEADER,
  type WatchAttachment,
  type WatchRequest,
} from "./watch";

/** The counters kept beside the rows, so that no request ever counts the whole inbox. */
const COUNTERS = ["unread", "archived", "snoozed", "total", "seq"] as const;
type CounterName = (typeof COUNTERS)[number];

/** Events kept for resume (docs/inbox.md, "Sequenced sync"): at least this many, and at least this long. */
const EVENTS_KEPT = 10_000;
const EVENTS_KEPT_MS = 7 * 24 * 60 * 60 * 1000;
/** How long a read-aware e-mail decision is kept (docs/broadcasts.md). */
const DECISIONS_KEPT_MS = 30 * 24 * 60 * 60 * 1000;
/**
 * The largest page kept in memory (docs/inbox.md, "The last page, kept"): a default page of 25 ordinary notifications
 * is about 10,000 characters. Objects share their isolate's memory, so a long page is not kept.
 */
const PAGE_KEPT_MAX_CHARS = 32 * 1024;
/** Ids per change event: a bulk change to more items is several events, so no row nears SQLite's 2 MB limit. */
const IDS_PER_EVENT = 2_000;
/** Events read per query while replaying, so a long replay never holds every frame in memory at once. */
const REPLAY_PAGE = 500;

export type ListResult =
  | { ok: true /** A JSON array of InboxNotification, newest first. */; notificationsJson: string; unreadCount: number; seq: number }
  | { ok: false; reason: "unknown_cursor" };

export type ItemResult = { notification: InboxNotification; unreadCount: number } | null;

export interface InboxCounts {
  unread: number;
  archived: number;
  snoozed: number;
  total: number;
  by_template: { template_id: string; unread: number; total: number }[];
  seq: number;
}

/** A bulk action's selection: these ids (others' are simply not here), or what the list would show for a filter. */
export type BulkSelection = { ids: string[] } | { filter: ListFilter };

/** What an action needs of a row: its id, template and state (a bulk action never loads titles and content). */
type StateRow = Pick<InboxRow, "id" | "templateId" | "readAt" | "archivedAt" | "snoozedUntil">;

const STATE_COLUMNS = {
  id: inboxNotifications.id,
  templateId: inboxNotifications.templateId,
  readAt: inboxNotifications.readAt,
  archivedAt: inboxNotifications.archivedAt,
  snoozedUntil: inboxNotifications.snoozedUntil,
};

/** Where a page starts: strictly older than this item, in (created_at, id) order. */
interface Cursor {
  createdAt: string;
  id: string;
}

/** An SQL statement and its bindings, for `ctx.storage.sql.exec`. */
interface Statement {
  text: string;
  params: SqlStorageValue[];
}

/**
 * What a filter's statement is for: a list page, written as JSON by SQLite (one row, `json`), or a bulk action's
 * selection, every row as a StateRow under its field names (a bulk action never loads titles and content).
 */
type Purpose = "list" | "bulk";

const SELECTED: Record<Purpose, string> = {
  list: "n.id, n.user_id, n.template_id, n.targets, n.title, n.content, n.icon, n.actions, n.read_at, n.created_at, n.archived_at, n.snoozed_until",
  bulk: "n.id AS id, n.template_id AS templateId, n.read_at AS readAt, n.archived_at AS archivedAt, n.snoozed_until AS snoozedUntil",
};

/** Filter shapes whose SQL text is kept; past this the cache starts over (the shapes seen in practice are few). */
const SHAPES_KEPT = 256;
const statements = new Map<string, string>();

/**
 * The SQL text of a filter's statement for one filter shape: which states it keeps, how many templates and targets,
 * whether it starts after a cursor. Built once per shape and kept: building each query with drizzle cost more CPU
 * than SQLite's own work for a page (issue 16), and only the bindings differ between two requests of one shape. The
 * bindings are, in order: the first target, the cursor's created_at and id, the other targets, the templates, the
 * page's limit (see `statement`).
 */
function statementText(filter: ListFilter, purpose: Purpose, targets: number, paged: boolean): string {
  const shape = `${purpose} ${filter.archived} ${filter.snoozed} ${filter.readStatus} ${filter.templates.length} ${targets} ${paged}`;
  const kept = statements.get(shape);
  if (kept !== undefined) return kept;
  const where: string[] = [];
  let from = "inbox_notifications AS n";
  let order = "n.created_at DESC, n.id DESC";
  if (targets > 0) {
    // docs/inbox.md, "Indexes": the first target's rows in inbox_targets drive the query, newest first, so a target
    // that matches nothing reads nothing and a page stops after `limit` matches. Each other target is one lookup of
    // the same key (at most one row: the key is the whole row). CROSS JOIN fixes that order — targets first, the
    // notification last — so SQLite neither walks every notification nor reads one that another target rules out.
    const others = Array.from({ length: targets - 1 }, (_, i) => `u${i}`);
    from = ["inbox_targets AS t", ...others.map((u) => `inbox_targets AS ${u}`), "inbox_notifications AS n ON n.id = t.notification_id"].join(
      " CROSS JOIN ",
    );
    order = "t.created_at DESC, t.notification_id DESC";
    where.push("t.target = ?");
    if (paged) where.push("(t.created_at, t.notification_id) < (?, ?)");
    for (const u of others) where.push(`${u}.target = ? AND ${u}.created_at = t.created_at AND ${u}.notification_id = t.notification_id`);
  } else if (paged) {
    // A row value, so SQLite starts the index walk at the cursor instead of filtering the newer rows out.
    where.push("(n.created_at, n.id) < (?, ?)");
  }
  // Any one of the templates; without targets this is a walk of `inbox_template` per template, newest first.
  if (filter.templates.length > 0) where.push(`n.template_id IN (${filter.templates.map(() => "?").join(", ")})`);
  // Two terms, as `inbox_visible`'s WHERE is written, so that the default list can use that partial index.
  if (filter.archived === "exclude") where.push("n.archived_at IS NULL");
  if (filter.archived === "only") where.push("n.archived_at IS NOT NULL");
  if (filter.snoozed === "exclude") where.push("n.snoozed_until IS NULL");
  if (filter.snoozed === "only") where.push("n.snoozed_until IS NOT NULL");
  // With templates, the unary + keeps SQLite from walking `inbox_unread` (every unread row) in place of the templates'
  // index: without statistics it would, and a template that matches nothing would read every unread row.
  const readAt = filter.templates.length > 0 ? "+n.read_at" : "n.read_at";
  if (filter.readStatus === "read") where.push(`${readAt} IS NOT NULL`);
  if (filter.readStatus === "unread") where.push(`${readAt} IS NULL`);
  const selected = `SELECT ${SELECTED[purpose]} FROM ${from}${where.length > 0 ? ` WHERE ${where.join(" AND ")}` : ""} ORDER BY ${order}`;
  // A page: SQLite writes it as the interface's JSON itself, so no row objects are built, targets and actions are
  // never parsed and stringified, and one string crosses the RPC boundary instead of 25 structured-cloned objects.
  const text =
    purpose === "bulk"
      ? selected
      : `SELECT coalesce(json_group_array(json_object(
          'id', p.id, 'user_id', p.user_id, 'template_id', p.template_id, 'targets', json(p.targets),
          'title', p.title, 'content', p.content, 'icon', p.icon, 'actions', json(p.actions),
          'read_at', p.read_at, 'created_at', p.created_at,
          'archived_at', p.archived_at, 'snoozed_until', p.snoozed_until
        ) ORDER BY p.created_at DESC, p.id DESC), '[]') AS json FROM (${selected} LIMIT ?) AS p`;
  if (statements.size >= SHAPES_KEPT) statements.clear();
  statements.set(shape, text);
  return text;
}

/**
 * The statement of what a filter selects, newest first: one page of the list, after its cursor (exclusive) when it has
 * one, or, without a page, every row for a bulk action.
 */
function statement(filter: ListFilter, page: { cursor: Cursor | undefined; limit: number } | undefined): Statement {
  // A target asked for twice is the same condition: each one costs a lookup per row.
  const targets = [...new Set(filter.targets)];
  const params: SqlStorageValue[] = targets.slice(0, 1);
  if (page?.cursor) params.push(page.cursor.createdAt, page.cursor.id);
  params.push(...targets.slice(1), ...filter.templates);
  if (page) params.push(page.limit);
  return { text: statementText(filter, page ? "list" : "bulk", targets.length, page?.cursor !== undefined), params };
}

/** The statement of one list page, newest first after `cursor`: one row, `json`, the page as a JSON array. */
export function listStatement(filter: ListFilter, cursor: Cursor | undefined, limit: number): Statement {
  return statement(filter, { cursor, limit });
}

/**
 * A delivered notification's rows in inbox_targets, one per distinct target: the backfill of
 * drizzle/inbox/0003_filter_indexes.sql for one notification, so old and new rows are written alike.
 */
const INSERT_TARGETS =
  "INSERT INTO inbox_targets (target, created_at, notification_id) SELECT DISTINCT targets.value, n.created_at, n.id FROM inbox_notifications AS n, json_each(n.targets) AS targets WHERE n.id = ?";

/** What a change to some rows did, inside its transaction: the rows' states after it and the events to number. */
interface Applied {
  rows: Map<string, StateRow>;
  events: InboxEvent[];
  /** Whether any snooze started or ended: the alarm must be re-armed. */
  snoozesMoved: boolean;
}

/**
 * One object per user (`idFromName(userId)`): that user's inbox rows, its counters, its numbered events and the live
 * watch sockets. Every method runs on the object's single thread with synchronous SQLite, so a change, its counts and
 * its event commit together and can never interleave with another request (docs/inbox.md).
 */
export class UserInbox extends DurableObject<Env> {
  private readonly db: DrizzleSqliteDODatabase<typeof schema>;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.db = drizzle(ctx.storage, { schema });
    void ctx.blockConcurrencyWhile(async () => {
      await migrate(this.db, migrations);
    });
    // Answered by the runtime itself: idle watchers keep their connection alive without waking the object.
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair("ping", "pong"));
  }

  /** The counters are read once per object lifetime, then kept beside the SQLite rows they mirror. */
  private counters: Map<CounterName, number> | undefined;

  private counterMap(): Map<CounterName, number> {
    this.counters ??= new Map(
      this.db
        .select()
        .from(inboxCounters)
        .all()
        .map((row) => [row.name as CounterName, row.value]),
    );
    return this.counters;
  }

  private counter(name: CounterName): number {
    return this.counterMap().get(name) ?? 0;
  }

  private setCounter(name: CounterName, value: number): void {
    this.counterMap().set(name, value);
    this.db.insert(inboxCounters).values({ name, value }).onConflictDoUpdate({ target: inboxCounters.name, set: { value } }).run();
  }

  private bump(deltas: Partial<Record<CounterName, number>>): void {
    for (const name of COUNTERS) {
      const delta = deltas[name] ?? 0;
      if (delta !== 0) this.setCounter(name, this.counter(name) + delta);
    }
  }

  private bumpTemplate(templateId: string, unread: number, total: number): void {
    if (unread === 0 && total === 0) return;
    this.db
      .insert(inboxTemplateCounts)
      .values({ templateId, unread, total })
      .onConflictDoUpdate({
        target: inboxTemplateCounts.templateId,
        set: { unread: sql`${inboxTemplateCounts.unread} + ${unread}`, total: sql`${inboxTemplateCounts.total} + ${total}` },
      })
      .run();
  }

  /**
   * The last page listed, as the JSON `list` answered it, and the arguments it was asked with (docs/inbox.md, "The
   * last page, kept"). Every change to the rows runs in `transact`, which drops it first, so a kept page is always
   * what the SQL would answer now.
   */
  private lastPage: { key: string; json: string } | undefined;

  /**
   * A transaction: the only way the inbox's rows change. It drops the kept page before the work, and a failure also
   * drops the in-memory counters (SQLite rolled back; memory must not lie).
   */
  private transact<T>(work: () => T): T {
    this.lastPage = undefined;
    try {
      return this.ctx.storage.transactionSync(work);
    } catch (error) {
      this.counters = undefined;
      throw error;
    }
  }

  /**
   * Numbers the events of the current transaction (the next values of the user's sequence, no gaps), stores them for
   * resume, and forgets what is both beyond the last EVENTS_KEPT and older than EVENTS_KEPT_MS.
   */
  private record(events: InboxEvent[]): SequencedEvent[] {
    if (events.length === 0) return [];
    const at = Date.now();
    const unread = this.counter("unread");
    let seq = this.counter("seq");
    const sequenced = events.map((event) => ({ seq: ++seq, event, unread }));
    for (const slice of inSlices(sequenced, 20)) {
      this.db
        .insert(inboxEvents)
        .values(slice.map((e) => ({ seq: e.seq, at, event: JSON.stringify(e.event), unread })))
        .run();
    }
    this.setCounter("seq", seq);
    this.db
      .delete(inboxEvents)
      .where(and(lte(inboxEvents.seq, seq - EVENTS_KEPT), lt(inboxEvents.at, at - EVENTS_KEPT_MS)))
      .run();
    return sequenced;
  }

  /**
   * Stores a notification and pushes it to matching watchers. Idempotent on the message id: a redelivery finds the
   * row, stores nothing and pushes nothing.
   */
  deliver(delivery: InboxDelivery): { stored: boolean; unreadCount: number } {
    const sequenced = this.transact(() => {
      const inserted = this.db
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
      if (inserted.targets.length > 0) this.ctx.storage.sql.exec(INSERT_TARGETS, inserted.id);
      this.bump({ total: 1, unread: 1 });
      this.bumpTemplate(inserted.templateId, 1, 1);
      return this.record([{ notification: toInboxNotification(inserted) }]);
    });
    this.push(sequenced);
    return { stored: sequenced.length > 0, unreadCount: this.counter("unread") };
  }

  /**
   * Read-aware e-mail (docs/broadcasts.md): whether the e-mail copy of notification `id` goes out now that it is due.
   * It does while the inbox copy is unread and not archived (or absent: the user cannot have read what never
   * arrived). The first answer is kept and given again, so a send that is retried after a failure is never skipped,
   * and a skipped one never sent. On the object's thread the answer and a read cannot interleave: a read that lands
   * first skips the e-mail, one that lands after it finds the e-mail already decided.
   */
  emailDecision(id: string): { send: boolean } {
    const decided = this.db.select({ send: emailDecisions.send }).from(emailDecisions).where(eq(emailDecisions.notificationId, id)).get();
    if (decided) return decided;
    const item = this.db
      .select({ readAt: inboxNotifications.readAt, archivedAt: inboxNotifications.archivedAt })
      .from(inboxNotifications)
      .where(eq(inboxNotifications.id, id))
      .get();
    const send = !item || (item.readAt === null && item.archivedAt === null);
    const now = Date.now();
    this.db
      .insert(emailDecisions)
      .values({ notificationId: id, send, decidedAt: nowIso(now) })
      .run();
    // A decision is asked for only while its message is being sent, which ends within NOTIFICATIONS_MAX_AGE of
    // its creation (days): a month later nobody asks again.
    this.db
      .delete(emailDecisions)
      .where(lt(emailDecisions.decidedAt, nowIso(now - DECISIONS_KEPT_MS)))
      .run();
    return { send };
  }

  /**
   * The inbox list: newest first, keyset-paged on (created_at, id) so equal timestamps are never skipped or repeated.
   * Run as SQL text kept per filter shape (`listStatement`): this is the inbox's hottest call.
   */
  list(filter: ListFilter, startingBefore: string | undefined, limit: number): ListResult {
    const key = JSON.stringify([filter.targets, filter.templates, filter.readStatus, filter.archived, filter.snoozed, startingBefore ?? null, limit]);
    const kept = this.lastPage;
    if (kept?.key === key) return { ok: true, notificationsJson: kept.json, unreadCount: this.counter("unread"), seq: this.counter("seq") };
    let cursor: Cursor | undefined;
    if (startingBefore !== undefined) {
      const [row] = this.ctx.storage.sql
        .exec<{ created_at: string }>("SELECT created_at FROM inbox_notifications WHERE id = ?", startingBefore)
        .toArray();
      if (!row) return { ok: false, reason: "unknown_cursor" };
      cursor = { createdAt: row.created_at, id: startingBefore };
    }
    const { text, params } = listStatement(filter, cursor, limit);
    const { json } = this.ctx.storage.sql.exec<{ json: string }>(text, ...params).one();
    this.lastPage = json.length <= PAGE_KEPT_MAX_CHARS ? { key, json } : undefined;
    return { ok: true, notificationsJson: json, unreadCount: this.counter("unread"), seq: this.counter("seq") };
  }

  /** Every count at once, read from the counters kept with each change: no row is counted here. */
  counts(): InboxCounts {
    // Plain SQL text, as list(): no query to build per call.
    const byTemplate = this.ctx.storage.sql
      .exec<{ template_id: string; unread: number; total: number }>(
        "SELECT template_id, unread, total FROM inbox_template_counts ORDER BY template_id",
      )
      .toArray();
    return {
      unread: this.counter("unread"),
      archived: this.counter("archived"),
      snoozed: this.counter("snoozed"),
      total: this.counter("total"),
      by_template: byTemplate.map((t) => ({ template_id: t.template_id, unread: t.unread, total: t.total })),
      seq: this.counter("seq"),
    };
  }

  /** Which of these ids are notifications in this inbox (`POST /authcheck` `resource_id` lookups). */
  existing(ids: string[]): string[] {
    // One statement of one binding whatever the number of ids (the ids as a JSON array): no query to build per call
    // and no slicing under the bindings limit.
    return this.ctx.storage.sql
      .exec<{ id: string }>("SELECT id FROM inbox_notifications WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id", JSON.stringify(ids))
      .toArray()
      .map((r) => r.id);
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
      for (const slice of inSlices(ids)) this.db.update(inboxNotifications).set(set).where(inArray(inboxNotifications.id, slice)).run();
    }
    this.bump(totals);
    for (const [templateId, unread] of templates) this.bumpTemplate(templateId, unread, 0);
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
        this.db
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

  /** One item's read, archive or snooze state; null when the notification is not in this inbox. */
  private async changeOne(id: string, action: InboxAction): Promise<ItemResult> {
    const now = nowIso();
    const result = this.transact(() => {
      const row = this.db.select().from(inboxNotifications).where(eq(inboxNotifications.id, id)).get();
      if (!row) return null;
      const applied = this.apply([row], action, now);
      return { row: { ...row, ...applied.rows.get(id) }, sequenced: this.record(applied.events), snoozesMoved: applied.snoozesMoved };
    });
    if (!result) return null;
    this.push(result.sequenced);
    if (result.snoozesMoved) await this.rearm(Date.now());
    return { notification: toInboxNotification(result.row), unreadCount: this.counter("unread") };
  }

  /** read-status: sets or clears `read_at` (marking an archived item unread brings it back: archived means read). */
  setReadStatus(id: string, isRead: boolean): Promise<ItemResult> {
    return this.changeOne(id, { kind: isRead ? "read" : "unread" });
  }

  setArchived(id: string, archived: boolean): Promise<ItemResult> {
    return this.changeOne(id, { kind: archived ? "archive" : "unarchive" });
  }

  /** Snoozes until `until` (an ISO timestamp the Worker checked), or, with null, wakes the item now. */
  snooze(id: string, until: string | null): Promise<ItemResult> {
    return this.changeOne(id, until === null ? { kind: "wake" } : { kind: "snooze", until });
  }

  /**
   * mark-all-as-read: every unread notification becomes read now; already-read ones keep their `read_at`, snoozed ones
   * their state (they are not unread until they wake).
   */
  markAllRead(): { unreadCount: number } {
    const readAt = nowIso();
    const sequenced = this.transact(() => {
      // Unread is neither read nor snoozed (docs/inbox.md): a snoozed item keeps its state until it wakes.
      const isUnread = and(isNull(inboxNotifications.readAt), isNull(inboxNotifications.snoozedUntil));
      const unread = this.db.select({ n: sql<number>`count(*)` }).from(inboxNotifications).where(isUnread).get()?.n ?? 0;
      if (unread === 0) return [];
      this.db.update(inboxNotifications).set({ readAt }).where(isUnread).run();
      this.setCounter("unread", 0);
      this.db.update(inboxTemplateCounts).set({ unread: 0 }).run();
      return this.record([{ change: { all: true, read_at: readAt } }]);
    });
    this.push(sequenced);
    return { unreadCount: 0 };
  }

  /**
   * A bulk action in one transaction: every selected item that the action changes, or none. Ids that are not in this
   * inbox are not here to find, so they are neither counted nor revealed.
   */
  async bulk(action: BulkAction, selection: BulkSelection): Promise<{ updated: number; unreadCount: number }> {
    const now = nowIso();
    const result = this.transact(() => {
      const rows =
        "ids" in selection
          ? inSlices([...new Set(selection.ids)]).flatMap((slice) =>
              this.db.select(STATE_COLUMNS).from(inboxNotifications).where(inArray(inboxNotifications.id, slice)).all(),
            )
          : this.selected(selection.filter);
      const applied = this.apply(rows, { kind: action }, now);
      return { updated: applied.rows.size, sequenced: this.record(applied.events), snoozesMoved: applied.snoozesMoved };
    });
    this.push(result.sequenced);
    if (result.snoozesMoved) await this.rearm(Date.now());
    return { updated: result.updated, unreadCount: this.counter("unread") };
  }

  /** What the list would show for a bulk action's filter, every page of it, newest first (the list's SQL). */
  private selected(filter: ListFilter): StateRow[] {
    const { text, params } = statement(filter, undefined);
    return this.ctx.storage.sql.exec<StateRow>(text, ...params).toArray();
  }

  /** Wakes every item whose snooze is due at `now` (epoch ms): unread again, pushed as a new notification. */
  wakeDue(now: number): number {
    const due = nowIso(now);
    const sequenced = this.transact(() => {
      const rows = this.db
        .select(STATE_COLUMNS)
        .from(inboxNotifications)
        .where(and(isNotNull(inboxNotifications.snoozedUntil), lte(inboxNotifications.snoozedUntil, due)))
        .orderBy(asc(inboxNotifications.snoozedUntil), asc(inboxNotifications.id))
        .all();
      return this.record(this.apply(rows, { kind: "wake" }, due).events);
    });
    this.push(sequenced);
    return sequenced.length;
  }

  /**
   * The watch: the Worker has authenticated the caller and validated the query; this accepts the socket and, with
   * `after_seq`, first replays every event after it that the socket would have received live.
   */
  override async fetch(request: Request): Promise<Response> {
    const header = request.headers.get(WATCH_HEADER);
    if (request.headers.get("Upgrade")?.toLowerCase() !== "websocket" || !header) {
      return new Response("Expected a WebSocket upgrade from the Herald Worker.", { status: 400 });
    }
    const { attachment, keyId, expiresAt, protocol, afterSeq } = JSON.parse(header) as WatchRequest;
    const seq = this.counter("seq");
    if (afterSeq !== undefined && afterSeq > seq) return new Response(InboxMessages.afterSeqAhead(seq), { status: AFTER_SEQ_AHEAD });
    const stored: WatchAttachment = { ...attachment, session: { keyId, expiresAt } };
    await this.rearm(Date.now(), expiresAt);
    // From here to the response nothing awaits: the replay and the socket's first live frame cannot interleave.
    const pair = new WebSocketPair();
    const [client, server] = Object.values(pair) as [WebSocket, WebSocket];
    // Hibernatable: the filters live in the attachment, so they survive the object being evicted.
    // Tagged with the credential's key id, so ending that session can close exactly its sockets.
    this.ctx.acceptWebSocket(server, [keyId]);
    server.serializeAttachment(stored);
    if (afterSeq !== undefined) this.replay(server, stored, afterSeq);
    const headers = protocol ? { "Sec-WebSocket-Protocol": protocol } : undefined;
    return new Response(null, { status: 101, webSocket: client, headers });
  }

  /** Sends a new socket every kept event after `afterSeq`, or closes it with 4409 when some are no longer kept. */
  private replay(ws: WebSocket, attachment: WatchAttachment, afterSeq: number): void {
    const seq = this.counter("seq");
    if (afterSeq === seq) return;
    const oldest =
      this.db
        .select({ seq: min(inboxEvents.seq) })
        .from(inboxEvents)
        .get()?.seq ?? null;
    if (oldest === null || oldest > afterSeq + 1) {
      ws.close(CLOSE_RESYNC, InboxMessages.resync);
      return;
    }
    for (let from = afterSeq; from < seq; ) {
      const page = this.db.select().from(inboxEvents).where(gt(inboxEvents.seq, from)).orderBy(asc(inboxEvents.seq)).limit(REPLAY_PAGE).all();
      if (page.length === 0) break;
      for (const row of page) {
        const frame = frameFor({ seq: row.seq, event: JSON.parse(row.event) as InboxEvent, unread: row.unread }, attachment, new Map());
        if (frame !== undefined) sendOrClose(ws, frame);
      }
      from = page[page.length - 1]?.seq ?? seq;
    }
  }

  /**
   * Closes the watch sockets opened with a credential that no longer works (logout, key deleted, password reset,
   * suspension…), or every socket when no key is given. A socket must not outlive the session that opened it.
   */
  endWatches(keyIds?: string[]): number {
    const sockets = keyIds ? keyIds.flatMap((id) => this.ctx.getWebSockets(id)) : this.ctx.getWebSockets();
    for (const ws of sockets) {
      try {
        ws.close(CLOSE_SESSION_ENDED, InboxMessages.sessionEnded);
      } catch {
        // already closing
      }
    }
    return sockets.length;
  }

  /**
   * One alarm per object, set to the earliest thing due: a snoozed item's wake-up, or a watched session's expiry
   * (`pendingExpiry`: a socket about to be accepted). Re-armed whenever either changes.
   */
  private async rearm(now: number, pendingExpiry?: number): Promise<void> {
    const snooze =
      this.db
        .select({ at: min(inboxNotifications.snoozedUntil) })
        .from(inboxNotifications)
        .where(isNotNull(inboxNotifications.snoozedUntil))
        .get()?.at ?? null;
    const candidates = this.ctx
      .getWebSockets()
      .map((ws) => (ws.deserializeAttachment() as WatchAttachment | null)?.session?.expiresAt)
      .filter((t): t is number => t !== undefined && t > now);
    if (pendingExpiry !== undefined) candidates.push(pendingExpiry);
    if (snooze !== null) candidates.push(Date.parse(snooze));
    const current = await this.ctx.storage.getAlarm();
    if (candidates.length === 0) {
      if (current !== null) await this.ctx.storage.deleteAlarm();
      return;
    }
    const next = Math.min(...candidates);
    if (current !== next) await this.ctx.storage.setAlarm(next);
  }

  /**
   * Wakes the snoozed items that are due, then closes, with 4401, the sockets whose session has expired. A login
   * session slides forward on use, so the expiry a socket recorded is checked against D1 first: a session still alive
   * keeps its socket and its new expiry. Then the alarm is set for whatever is due next.
   */
  override async alarm(): Promise<void> {
    const now = Date.now();
    this.wakeDue(now);
    await this.endExpiredSessions(now);
    await this.rearm(now);
  }

  private async endExpiredSessions(now: number): Promise<void> {
    const due = this.ctx.getWebSockets().flatMap((ws) => {
      const session = (ws.deserializeAttachment() as WatchAttachment | null)?.session;
      return session && session.expiresAt <= now ? [{ ws, session }] : [];
    });
    if (due.length === 0) return;
    const keyIds = [...new Set(due.map((d) => d.session.keyId))];
    const db = database(this.env.DB);
    const rows = await Promise.all(
      inSlices(keyIds).map((slice) => db.select({ id: apiKeys.id, expiresAt: apiKeys.expiresAt }).from(apiKeys).where(inArray(apiKeys.id, slice))),
    );
    const current = new Map(rows.flat().map((k) => [k.id, Date.parse(k.expiresAt)] as const));
    for (const { ws, session } of due) {
      const expiresAt = current.get(session.keyId);
      if (expiresAt !== undefined && expiresAt > now) {
        ws.serializeAttachment({ ...(ws.deserializeAttachment() as WatchAttachment), session: { ...session, expiresAt } });
        continue;
      }
      try {
        ws.close(CLOSE_SESSION_ENDED, InboxMessages.sessionExpired);
      } catch {
        // already closing
      }
    }
  }

  override webSocketMessage(): void {
    // The watch is one-way. Pings are answered by the auto-response without reaching here; anything else is ignored.
  }

  override webSocketClose(ws: WebSocket, code: number, reason: string): void {
    // Complete the closing handshake the client started.
    try {
      ws.close(code === 1005 ? 1000 : code, reason);
    } catch {
      // already closed
    }
  }

  /** Sends each event, in `seq` order, to every socket that receives it (rendered once per format and event). */
  private push(sequenced: SequencedEvent[]): void {
    if (sequenced.length === 0) return;
    const sockets = this.ctx.getWebSockets().flatMap((ws) => {
      const attachment = ws.deserializeAttachment() as WatchAttachment | null;
      return attachment ? [{ ws, attachment }] : [];
    });
    if (sockets.length === 0) return;
    for (const event of sequenced) {
      const rendered = new Map<WatchFormat, string>();
      for (const { ws, attachment } of sockets) {
        const frame = frameFor(event, attachment, rendered);
        if (frame !== undefined) sendOrClose(ws, frame);
      }
    }
  }
}
