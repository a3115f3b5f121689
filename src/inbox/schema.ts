import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

/** One row per notification delivered to this object's user (the object holds exactly one user's inbox). */
export const inboxNotifications = sqliteTable(
  "inbox_notifications",
  {
    /** The notification message id: delivering the same message twice finds this key and stores nothing. */
    id: text("id").primaryKey(),
    userId: text("user_id").notNull(),
    templateId: text("template_id").notNull(),
    targets: text("targets", { mode: "json" }).$type<string[]>().notNull().default(sql`'[]'`),
    /** Markdown; plaintext is derived when a watcher asks for it. */
    title: text("title").notNull(),
    content: text("content").notNull(),
    icon: text("icon").notNull(),
    actions: text("actions", { mode: "json" }).$type<{ label: string; url: string }[]>().notNull().default(sql`'[]'`),
    readAt: text("read_at"),
    createdAt: text("created_at").notNull(),
    /** Set when archived (docs/inbox.md): an archived item is read by definition. */
    archivedAt: text("archived_at"),
    /** While set, the item is hidden from the default list and not unread; the object's alarm wakes it then. */
    snoozedUntil: text("snoozed_until"),
  },
  (t) => [
    // Newest-first keyset pages: ORDER BY created_at DESC, id DESC and (created_at, id) < (?, ?).
    index("inbox_created_id").on(t.createdAt, t.id),
    // Unread pages without scanning read rows.
    index("inbox_unread").on(t.readAt, t.createdAt, t.id),
    // The `templates` filter, newest first per template: one that matches nothing reads nothing (docs/inbox.md, "Indexes").
    index("inbox_template").on(t.templateId, t.createdAt, t.id),
    // The default list (neither archived nor snoozed) without scanning what it leaves out.
    index("inbox_visible").on(t.createdAt, t.id).where(sql`${t.archivedAt} IS NULL AND ${t.snoozedUntil} IS NULL`),
    // The alarm's next wake-up: the earliest snoozed item.
    index("inbox_snoozed").on(t.snoozedUntil).where(sql`${t.snoozedUntil} IS NOT NULL`),
    // Retention, oldest first: the items that may give way, read and not snoozed (docs/inbox.md, "Retention").
    index("inbox_removable").on(t.createdAt, t.id).where(sql`${t.readAt} IS NOT NULL AND ${t.snoozedUntil} IS NULL`),
  ],
);

/**
 * One row per (target, notification): the `targets` filter reads a target's notifications newest first here, instead
 * of opening every row's JSON array (docs/inbox.md, "Indexes"). Written in the transaction that delivers the
 * notification and deleted in the one that removes it (docs/inbox.md, "Retention"); a notification's targets and
 * `created_at` never change, so the rows never need updating. The key is the whole row, so every lookup is answered by
 * the key's index alone.
 */
export const inboxTargets = sqliteTable(
  "inbox_targets",
  {
    target: text("target").notNull(),
    /** The notification's `created_at`, so a target's rows are in list order (and keyset-paged) without the notification. */
    createdAt: text("created_at").notNull(),
    notificationId: text("notification_id").notNull(),
  },
  (t) => [primaryKey({ columns: [t.target, t.createdAt, t.notificationId] })],
);

/**
 * Every change to the inbox, numbered (docs/inbox.md, "Sequenced sync"): `seq` is the user's sequence, the frame is
 * what a watcher is sent (before per-socket rendering). Kept for at least 10,000 events and 7 days, for resume.
 */
export const inboxEvents = sqliteTable("inbox_events", {
  seq: integer("seq").primaryKey(),
  /** Epoch ms, for the 7-day retention. */
  at: integer("at").notNull(),
  /** The event as JSON: `{"notification": …, "wake"?: true}` or `{"change": …}`; see InboxEvent in src/inbox/watch.ts. */
  event: text("event").notNull(),
  /** The unread count right after the change, as its frame carries it. */
  unread: integer("unread").notNull(),
});

/** Per-template counts, kept in the same transaction as every change (GET /notifications/inbox/counts). */
export const inboxTemplateCounts = sqliteTable("inbox_template_counts", {
  templateId: text("template_id").primaryKey(),
  unread: integer("unread").notNull(),
  total: integer("total").notNull(),
});

/** Counters kept beside the rows so that no request ever counts the whole inbox. */
export const inboxCounters = sqliteTable("inbox_counters", {
  name: text("name").primaryKey(),
  value: integer("value").notNull(),
});

export type InboxRow = typeof inboxNotifications.$inferSelect;

/**
 * The notifications retention removed in the last 7 days, with their `created_at`: a list page whose cursor
 * (`starting_before`) is one of them still pages on from where it was (docs/inbox.md, "Retention").
 */
export const inboxRemoved = sqliteTable(
  "inbox_removed",
  {
    id: text("id").primaryKey(),
    createdAt: text("created_at").notNull(),
    /** Epoch ms, for dropping the row after 7 days. */
    removedAt: integer("removed_at").notNull(),
  },
  (t) => [index("inbox_removed_at").on(t.removedAt)],
);

/**
 * The limits the Worker last gave this inbox (INBOX_MAX_ITEMS, INBOX_RETENTION) and when its last sweep finished: the
 * alarm's retention duty reads them without a request (docs/inbox.md, "Retention"). One row, `id` 1.
 */
export const inboxRetention = sqliteTable("inbox_retention", {
  id: integer("id").primaryKey(),
  maxItems: integer("max_items").notNull(),
  retentionMs: integer("retention_ms").notNull(),
  /** Epoch ms; null until a sweep has finished. */
  lastSweep: integer("last_sweep"),
});

/**
 * Read-aware e-mail decisions (docs/broadcasts.md): the first answer the object gave for a notification's e-mail copy,
 * kept so that a retried send asks again and gets the same answer: never both sent and skipped.
 */
export const emailDecisions = sqliteTable(
  "email_decisions",
  {
    notificationId: text("notification_id").primaryKey(),
    send: integer("send", { mode: "boolean" }).notNull(),
    decidedAt: text("decided_at").notNull(),
  },
  // Each decision deletes those past their 30 days: a range on this index, not a scan of the table.
  (t) => [index("email_decisions_decided").on(t.decidedAt)],
);

/**
 * Digest windows (docs/schedule.md, "Digests"): at most one open at a time. The first held e-mail opens one; the alarm
 * closes it at `ends_at`, recording the decision (which copies the digest lists, which it leaves out) before anything
 * else happens, then hands it to the message log. `id` is the digest's own message id, so handing off twice finds it.
 */
export const digestWindows = sqliteTable(
  "digest_windows",
  {
    id: text("id").primaryKey(),
    /** Epoch ms. */
    endsAt: integer("ends_at").notNull(),
    /** Who the digest goes to, as the enqueue read them: `{"user_id", "user_email", "user_name", "user_username"}`. */
    recipient: text("recipient", { mode: "json" }).$type<Record<string, string>>().notNull(),
    /** The decision, once the window has closed: see DigestDecision in src/inbox/digests.ts. */
    decision: text("decision", { mode: "json" }).$type<unknown>(),
    /**
     * When the alarm next has work on this window (epoch ms): its end while open, the next try to hand the decision
     * to the message log once closed, null once handed off. The alarm's digest duty is due at the least of these.
     */
    handOffAt: integer("hand_off_at"),
  },
  (t) => [index("digest_windows_due").on(t.handOffAt).where(sql`${t.handOffAt} IS NOT NULL`), index("digest_windows_ends").on(t.endsAt)],
);

/** The e-mail copies held for a window (docs/schedule.md, "Digests"); one row per notification. */
export const digestEntries = sqliteTable(
  "digest_entries",
  {
    notificationId: text("notification_id").primaryKey(),
    /** The e-mail copy's row in the message log. */
    messageId: text("message_id").notNull(),
    windowId: text("window_id").notNull(),
  },
  (t) => [index("digest_entries_window").on(t.windowId)],
);
