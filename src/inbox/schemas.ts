import { z } from "zod";
import { named } from "../openapi/registry";
import { uuid } from "../http/ids";

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

const readStatus = z.enum(["all", "read", "unread"]).default("all");

/** The inbox list query; unknown parameters are rejected (docs/api.md, Notifications). */
export const listInboxQuery = z.strictObject({
  targets: uuidList,
  templates: uuidList,
  read_status: readStatus,
  starting_before: uuid.optional(),
  limit: z.coerce.number().int().min(1).max(100).default(DEFAULT_PAGE_SIZE),
});

/** The watch query: the list's filters plus the rendering format and the opt-in read-state sync. */
export const watchInboxQuery = z.strictObject({
  targets: uuidList,
  templates: uuidList,
  read_status: readStatus,
  format: z.enum(["markdown", "plaintext"]).default("markdown"),
  sync_read_state: z
    .enum(["true", "false"])
    .default("false")
    .transform((v) => v === "true"),
});

export const notificationIdParam = z.object({ id: uuid });

/** The read-status body: `is_read` is required. */
export const readStatusBody = named("UpdateInboxNotificationReadStatusRequest", z.object({ is_read: z.boolean() }));
