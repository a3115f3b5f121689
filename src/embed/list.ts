import type { InboxChange } from "../client/watch";
import type { InboxNotification } from "../inbox/model";
import { markdownFragment } from "../markdown/dom";
import { actionHref, archiveIcon, checkIcon, fullTime, h, itemIcon, relativeTime } from "./dom";

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
  return JSON.stringify([item.read_at !== null, item.title, item.content, item.created_at, item.actions, item.icon]);
}

/**
 * Markdown as the text a person reads, for what must stay plain: a title (docs/embed.md, "What it does"), an
 * accessible name, an announcement.
 */
export function plainText(markdown: string): string {
  return (markdownFragment(markdown).textContent ?? "").trim();
}

/** Takes the notification the way the page's `herald-notification` listeners get it: its title in plain text. */
export function withPlainTitle(item: InboxNotification): InboxNotification {
  return { ...item, title: plainText(item.title) };
}

/**
 * The items after a change frame: the named ids (or, for mark-all-as-read, every item that was unread: neither read
 * nor snoozed, docs/inbox.md) take the new values, and those no longer visible leave, as removed ones do. `unseen`: the change names an
 * item the list does not show; `revealed`: it brings items back (unarchived, or woken from a snooze).
 */
export function applyChange(
  items: readonly InboxNotification[],
  change: InboxChange,
  shown: (id: string) => boolean,
): { items: InboxNotification[]; unseen: boolean; revealed: boolean } {
  if ("removed" in change && change.removed) {
    // Retention removed them (docs/inbox.md, "Retention"): they leave, and bring nothing in.
    const gone = new Set(change.ids);
    return { items: items.filter((item) => !gone.has(item.id)), unseen: false, revealed: false };
  }
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

/**
 * One item's view: unread items are read by a click, Enter, or their button; links open in a new tab. The title is
 * plain text; the content is the notification's Markdown as safe elements (src/markdown/dom.ts).
 */
export function itemView(
  item: InboxNotification,
  options: { now: number; server: string; read: (id: string) => void; archive: (id: string) => void },
): HTMLLIElement {
  const { now, server, read, archive } = options;
  const unread = item.read_at === null;
  const title = plainText(item.title);
  const name = title || plainText(item.content);
  const links = item.actions.flatMap((action) => {
    const href = actionHref(action.url, server);
    return href ? [h("a", { href, class: "action", part: "action", target: "_blank", rel: "noopener noreferrer" }, action.label || href)] : [];
  });
  const markButton =
    unread &&
    h("button", { type: "button", class: "round", part: "mark-read", "aria-label": `Mark as read: ${name}`, title: "Mark as read" }, checkIcon());
  const archiveButton = h(
    "button",
    { type: "button", class: "round", part: "archive", "aria-label": `Archive: ${name}`, title: "Archive" },
    archiveIcon(),
  );
  archiveButton.addEventListener("click", () => archive(item.id));
  const icon = itemIcon(item.icon);
  const content = h("div", { class: "content", part: "content", dir: "auto", hidden: item.content === "" });
  content.appendChild(markdownFragment(item.content));
  const view = h(
    "li",
    { class: unread ? "unread" : undefined, part: unread ? "item unread" : "item", tabindex: "-1" },
    h("span", { class: "dot", "aria-hidden": "true" }),
    h("span", { class: "icon", part: "icon", "aria-hidden": "true" }, icon),
    h(
      "div",
      { class: "body" },
      h("p", { class: "title", part: "title", dir: "auto" }, unread && h("span", { class: "sr" }, "Unread: "), title),
      content,
      h(
        "p",
        { class: "meta" },
        h("time", { datetime: item.created_at, title: fullTime(item.created_at), part: "time" }, relativeTime(item.created_at, now)),
      ),
      links.length > 0 && h("p", { class: "actions" }, ...links),
    ),
    h("div", { class: "buttons" }, markButton, archiveButton),
  );
  if (unread) {
    // Clicking the item reads it (as its button does); a link also opens, in a new tab. Archive does only that.
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
