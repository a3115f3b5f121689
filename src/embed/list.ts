import type { InboxChange } from "../client/watch";
import type { InboxNotification } from "../inbox/model";
import { checkIcon, fullTime, h, relativeTime, safeHref } from "./dom";

/**
 * The embed's list: how a change frame moves the items it shows, and the view of one item. Apart from the element
 * (src/embed/element.ts), which owns the connection, the state and when to render.
 */

/** The list leaves archived and snoozed items out by default; a change that archives or snoozes one takes it away. */
export function visible(item: InboxNotification): boolean {
  return item.archived_at === null && item.snoozed_until === null;
}

/** What decides an item's view: a new key rebuilds it. */
export function viewKey(item: InboxNotification): string {
  return JSON.stringify([item.read_at !== null, item.title, item.content, item.created_at, item.actions]);
}

/**
 * The items after a change frame: the named ids (or, for mark-all-as-read, every item that was unread: neither read
 * nor snoozed, docs/inbox.md) take the new values, and those no longer visible leave. `unseen`: the change names an
 * item the list does not show; `revealed`: it brings items back (unarchived, or woken from a snooze).
 */
export function applyChange(
  items: readonly InboxNotification[],
  change: InboxChange,
  shown: (id: string) => boolean,
): { items: InboxNotification[]; unseen: boolean; revealed: boolean } {
  const fields: Partial<InboxNotification> = {};
  if (change.read_at !== undefined) fields.read_at = change.read_at;
  // Only a change to named ids carries these (mark-all-as-read changes `read_at` alone).
  const named = "ids" in change ? change : undefined;
  if (named?.archived_at !== undefined) fields.archived_at = named.archived_at;
  if (named?.snoozed_until !== undefined) fields.snoozed_until = named.snoozed_until;
  const ids = named ? new Set(named.ids) : undefined;
  const applies = (item: InboxNotification) => (ids ? ids.has(item.id) : item.read_at === null && item.snoozed_until === null);
  return {
    items: items.map((item) => (applies(item) ? { ...item, ...fields } : item)).filter(visible),
    unseen: ids !== undefined && [...ids].some((id) => !shown(id)),
    revealed: named?.archived_at === null || named?.snoozed_until === null,
  };
}

/** One item's view: unread items are read by a click, Enter, or their button; action links open in a new tab. */
export function itemView(item: InboxNotification, options: { now: number; server: string; read: (id: string) => void }): HTMLLIElement {
  const { now, server, read } = options;
  const unread = item.read_at === null;
  const links = item.actions.flatMap((action) => {
    const href = safeHref(action.url, server);
    return href ? [h("a", { href, part: "action", target: "_blank", rel: "noopener noreferrer" }, action.label || href)] : [];
  });
  const markButton =
    unread &&
    h(
      "button",
      { type: "button", class: "read", part: "mark-read", "aria-label": `Mark as read: ${item.title || item.content}`, title: "Mark as read" },
      checkIcon(),
    );
  const view = h(
    "li",
    { class: unread ? "unread" : undefined, part: unread ? "item unread" : "item", tabindex: "-1" },
    h("span", { class: "dot", "aria-hidden": "true" }),
    h(
      "div",
      { class: "body" },
      h("p", { class: "title", part: "title", dir: "auto" }, unread && h("span", { class: "sr" }, "Unread: "), item.title),
      h("p", { class: "content", part: "content", dir: "auto", hidden: item.content === "" }, item.content),
      h(
        "p",
        { class: "meta" },
        h("time", { datetime: item.created_at, title: fullTime(item.created_at), part: "time" }, relativeTime(item.created_at, now)),
      ),
      links.length > 0 && h("p", { class: "actions" }, ...links),
    ),
    markButton,
  );
  if (unread) {
    // Clicking the item reads it (as its button does); a link also opens, in a new tab.
    view.addEventListener("click", (event) => {
      if (event.composedPath().some((node) => node instanceof HTMLButtonElement && node !== markButton)) return;
      read(item.id);
    });
    view.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && event.target === view) read(item.id);
    });
  }
  return view;
}
