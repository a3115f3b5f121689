import type { BulkAction, Filters } from "./model";

/**
 * The inbox's views, as tabs (docs/dashboard.md, "The inbox"): each is one set of the list's filters (docs/api.md,
 * N3). Snoozed items leave every other view until they wake, so they have a view of their own.
 */
export const VIEWS = [
  { id: "unread", label: "Unread", filters: { read: "unread", archived: "exclude", snoozed: "exclude" } },
  { id: "all", label: "All", filters: { read: "all", archived: "exclude", snoozed: "exclude" } },
  { id: "snoozed", label: "Snoozed", filters: { read: "all", archived: "exclude", snoozed: "only" } },
  { id: "archived", label: "Archived", filters: { read: "all", archived: "only", snoozed: "include" } },
] as const satisfies readonly { id: string; label: string; filters: Filters }[];

export type ViewId = (typeof VIEWS)[number]["id"];

/**
 * The tabs, with the keyboard pattern of a tablist: one Tab stop (the selected tab), Left and Right (and Home, End)
 * move between the views and show them at once.
 */
export function ViewTabs({ view, unread, onView }: { view: ViewId; unread: number | undefined; onView(view: ViewId): void }) {
  const move = (event: KeyboardEvent) => {
    const at = VIEWS.findIndex((v) => v.id === view);
    const n = VIEWS.length;
    const targets: Record<string, number> = { ArrowRight: (at + 1) % n, ArrowLeft: (at + n - 1) % n, Home: 0, End: n - 1 };
    const to = targets[event.key];
    if (to === undefined) return;
    event.preventDefault();
    const next = VIEWS[to];
    if (!next) return;
    onView(next.id);
    document.getElementById(`tab-${next.id}`)?.focus();
  };
  return (
    <div class="inbox-tabs" role="tablist" aria-label="Views" onKeyDown={move}>
      {VIEWS.map(({ id, label }) => (
        <button
          key={id}
          type="button"
          role="tab"
          id={`tab-${id}`}
          aria-selected={id === view}
          aria-controls="inbox-panel"
          tabIndex={id === view ? 0 : -1}
          onClick={() => onView(id)}
        >
          {label}
          {id === "unread" && unread ? <span class="tab-count"> ({unread > 99 ? "99+" : unread})</span> : null}
        </button>
      ))}
    </div>
  );
}

const BULK_BUTTONS: { action: BulkAction; label: string }[] = [
  { action: "read", label: "Mark read" },
  { action: "unread", label: "Mark unread" },
  { action: "archive", label: "Archive" },
  { action: "unarchive", label: "Unarchive" },
];

/** "Select all" for the loaded items, and, once something is selected, what can be done to all of it at once. */
export function SelectionBar({
  count,
  total,
  onSelectAll,
  onBulk,
  onClear,
}: {
  count: number;
  total: number;
  onSelectAll(selected: boolean): void;
  onBulk(action: BulkAction): void;
  onClear(): void;
}) {
  return (
    <div class="inbox-selection">
      <label class="check">
        <input
          type="checkbox"
          id="inbox-select-all"
          checked={count > 0 && count === total}
          indeterminate={count > 0 && count < total}
          onChange={(event) => onSelectAll(event.currentTarget.checked)}
        />
        Select all
      </label>
      {count > 0 ? (
        <fieldset class="bulk-bar" data-testid="bulk-actions">
          <legend class="visually-hidden">Bulk actions</legend>
          <span class="bulk-count">{count} selected</span>
          {BULK_BUTTONS.map(({ action, label }) => (
            <button key={action} type="button" onClick={() => onBulk(action)}>
              {label}
            </button>
          ))}
          <button type="button" class="button-quiet" onClick={onClear}>
            Clear selection
          </button>
        </fieldset>
      ) : null}
    </div>
  );
}
