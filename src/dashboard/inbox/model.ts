import type { ChangeFrame, NotificationFrame } from "../../client";
import { applyAction, type BulkAction } from "../../inbox/states";

/** One inbox item, as the list and the watch give it (InboxNotification in docs/openapi.json). */
export type Item = NotificationFrame["notification"];
export type Change = ChangeFrame["change"];
export type { BulkAction };

type ReadFilter = "all" | "unread" | "read";
type Inclusion = "exclude" | "include" | "only";

/** What the list shows: the query parameters of GET /notifications/inbox the page sets (docs/api.md, N3). */
export interface Filters {
  read: ReadFilter;
  archived: Inclusion;
  snoozed: Inclusion;
}

export const PAGE_SIZE = 25;

function included(value: string | null, inclusion: Inclusion): boolean {
  if (inclusion === "exclude") return value === null;
  if (inclusion === "only") return value !== null;
  return true;
}

/** Whether the list would show `item` under `filters`; `read_status` looks at `read_at` alone (docs/inbox.md). */
export function matches(item: Item, filters: Filters): boolean {
  if (filters.read === "unread" && item.read_at !== null) return false;
  if (filters.read === "read" && item.read_at === null) return false;
  return included(item.archived_at, filters.archived) && included(item.snoozed_until, filters.snoozed);
}

/** Newest first, as the list orders: (created_at, id) descending. */
function newer(a: Item, b: Item): boolean {
  return a.created_at === b.created_at ? a.id > b.id : a.created_at > b.created_at;
}

/**
 * A notification that arrived (delivered, or woken from a snooze: docs/inbox.md, "Item states"): replaces the copy the
 * list holds, or takes its place in (created_at, id) order. One older than the last loaded item while more pages
 * remain is left for "Load more" to bring, so it is neither missing nor shown twice.
 */
export function insert(items: Item[], item: Item, filters: Filters, complete: boolean): Item[] {
  const rest = items.filter((i) => i.id !== item.id);
  if (!matches(item, filters)) return rest;
  const at = rest.findIndex((i) => newer(item, i));
  if (at === -1) return complete ? [...rest, item] : rest;
  return [...rest.slice(0, at), item, ...rest.slice(at)];
}

function changedFields(item: Item, change: Change): Item {
  const next = { ...item };
  if (change.read_at !== undefined) next.read_at = change.read_at;
  // Only a change to named ids carries these (mark-all-as-read changes `read_at` alone).
  if ("archived_at" in change && change.archived_at !== undefined) next.archived_at = change.archived_at;
  if ("snoozed_until" in change && change.snoozed_until !== undefined) next.snoozed_until = change.snoozed_until;
  return next;
}

/** The inbox no longer holds these items: retention removed them (docs/inbox.md, "Retention"). */
function isRemoval(change: Change): change is { ids: string[]; removed: true } {
  return "removed" in change && change.removed === true;
}

/**
 * A change frame applied to the list: the named items (or, for mark-all-as-read, every item that was unread — not
 * read and not snoozed, docs/inbox.md) take the new values; those that no longer match the filters leave the list,
 * and removed ones leave it too.
 */
export function applyChange(items: Item[], change: Change, filters: Filters): Item[] {
  if (isRemoval(change)) return items.filter((item) => !change.ids.includes(item.id));
  const touched =
    "ids" in change ? (item: Item) => change.ids.includes(item.id) : (item: Item) => item.read_at === null && item.snoozed_until === null;
  return items.map((item) => (touched(item) ? changedFields(item, change) : item)).filter((item) => matches(item, filters));
}

/**
 * Whether a change may bring in items the list does not hold (unarchived elsewhere while viewing the inbox, read
 * elsewhere while viewing read ones): some named item is unknown here, the change touches a field the filters
 * restrict, and nothing it sets rules the item out. The list is then read again, since a frame names ids only.
 */
export function mayBringIn(items: Item[], change: Change, filters: Filters): boolean {
  if (!("ids" in change)) return filters.read === "read";
  if (isRemoval(change)) return false;
  if (change.ids.every((id) => items.some((item) => item.id === id))) return false;
  const fields: [string | null | undefined, boolean, (value: string | null) => boolean][] = [
    [change.read_at, filters.read !== "all", (v) => (filters.read === "read" ? v !== null : v === null)],
    [change.archived_at, filters.archived !== "include", (v) => included(v, filters.archived)],
    [change.snoozed_until, filters.snoozed !== "include", (v) => included(v, filters.snoozed)],
  ];
  const touched = fields.filter(([value, restricted]) => value !== undefined && restricted);
  return touched.length > 0 && touched.every(([value, , fits]) => fits(value ?? null));
}

/** The state a bulk action leaves an item in, by the inbox's own rules (docs/inbox.md, "Item states"). */
export function afterAction(item: Item, action: BulkAction, now: string): Item {
  const state = applyAction({ readAt: item.read_at, archivedAt: item.archived_at, snoozedUntil: item.snoozed_until }, { kind: action }, now);
  return { ...item, read_at: state.readAt, archived_at: state.archivedAt, snoozed_until: state.snoozedUntil };
}

/** The state fields of an item the API answered with (its title and content may be in another format than the list's). */
export function withState(item: Item, from: Pick<Item, "read_at" | "archived_at" | "snoozed_until">): Item {
  return { ...item, read_at: from.read_at, archived_at: from.archived_at, snoozed_until: from.snoozed_until };
}

export type SnoozeChoice = "hour" | "tomorrow" | "next-week";

export const SNOOZE_CHOICES: { choice: SnoozeChoice; label: string }[] = [
  { choice: "hour", label: "For 1 hour" },
  { choice: "tomorrow", label: "Until tomorrow 09:00" },
  { choice: "next-week", label: "Until next week" },
];

/** When a snooze ends, in the person's own time zone; "next week" is next Monday at 09:00. */
export function snoozeUntil(choice: SnoozeChoice, now = new Date()): string {
  if (choice === "hour") return new Date(now.getTime() + 60 * 60 * 1000).toISOString();
  const at = new Date(now);
  at.setHours(9, 0, 0, 0);
  if (choice === "tomorrow") at.setDate(at.getDate() + 1);
  else at.setDate(at.getDate() + ((8 - at.getDay()) % 7 || 7));
  return at.toISOString();
}
