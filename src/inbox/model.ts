import type * as z from "zod";
import type { InboxRow } from "./schema";
import type { InboxNotification as InboxNotificationSchema } from "./schemas";

/** An inbox notification, as the API returns it: the type of its documented schema (src/inbox/schemas.ts). */
export type InboxNotification = z.infer<typeof InboxNotificationSchema>;

type ReadStatus = "all" | "read" | "unread";
/** How the list treats archived or snoozed items: left out (the default), included, or the only ones listed. */
type Inclusion = "exclude" | "include" | "only";
export type WatchFormat = "markdown" | "plaintext";

/** The watch filters (and the core of the list's), already validated by the Worker. */
export interface InboxFilter {
  /** The notification must carry every one of these targets. */
  targets: string[];
  /** The notification's template must be any one of these (no restriction when empty). */
  templates: string[];
  readStatus: ReadStatus;
}

/** The list's filters (and a bulk action's selection): the watch's plus archived and snoozed items. */
export interface ListFilter extends InboxFilter {
  archived: Inclusion;
  snoozed: Inclusion;
}

/**
 * What the deployment lets one inbox hold (docs/inbox.md, "Retention"): INBOX_MAX_ITEMS and INBOX_RETENTION, handed to
 * the inbox with every delivery.
 */
export interface InboxLimits {
  maxItems: number;
  retentionMs: number;
}

/** What the delivery pipeline hands the inbox; titles and content are Markdown. */
export interface InboxDelivery {
  /** The notification message id: the idempotency key. */
  id: string;
  userId: string;
  templateId: string;
  /** The template's group, used to pick a fallback icon when `icon` is empty. */
  templateGroup: string;
  targets: string[];
  title: string;
  content: string;
  icon: string;
  actions: { label: string; url: string }[];
  createdAt: string;
}

export function toInboxNotification(row: InboxRow): InboxNotification {
  return {
    id: row.id,
    user_id: row.userId,
    template_id: row.templateId,
    targets: row.targets,
    title: row.title,
    content: row.content,
    icon: row.icon,
    actions: row.actions,
    read_at: row.readAt,
    created_at: row.createdAt,
    archived_at: row.archivedAt,
    snoozed_until: row.snoozedUntil,
  };
}

/** In-memory form of the filter, for pushing a new notification to a watcher. */
export function matchesFilter(n: InboxNotification, filter: InboxFilter): boolean {
  if (filter.readStatus === "read" && n.read_at === null) return false;
  if (filter.readStatus === "unread" && n.read_at !== null) return false;
  if (filter.templates.length > 0 && !filter.templates.includes(n.template_id)) return false;
  return filter.targets.every((t) => n.targets.includes(t));
}

/**
 * Fallback icons by template group, named as Coder names them so existing dashboards render them:
 * account (user and security events), workspace-like, template-like, and everything else.
 */
export const FALLBACK_ICONS = {
  account: "DEFAULT_ICON_ACCOUNT",
  workspace: "DEFAULT_ICON_WORKSPACE",
  template: "DEFAULT_ICON_TEMPLATE",
  other: "DEFAULT_ICON_OTHER",
} as const;

export function fallbackIcon(group: string): string {
  const g = group.toLowerCase();
  if (g.startsWith("user") || g.startsWith("security")) return FALLBACK_ICONS.account;
  if (g.includes("workspace")) return FALLBACK_ICONS.workspace;
  if (g.includes("template")) return FALLBACK_ICONS.template;
  return FALLBACK_ICONS.other;
}
