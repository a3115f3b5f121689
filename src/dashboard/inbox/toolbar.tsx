import { SelectField } from "../ui/components";
import type { BulkAction, Filters, Inclusion, ReadFilter } from "./model";

const READ_OPTIONS: { value: ReadFilter; label: string }[] = [
  { value: "all", label: "All" },
  { value: "unread", label: "Unread" },
  { value: "read", label: "Read" },
];

/** The list's `archived` parameter, named as places: the inbox leaves archived items out (docs/api.md, N3). */
const VIEW_OPTIONS: { value: Inclusion; label: string }[] = [
  { value: "exclude", label: "Inbox" },
  { value: "only", label: "Archived" },
  { value: "include", label: "Everything" },
];

const SNOOZED_OPTIONS: { value: Inclusion; label: string }[] = [
  { value: "exclude", label: "Hide snoozed" },
  { value: "include", label: "Include snoozed" },
  { value: "only", label: "Only snoozed" },
];

export function FilterBar({ filters, onFilters }: { filters: Filters; onFilters(filters: Filters): void }) {
  return (
    <fieldset class="inbox-filters">
      <legend class="visually-hidden">Filters</legend>
      <SelectField
        name="inbox-view"
        label="View"
        value={filters.archived}
        options={VIEW_OPTIONS}
        onValue={(archived) => onFilters({ ...filters, archived })}
      />
      <SelectField
        name="inbox-read"
        label="Read status"
        value={filters.read}
        options={READ_OPTIONS}
        onValue={(read) => onFilters({ ...filters, read })}
      />
      <SelectField
        name="inbox-snoozed"
        label="Snoozed"
        value={filters.snoozed}
        options={SNOOZED_OPTIONS}
        onValue={(snoozed) => onFilters({ ...filters, snoozed })}
      />
    </fieldset>
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
