/**
 * The states of an inbox item and how each action moves them (docs/inbox.md, "Item states"). Pure: the inbox object
 * applies these inside its transactions, the counts follow from `contribution`, and the change frames from `changed`.
 *
 * Two invariants hold after every action: an archived item is read, and no item is both archived and snoozed.
 */
export interface ItemState {
  readAt: string | null;
  archivedAt: string | null;
  snoozedUntil: string | null;
}

export type InboxAction =
  | { kind: "read" }
  | { kind: "unread" }
  | { kind: "archive" }
  | { kind: "unarchive" }
  | { kind: "snooze"; until: string }
  /** The snooze ended: its time came (the alarm), or the user unsnoozed early. */
  | { kind: "wake" };

/** The bulk endpoint's actions. */
export const BULK_ACTIONS = ["read", "unread", "archive", "unarchive"] as const;
export type BulkAction = (typeof BULK_ACTIONS)[number];

/**
 * The state after `action` at time `now`:
 * - read keeps an earlier `read_at`; unread clears it and, since archived items are read by definition, unarchives;
 * - archive reads the item if unread (keeping an earlier `read_at`) and ends a snooze: archived means done with it;
 * - unarchive leaves `read_at` as it is;
 * - snooze hides the item until `until` and brings an archived item back, so it can come back when it wakes;
 * - wake ends the snooze and makes the item unread again, as if newly delivered.
 */
export function applyAction(state: ItemState, action: InboxAction, now: string): ItemState {
  switch (action.kind) {
    case "read":
      return { ...state, readAt: state.readAt ?? now };
    case "unread":
      return { ...state, readAt: null, archivedAt: null };
    case "archive":
      return { readAt: state.readAt ?? now, archivedAt: state.archivedAt ?? now, snoozedUntil: null };
    case "unarchive":
      return { ...state, archivedAt: null };
    case "snooze":
      return { ...state, archivedAt: null, snoozedUntil: action.until };
    case "wake":
      return state.snoozedUntil === null ? state : { ...state, readAt: null, snoozedUntil: null };
  }
}

/** What an item adds to the inbox's counts: unread means not read and not snoozed. */
export function contribution(state: ItemState): { unread: number; archived: number; snoozed: number } {
  return {
    unread: state.readAt === null && state.snoozedUntil === null ? 1 : 0,
    archived: state.archivedAt === null ? 0 : 1,
    snoozed: state.snoozedUntil === null ? 0 : 1,
  };
}

/** The fields a change frame carries: those that changed, with their new values. */
export interface ChangedFields {
  read_at?: string | null;
  archived_at?: string | null;
  snoozed_until?: string | null;
}

/** The fields that differ between two states, or undefined when nothing changed. */
export function changed(before: ItemState, after: ItemState): ChangedFields | undefined {
  const fields: ChangedFields = {};
  if (before.readAt !== after.readAt) fields.read_at = after.readAt;
  if (before.archivedAt !== after.archivedAt) fields.archived_at = after.archivedAt;
  if (before.snoozedUntil !== after.snoozedUntil) fields.snoozed_until = after.snoozedUntil;
  return Object.keys(fields).length === 0 ? undefined : fields;
}
