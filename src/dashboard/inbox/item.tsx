import { useEffect, useRef, useState } from "preact/hooks";
import { Time } from "../ui/components";
import { type Item, SNOOZE_CHOICES, type SnoozeChoice, safeUrl } from "./model";

/** What a person can do to one item; the page runs it against the API. */
export type ItemStep =
  | { kind: "read"; isRead: boolean }
  | { kind: "archive"; isArchived: boolean }
  | { kind: "snooze"; choice: SnoozeChoice }
  | { kind: "unsnooze" };

const untitled = "Untitled notification";

/**
 * One notification. Unread is shown in three ways, never by colour alone: a bold title, a marker, and the words
 * "Unread" for screen readers. A snoozed item is not unread (docs/inbox.md, "Item states"), so it offers Unsnooze
 * instead of the read buttons.
 */
export function InboxItem({
  item,
  selected,
  onSelect,
  onStep,
}: {
  item: Item;
  selected: boolean;
  onSelect(selected: boolean): void;
  onStep(step: ItemStep): void;
}) {
  const snoozed = item.snoozed_until !== null;
  const archived = item.archived_at !== null;
  const unread = item.read_at === null && !snoozed;
  const title = item.title.trim() || untitled;
  const links = item.actions.flatMap((action) => {
    const url = safeUrl(action.url);
    return url ? [{ label: action.label.trim() || url, url }] : [];
  });
  return (
    <li class={unread ? "inbox-item is-unread" : "inbox-item"} data-testid="inbox-item" data-id={item.id} data-unread={unread ? "true" : "false"}>
      <div class="inbox-select">
        <input type="checkbox" id={`select-${item.id}`} checked={selected} onChange={(event) => onSelect(event.currentTarget.checked)} />
        <label class="visually-hidden" for={`select-${item.id}`}>
          {title}
        </label>
      </div>
      <div class="inbox-body">
        <h2 class="inbox-title" id={`title-${item.id}`} tabIndex={-1}>
          {unread ? <span class="visually-hidden">Unread </span> : null}
          {title}
        </h2>
        {item.content ? <p class="inbox-content">{item.content}</p> : null}
        <p class="inbox-meta">
          <Time iso={item.created_at} />
          {archived ? <span class="status">Archived</span> : null}
          {item.snoozed_until !== null ? (
            <span class="status">
              Snoozed until <Time iso={item.snoozed_until} />
            </span>
          ) : null}
        </p>
        {links.length > 0 ? (
          <ul class="inbox-links" aria-label={`Links of ${title}`}>
            {links.map((link) => (
              <li key={link.url}>
                <a href={link.url} target="_blank" rel="noopener noreferrer">
                  {link.label}
                  <span class="visually-hidden"> (opens in a new tab)</span>
                </a>
              </li>
            ))}
          </ul>
        ) : null}
        <fieldset class="inbox-buttons">
          <legend class="visually-hidden">Actions for {title}</legend>
          {snoozed ? null : (
            <button type="button" onClick={() => onStep({ kind: "read", isRead: unread })}>
              {unread ? "Mark read" : "Mark unread"}
            </button>
          )}
          <button type="button" onClick={() => onStep({ kind: "archive", isArchived: !archived })}>
            {archived ? "Unarchive" : "Archive"}
          </button>
          {snoozed ? (
            <button type="button" onClick={() => onStep({ kind: "unsnooze" })}>
              Unsnooze
            </button>
          ) : (
            <SnoozeMenu id={item.id} onPick={(choice) => onStep({ kind: "snooze", choice })} />
          )}
        </fieldset>
      </div>
    </li>
  );
}

/**
 * A disclosure with the snooze times: real buttons, opened and closed with the keyboard (Escape closes it and returns
 * focus to "Snooze"), rather than a select that would act on every arrow key.
 */
function SnoozeMenu({ id, onPick }: { id: string; onPick(choice: SnoozeChoice): void }) {
  const [open, setOpen] = useState(false);
  const toggle = useRef<HTMLButtonElement>(null);
  const menu = useRef<HTMLUListElement>(null);
  useEffect(() => {
    if (open) menu.current?.querySelector("button")?.focus();
  }, [open]);
  const close = () => {
    setOpen(false);
    toggle.current?.focus();
  };
  return (
    <div class="snooze">
      <button type="button" ref={toggle} aria-expanded={open} aria-controls={`snooze-${id}`} onClick={() => setOpen(!open)}>
        Snooze
      </button>
      {open ? (
        <ul
          class="snooze-menu"
          id={`snooze-${id}`}
          ref={menu}
          onKeyDown={(event) => {
            if (event.key === "Escape") close();
          }}
        >
          {SNOOZE_CHOICES.map(({ choice, label }) => (
            <li key={choice}>
              <button
                type="button"
                onClick={() => {
                  setOpen(false);
                  onPick(choice);
                }}
              >
                {label}
              </button>
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}
