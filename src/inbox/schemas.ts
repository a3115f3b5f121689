import * as z from "zod";
import { uuid } from "../http/ids";
import { count, timestamp } from "../http/schemas";
import { described, named } from "../openapi/registry";
import { BULK_ACTIONS } from "./states";

/** Filters are kept in each watch socket's attachment (2 KiB at most), which bounds how many ids a filter holds. */
const MAX_FILTER_IDS = 16;
const DEFAULT_PAGE_SIZE = 25;

/** A comma-separated list of UUIDs (`targets`, `templates`), one validation naming the first bad entry. */
const uuidList = z
  .string()
  .max(2048)
  .transform((text, ctx) => {
    const ids = text
      .split(",")
      .map((s) => s.trim().toLowerCase())
      .filter((s) => s !== "");
    const bad = ids.find((id) => !uuid.safeParse(id).success);
    if (bad !== undefined) {
      ctx.addIssue({ code: "custom", message: `"${bad.slice(0, 64)}" is not a valid UUID.` });
      return z.NEVER;
    }
    if (ids.length > MAX_FILTER_IDS) {
      ctx.addIssue({ code: "custom", message: `At most ${MAX_FILTER_IDS} ids.` });
      return z.NEVER;
    }
    return [...new Set(ids)];
  })
  .default([]);

const READ_STATUSES = ["all", "read", "unread"] as const;
const readStatus = z.enum(READ_STATUSES).default("all");
const INCLUSIONS = ["exclude", "include", "only"] as const;
/** Archived and snoozed items are left out of the list unless asked for (docs/inbox.md, "Item states"). */
const inclusion = z.enum(INCLUSIONS).default("exclude");
const flag = z
  .enum(["true", "false"])
  .default("false")
  .transform((v) => v === "true");

/** How title and content are rendered: as stored (Markdown) or stripped to plain text (docs/inbox.md). */
const format = z.enum(["markdown", "plaintext"]).default("markdown");

/** The inbox list query; unknown parameters are rejected (docs/api.md, Notifications). */
export const listInboxQuery = z.strictObject({
  targets: uuidList,
  templates: uuidList,
  read_status: readStatus,
  archived: inclusion,
  snoozed: inclusion,
  starting_before: uuid.optional(),
  limit: z.coerce.number().int().min(1).max(100).default(DEFAULT_PAGE_SIZE),
  format,
});

/** The watch query: the list's filters plus the rendering format, change sync and resume (docs/inbox.md). */
export const watchInboxQuery = z.strictObject({
  targets: uuidList,
  templates: uuidList,
  read_status: readStatus,
  format,
  sync: flag,
  /** The first name of `sync`, still accepted (docs/api.md, "Watching the inbox"). */
  sync_read_state: flag,
  // Digits only: an empty `after_seq=` must not be read as 0 (a replay of everything).
  after_seq: z
    .string()
    .regex(/^\d{1,16}$/, "A seq: a whole number, 0 or more.")
    .transform(Number)
    .pipe(z.number().max(Number.MAX_SAFE_INTEGER))
    .optional(),
});

export const notificationIdParam = z.object({ id: uuid });

/** The read-status body: `is_read` is required. */
export const readStatusBody = named("UpdateInboxNotificationReadStatusRequest", z.object({ is_read: z.boolean() }));

export const archiveStatusBody = named("UpdateInboxNotificationArchiveStatusRequest", z.object({ is_archived: z.boolean() }));

/** A snooze lasts at least a minute and at most 366 days (docs/inbox.md); checked against the clock when it arrives. */
export const SNOOZE_MIN_MS = 60_000;
export const SNOOZE_MAX_MS = 366 * 24 * 60 * 60 * 1000;

export const snoozeBody = named(
  "SnoozeInboxNotificationRequest",
  z.object({
    until: described(
      "When the notification comes back, RFC 3339 with a zone: at least 1 minute and at most 366 days ahead. `null` wakes it now.",
      z.iso.datetime({ offset: true }).nullable(),
    ),
  }),
);

const idArray = z.array(uuid).min(1).max(100);

/** A bulk action's filter: the list's, with archived items left out unless asked for (snoozed ones always are). */
const bulkFilter = z.strictObject({
  templates: z.array(uuid).max(MAX_FILTER_IDS).optional(),
  targets: z.array(uuid).max(MAX_FILTER_IDS).optional(),
  read_status: z.enum(READ_STATUSES).optional(),
  archived: z.enum(INCLUSIONS).optional(),
});

export const bulkBody = named(
  "BulkInboxActionRequest",
  z.strictObject({ action: z.enum(BULK_ACTIONS), ids: idArray.optional(), filter: bulkFilter.optional() }).superRefine((body, ctx) => {
    if ((body.ids === undefined) === (body.filter === undefined)) {
      ctx.addIssue({ code: "custom", path: [body.ids === undefined ? "ids" : "filter"], message: "Give exactly one of ids and filter." });
    }
  }),
  "Exactly one of `ids` (1–100 of the caller's notification ids; others are ignored) or `filter` (what the list would show for it, snoozed items left out).",
  // The superRefine above, as JSON Schema: exactly one of the two.
  {
    anyOf: [
      { required: ["ids"], properties: { filter: false } },
      { required: ["filter"], properties: { ids: false } },
    ],
  },
);

export const InboxNotification = named(
  "InboxNotification",
  z.strictObject({
    id: uuid,
    user_id: uuid,
    template_id: uuid,
    targets: z.array(uuid),
    title: z.string(),
    content: z.string(),
    icon: z.string(),
    actions: z.array(z.strictObject({ label: z.string(), url: z.string() })),
    read_at: timestamp.nullable(),
    created_at: timestamp,
    archived_at: described("When it was archived; archived notifications are read.", timestamp.nullable()),
    snoozed_until: described(
      "While set, the notification is snoozed until then (not unread, left out of the list by default).",
      timestamp.nullable(),
    ),
  }),
);

const seq = described("The inbox's sequence number: of the last change (lists and counts) or of this change (frames).", count);

export const ListInboxNotificationsResponse = named(
  "ListInboxNotificationsResponse",
  z.strictObject({
    notifications: z.array(InboxNotification),
    unread_count: described("The caller's total unread count, ignoring filters.", count),
    seq,
  }),
);

export const InboxNotificationFrame = named(
  "InboxNotificationFrame",
  z.strictObject({ seq, notification: InboxNotification, unread_count: count }),
  "Watch frame: a newly delivered (or woken) notification that matches the filters, and the unread count after it.",
);

export const InboxChangeFrame = named(
  "InboxChangeFrame",
  z.strictObject({
    seq,
    change: z.union([
      z.strictObject({
        ids: z.array(uuid),
        read_at: timestamp.nullable().optional(),
        archived_at: timestamp.nullable().optional(),
        snoozed_until: timestamp.nullable().optional(),
        // A removal carries no other field. Optional on this branch, so a client typed before it still compiles and,
        // reading a change with no field, keeps its copy as it was.
        removed: z.literal(true).optional(),
      }),
      z.strictObject({ all: z.literal(true), read_at: timestamp }),
    ]),
    unread_count: count,
  }),
  "Watch frame sent only with `sync=true`: a change to existing notifications, whatever the filters. The fields present are those that changed, with their new values; `all: true` is mark-all-as-read (every notification that was unread); `removed: true` means the inbox no longer holds these read or archived notifications (retention), and carries no other field.",
);

export const InboxWatchFrame = named(
  "InboxWatchFrame",
  z.union([InboxNotificationFrame, InboxChangeFrame]),
  "One text frame of the inbox watch, after the upgrade: a notification, or (with `sync=true`) a change. Frames arrive in `seq` order.",
);

export const UpdateInboxNotificationReadStatusResponse = named(
  "UpdateInboxNotificationReadStatusResponse",
  z.strictObject({ message: z.string(), notification: InboxNotification, unread_count: count }),
  "Satisfies both the interface's Response shape and the richer client shape.",
);

export const InboxCountsResponse = named(
  "InboxCountsResponse",
  z.strictObject({
    unread: described("Neither read nor snoozed.", count),
    archived: count,
    snoozed: count,
    total: count,
    by_template: z.array(z.strictObject({ template_id: uuid, unread: count, total: count })),
    seq,
  }),
);

export const BulkInboxActionResponse = named(
  "BulkInboxActionResponse",
  z.strictObject({ updated: described("Notifications the action changed.", count), unread_count: count }),
);
