import { sql } from "drizzle-orm";
import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

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
  },
  (t) => [
    // Newest-first keyset pages: ORDER BY created_at DESC, id DESC and (created_at, id) < (?, ?).
    index("inbox_created_id").on(t.createdAt, t.id),
    // Unread pages without scanning read rows.
    index("inbox_unread").on(t.readAt, t.createdAt, t.id),
  ],
);

/** Counters kept beside the rows so that no request ever counts the whole inbox. */
export const inboxCounters = sqliteTable("inbox_counters", {
  name: text("name").primaryKey(),
  value: integer("value").notNull(),
});

export type InboxRow = typeof inboxNotifications.$inferSelect;
