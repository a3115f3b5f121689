import { useEffect, useRef, useState } from "preact/hooks";
import { iconPath } from "../../inbox/icons";
import { safeHref } from "../../markdown/links";
import { Time } from "../ui/components";
import { RichText } from "../ui/rich-text";
import { type Item, SNOOZE_CHOICES, type SnoozeChoice } from "./model";

/** What a person can do to one item; the page runs it against the API. */
export type ItemStep =
  | { kind: "read"; isRead: boolean }
  | { kind: "archive"; isArchived: boolean }
  | { kind: "snooze"; choice: SnoozeChoice }
  | { kind: "unsnooze" };

const untitled = "Untitled notification";

/** An action's URL through the one link policy (src/markdown/links.ts), a path resolved against this origin first. */
function actionHref(url: string): string | undefined {
  try {
    return safeHref(new URL(url, location.origin).href);
  } catch {
    return undefined;
  }
}

function Icon({ icon }: { icon: string }) {
  return (
    <svg class="inbox-icon" viewBox="0 0 24 24" aria-hidden="true" focusable="false">
      <path d={iconPath(icon)} />
    </svg>
  );
}

/**
 * One notification, as a compact row (docs/dashboard.md, "The inbox"). Unread is shown in three ways, never by colour
 * alone: a bold title, a marker, and the words "Unread" for screen readers. The row is the list's one Tab stop
 * (`active`); its own controls join the Tab order only while it is the active row, so Tab leaves the list after one
 * item, and the arrow keys move between items. Clicking an unread row, or Enter on it, marks it read. A snoozed item
 * is not unread (docs/inbox.md, "Item states").
 */
export function InboxItem({
  item,
  selected,
  active,
  onSelect,
  onStep,
  onActivate,
}: {
  item: Item;
  selected: boolean;
  active: boolean;
  onSelect(selected: boolean): void;
  onStep(step: ItemStep): void;
  onActivate(): void;
}) {
  const snoozed = item.snoozed_until !== null;
  const archived = item.archived_at !== null;
  const unread = item.read_at === null && !snoozed;
  const title = item.title.trim() || untitled;
  const tab = active ? 0 : -1;
  const links = item.actions.flatMap((action) => {
    const href = actionHref(action.url);
    return href ? [{ label: action.label.trim() || href, href }] : [];
  });
  const classes = ["inbox-item", unread ? "is-unread" : "", selected ? "is-selected" : ""].filter(Boolean).join(" ");
  return (
    <li
      class={classes}
      data-testid="inbox-item"
      data-id={item.id}
      data-unread={unread ? "true" : "false"}
      tabIndex={tab}
      aria-labelledby={`title-${item.id}`}
      onFocus={onActivate}
      onClick={(event) => {
        // A control or a link inside the row does its own thing.
        if ((event.target as Element).closest("a, button, input, label")) return;
        if (unread) onStep({ kind: "read", isRead: true });
      }}
      onKeyDown={(event) => {
        if (event.key === "Enter" && event.target === event.currentTarget && unread) onStep({ kind: "read", isRead: true });
      }}
    >
      <input
        type="checkbox"
        class="inbox-check"
        tabIndex={tab}
        checked={selected}
        aria-label={`Select: ${title}`}
        onChange={(event) => onSelect(event.currentTarget.checked)}
      />
      <Icon icon={item.icon} />
      <div class="inbox-body">
        <h3 class="inbox-title" id={`title-${item.id}`}>
          {unread ? <span class="visually-hidden">Unread: </span> : null}
          <RichText markdown={title} inline tabbable={active} />
        </h3>
        {item.content ? <RichText markdown={item.content} class="inbox-content" tabbable={active} /> : null}
        {links.length > 0 ? (
          <p class="inbox-actions">
            {links.map((link) => (
              <a key={link.href} class="button button-small" href={link.href} target="_blank" rel="noopener noreferrer" tabIndex={tab}>
                {link.label}
                <span class="visually-hidden"> (opens in a new tab)</span>
              </a>
            ))}
          </p>
        ) : null}
      </div>
      <div class="inbox-side">
        <span class="inbox-meta">
          <Time iso={item.created_at} />
          {archived ? <span class="status">Archived</span> : null}
          {item.snoozed_until !== null ? (
            <span class="status">
              Snoozed until <Time iso={item.snoozed_until} />
            </span>
          ) : null}
        </span>
        <ItemMenu item={item} title={title} unread={unread} tabIndex={tab} onStep={onStep} />
      </div>
    </li>
  );
}

/**
 * The item's actions behind one button: real buttons in a disclosure, opened and closed from the keyboard (Escape
 * closes it and returns focus to the button), rather than a row of buttons on every item.
 */
function ItemMenu({
  item,
  title,
  unread,
  tabIndex,
  onStep,
}: {
  item: Item;
  title: string;
  unread: boolean;
  tabIndex: number;
  onStep(step: ItemStep): void;
}) {
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
  const pick = (step: ItemStep) => {
    setOpen(false);
    onStep(step);
  };
  const snoozed = item.snoozed_until !== null;
  const archived = item.archived_at !== null;
  const choices: { label: string; step: ItemStep }[] = [
    ...(snoozed ? [] : [{ label: unread ? "Mark read" : "Mark unread", step: { kind: "read", isRead: unread } as const }]),
    { label: archived ? "Unarchive" : "Archive", step: { kind: "archive", isArchived: !archived } },
    ...(snoozed
      ? [{ label: "Unsnooze", step: { kind: "unsnooze" } as const }]
      : SNOOZE_CHOICES.map(({ choice, label }) => ({ label: `Snooze ${label.toLowerCase()}`, step: { kind: "snooze", choice } as const }))),
  ];
  return (
    <div
      class="item-menu"
      onFocusOut={(event) => {
        // Leaving the menu by Tab or a click elsewhere closes it.
        if (open && !event.currentTarget.contains(event.relatedTarget as Node | null)) setOpen(false);
      }}
    >
      <button
        type="button"
        class="button-quiet button-small"
        ref={toggle}
        tabIndex={tabIndex}
        aria-expanded={open}
        aria-controls={`menu-${item.id}`}
        aria-label={`Actions for: ${title}`}
        onClick={() => setOpen(!open)}
      >
        <span aria-hidden="true">⋯</span>
      </button>
      {open ? (
        <ul
          class="item-menu-list"
          id={`menu-${item.id}`}
          ref={menu}
          onKeyDown={(event) => {
            if (event.key === "Escape") {
              event.stopPropagation();
              close();
            }
            if (event.key === "ArrowDown" || event.key === "ArrowUp") {
              // Up and down move inside the open menu, not between items.
              event.preventDefault();
              event.stopPropagation();
              const buttons = [...(menu.current?.querySelectorAll("button") ?? [])];
              const at = buttons.indexOf(document.activeElement as HTMLButtonElement);
              buttons[(at + (event.key === "ArrowDown" ? 1 : buttons.length - 1)) % buttons.length]?.focus();
            }
          }}
        >
          {choices.map(({ label, step }) => (
            <li key={label}>
              <button type="button" onClick={() => pick(step)}>
                {label}
              </button>
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}
