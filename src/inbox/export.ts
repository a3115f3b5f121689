import * as z from "zod";
import { boolean, type Columns, exportedColumns, integer, integerOrNull, json, text, textOrNull } from "../privacy/columns";
import type { InboxStorage } from "./storage";

/**
 * What a user's export holds of their inbox object (docs/privacy.md, "The export"): each of the object's tables, in
 * the order it is written, with every column exported or withheld; or the table left out, with the reason. The
 * object writes each page as JSON itself, so a page of its rows crosses to the Worker as one string.
 */
export interface InboxSection {
  key: string;
  table: string;
  description: string;
  columns: Columns;
}

const action = z.strictObject({ label: z.string(), url: z.string() });

export const INBOX_SECTIONS = [
  {
    key: "notifications",
    table: "inbox_notifications",
    description: "Every item of the inbox with its states (read, archived, snoozed), oldest first.",
    columns: {
      id: text,
      user_id: text,
      template_id: text,
      targets: json(z.array(z.string())),
      title: text,
      content: text,
      icon: text,
      actions: json(z.array(action)),
      read_at: textOrNull,
      created_at: text,
      archived_at: textOrNull,
      snoozed_until: textOrNull,
    },
  },
  {
    key: "events",
    table: "inbox_events",
    description: 'The numbered changes the inbox keeps for resuming a watch (docs/inbox.md, "Sequenced sync and resume").',
    columns: { seq: integer, at: integer, event: json(), unread: integer },
  },
  {
    key: "removed",
    table: "inbox_removed",
    description: "Items retention removed in the last 7 days: their ids and dates, kept for list cursors.",
    columns: { id: text, created_at: text, removed_at: integer },
  },
  {
    key: "counters",
    table: "inbox_counters",
    description: "The counts kept beside the items (unread, archived, snoozed, total, seq).",
    columns: { name: text, value: integer },
  },
  {
    key: "template_counts",
    table: "inbox_template_counts",
    description: "The counts per template.",
    columns: { template_id: text, unread: integer, total: integer },
  },
  {
    key: "email_decisions",
    table: "email_decisions",
    description: "Whether the e-mail copy of a notification went out, decided when it fell due (read-aware e-mail).",
    columns: { notification_id: text, send: boolean, decided_at: text },
  },
  {
    key: "digest_windows",
    table: "digest_windows",
    description: "Digest windows: open, or closed with the decision of what the digest listed.",
    columns: {
      id: text,
      ends_at: integer,
      recipient: json(z.record(z.string(), z.string())),
      decision: json(z.record(z.string(), z.unknown()), true),
      hand_off_at: integerOrNull,
    },
  },
  {
    key: "digest_entries",
    table: "digest_entries",
    description: "The e-mail copies held for a digest window.",
    columns: { notification_id: text, message_id: text, window_id: text },
  },
] as const satisfies readonly InboxSection[];

/** The object's tables the export leaves out, and why (docs/privacy.md, "What the export leaves out"). */
export const INBOX_EXCLUDED: Readonly<Record<string, string>> = {
  inbox_targets: "an index of each item's `targets`, which the items themselves carry",
  inbox_retention: "the deployment's INBOX_MAX_ITEMS and INBOX_RETENTION as the object last received them, and when it last swept: about no one",
};

/** Rows per export page: a page of ordinary notifications is a few hundred KB of JSON. */
export const EXPORT_PAGE_ROWS = 500;

export type InboxSectionKey = (typeof INBOX_SECTIONS)[number]["key"];

/** One page of a section, as JSON, and the rowid to continue after (null when the section is done). */
export interface ExportPage {
  json: string;
  rows: number;
  next: number | null;
}

/** The SQL of one page of each section, built once per isolate: the columns as a JSON object each, by rowid. */
const pageTexts = new Map<string, string>();

function pageText(section: InboxSection): string {
  const kept = pageTexts.get(section.key);
  if (kept !== undefined) return kept;
  const fields = exportedColumns(section.columns).map(({ column, field, spec }) => {
    const value =
      spec.kind === "json" ? `json(${column})` : spec.kind === "boolean" ? `json(CASE WHEN ${column} THEN 'true' ELSE 'false' END)` : column;
    return `'${field}', ${value}`;
  });
  const text = `SELECT json_group_array(json(o)) AS page, count(*) AS rows, max(r) AS last FROM (SELECT rowid AS r, json_object(${fields.join(", ")}) AS o FROM ${section.table} WHERE rowid > ? ORDER BY rowid LIMIT ?)`;
  pageTexts.set(section.key, text);
  return text;
}

/** One page of `key`'s rows after `after` (a rowid; 0 for the first page). */
export function exportPage(storage: InboxStorage, key: string, after: number, limit = EXPORT_PAGE_ROWS): ExportPage {
  const section: InboxSection | undefined = INBOX_SECTIONS.find((s) => s.key === key);
  if (!section) throw new Error(`no inbox export section "${key}"`);
  const row = storage.sql.exec<{ page: string; rows: number; last: number | null }>(pageText(section), after, limit).one();
  return { json: row.page, rows: row.rows, next: row.rows < limit ? null : row.last };
}
