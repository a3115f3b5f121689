import type { ListFilter } from "./model";
import type { InboxRow } from "./schema";

/**
 * The SQL text of what a filter selects (docs/inbox.md, "Indexes"): a list page, or every row for a bulk action. Run
 * with `ctx.storage.sql.exec`, not built with drizzle per request: building a query with drizzle cost more CPU than
 * SQLite's own work for a page (docs/benchmarks.md), and two requests of one filter shape differ only in their
 * bindings, so each shape's text is built once per isolate and kept.
 */

/** What an action needs of a row: its id, template and state (a bulk action never loads titles and content). */
export type StateRow = Pick<InboxRow, "id" | "templateId" | "readAt" | "archivedAt" | "snoozedUntil">;

/** Where a page starts: strictly older than this item, in (created_at, id) order. */
export interface Cursor {
  createdAt: string;
  id: string;
}

/** An SQL statement and its bindings, for `ctx.storage.sql.exec`. */
export interface Statement {
  text: string;
  params: SqlStorageValue[];
}

/**
 * What a statement is for: a list page, written as JSON by SQLite (one row, `json`), or a bulk action's selection,
 * every row as a StateRow under its field names.
 */
type Purpose = "list" | "bulk";

const SELECTED: Record<Purpose, string> = {
  list: "n.id, n.user_id, n.template_id, n.targets, n.title, n.content, n.icon, n.actions, n.read_at, n.created_at, n.archived_at, n.snoozed_until",
  bulk: "n.id AS id, n.template_id AS templateId, n.read_at AS readAt, n.archived_at AS archivedAt, n.snoozed_until AS snoozedUntil",
};

/**
 * Texts kept, by filter shape. Module scope, so every inbox object of the isolate shares them; past SHAPES_KEPT the
 * cache starts over (the shapes seen in practice are few: which states are kept, how many templates and targets,
 * whether a cursor is given).
 */
const SHAPES_KEPT = 256;
const texts = new Map<string, string>();

/**
 * The text for one filter shape. The bindings are, in order: the first target, the cursor's created_at and id, the
 * other targets, the templates, the page's limit (see `statement`).
 */
function statementText(filter: ListFilter, purpose: Purpose, targets: number, paged: boolean): string {
  const shape = `${purpose} ${filter.archived} ${filter.snoozed} ${filter.readStatus} ${filter.templates.length} ${targets} ${paged}`;
  const kept = texts.get(shape);
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
  if (texts.size >= SHAPES_KEPT) texts.clear();
  texts.set(shape, text);
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

/** The statement of every row a bulk action's filter selects, as StateRows, newest first. */
export function selectionStatement(filter: ListFilter): Statement {
  return statement(filter, undefined);
}
