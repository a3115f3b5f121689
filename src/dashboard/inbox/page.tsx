import { useEffect, useRef, useState } from "preact/hooks";
import { api, call } from "../api";
import { routeParam } from "../router";
import type { Me } from "../session";
import { useAction } from "../ui/action";
import { useNow } from "../ui/clock";
import { Empty, Loading, Page } from "../ui/components";
import { useStore } from "../ui/store";
import { InboxItem, type ItemStep } from "./item";
import { onFrame, setUnread, unreadCount } from "./live";
import { afterAction, applyChange, type BulkAction, type Filters, type Item, matches, snoozeUntil, withState } from "./model";
import { SelectionBar, VIEWS, type ViewId, ViewTabs } from "./toolbar";
import { type InboxList, useInboxList } from "./use-inbox";
import "./inbox.css";

/** The bulk endpoint takes 1–100 ids per call (docs/api.md, Notifications). */
const BULK_MAX = 100;

function runStep(item: Item, step: ItemStep) {
  const param = { id: item.id };
  const inbox = api.notifications.inbox[":id"];
  switch (step.kind) {
    case "read":
      return call(inbox["read-status"].$put({ param, json: { is_read: step.isRead } }));
    case "archive":
      return call(inbox["archive-status"].$put({ param, json: { is_archived: step.isArchived } }));
    case "snooze":
      return call(inbox.snooze.$put({ param, json: { until: snoozeUntil(step.choice) } }));
    case "unsnooze":
      return call(inbox.snooze.$put({ param, json: { until: null } }));
  }
}

/**
 * Where focus goes when the item that held it leaves the list (archived from the inbox view, say): the next item's
 * row. Noted before the request, since the live frame that removes the item may arrive before the API's answer.
 */
function useFocusAfterRemoval(items: Item[] | undefined) {
  const pending = useRef<{ id: string; index: number; until: number } | undefined>(undefined);
  useEffect(() => {
    const left = pending.current;
    if (!left || !items || items.some((item) => item.id === left.id)) return;
    pending.current = undefined;
    if (Date.now() > left.until) return;
    const next = items[Math.min(left.index, items.length - 1)];
    const target = next
      ? document.querySelector<HTMLElement>(`[data-testid="inbox-item"][data-id="${next.id}"]`)
      : document.querySelector<HTMLElement>("main h1");
    target?.focus();
  }, [items]);
  return (item: Item) => {
    const root = document.querySelector(`[data-testid="inbox-item"][data-id="${item.id}"]`);
    const index = items?.findIndex((i) => i.id === item.id) ?? -1;
    pending.current = root?.contains(document.activeElement) && index >= 0 ? { id: item.id, index, until: Date.now() + 10_000 } : undefined;
  };
}

/** Announces a notification that arrives while the page is open, for screen readers (the list itself is not live). */
function useArrivals(filters: Filters): string {
  const [message, setMessage] = useState("");
  useEffect(
    () =>
      onFrame((frame) => {
        if ("notification" in frame && matches(frame.notification, filters)) {
          setMessage(`New notification: ${frame.notification.title.trim() || "untitled"}`);
        }
      }),
    [filters],
  );
  return message;
}

/** Today, Yesterday, Earlier: by the person's own calendar day, newest first as the list is. */
function groupByDay(items: Item[], now: number): { label: string; items: Item[] }[] {
  const midnight = new Date(now);
  midnight.setHours(0, 0, 0, 0);
  const today = midnight.getTime();
  const yesterday = new Date(midnight).setDate(midnight.getDate() - 1);
  const groups = [
    { label: "Today", items: [] as Item[] },
    { label: "Yesterday", items: [] as Item[] },
    { label: "Earlier", items: [] as Item[] },
  ];
  for (const item of items) {
    const at = Date.parse(item.created_at);
    groups[at >= today ? 0 : at >= yesterday ? 1 : 2]?.items.push(item);
  }
  return groups.filter((group) => group.items.length > 0);
}

/**
 * Up, Down, Home and End move focus between the rows of the list (docs/dashboard.md, "The inbox"); the row that has
 * focus is the one Tab stop, so Tab moves on to the page after it.
 */
function moveBetweenRows(event: KeyboardEvent) {
  const keys = ["ArrowDown", "ArrowUp", "Home", "End"];
  if (!keys.includes(event.key)) return;
  const rows = [...(event.currentTarget as HTMLElement).querySelectorAll<HTMLElement>('[data-testid="inbox-item"]')];
  const at = rows.findIndex((row) => row.contains(document.activeElement));
  if (at === -1) return;
  event.preventDefault();
  const to = { ArrowDown: Math.min(at + 1, rows.length - 1), ArrowUp: Math.max(at - 1, 0), Home: 0, End: rows.length - 1 }[
    event.key as "ArrowDown" | "ArrowUp" | "Home" | "End"
  ];
  rows[to]?.focus();
}

/**
 * Loads the next page when "Load more" scrolls into view, so the list continues as the person scrolls; the button
 * stays for keyboards and for browsers that do not scroll.
 */
function useLoadOnScroll(list: InboxList) {
  const more = useRef<HTMLButtonElement>(null);
  const latest = useRef(list);
  latest.current = list;
  useEffect(() => {
    const button = more.current;
    if (!button || typeof IntersectionObserver === "undefined") return;
    const observer = new IntersectionObserver(
      (entries) => {
        const { loadingMore, complete, problem, loadMore } = latest.current;
        if (entries.some((entry) => entry.isIntersecting) && !loadingMore && !complete && problem === undefined) void loadMore();
      },
      { rootMargin: "400px 0px" },
    );
    observer.observe(button);
    return () => observer.disconnect();
  }, [list.complete, list.items === undefined]);
  return more;
}

/**
 * `#/inbox?item=<id>`, where a push notification's click lands (docs/push.md, "What a push carries"): once that item is
 * listed, it becomes the active row, scrolled into view and focused. The parameter is read on every change of the
 * address, since a click while the inbox is open only changes it.
 */
function useOpenedItem(items: Item[] | undefined, activate: (id: string) => void) {
  const [wanted, setWanted] = useState(() => routeParam("item"));
  useEffect(() => {
    const changed = () => setWanted(routeParam("item"));
    addEventListener("hashchange", changed);
    return () => removeEventListener("hashchange", changed);
  }, []);
  useEffect(() => {
    if (!wanted || !items?.some((item) => item.id === wanted)) return;
    activate(wanted);
    const row = document.querySelector<HTMLElement>(`[data-testid="inbox-item"][data-id="${CSS.escape(wanted)}"]`);
    row?.scrollIntoView({ block: "center" });
    row?.focus();
    setWanted(null);
  }, [wanted, items, activate]);
}

export function InboxPage(_props: { me: Me }) {
  const [view, setView] = useState<ViewId>("all");
  const filters = (VIEWS.find((v) => v.id === view) ?? VIEWS[1]).filters;
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  const [activeId, setActiveId] = useState<string | undefined>(undefined);
  const list = useInboxList(filters);
  const unread = useStore(unreadCount);
  const arrival = useArrivals(filters);
  const keepFocus = useFocusAfterRemoval(list.items);
  useOpenedItem(list.items, setActiveId);
  const more = useLoadOnScroll(list);
  const now = useNow();
  const items = list.items ?? [];
  const selectedIds = items.filter((item) => selected.has(item.id)).map((item) => item.id);
  // The active row is the one that last had focus, else the first: there is always exactly one Tab stop in the list.
  const active = items.some((item) => item.id === activeId) ? activeId : items[0]?.id;

  const step = useAction(async (item: Item, what: ItemStep) => {
    keepFocus(item);
    const answer = await runStep(item, what);
    setUnread(answer.unread_count);
    list.update((held) => held.map((i) => (i.id === item.id ? withState(i, answer.notification) : i)));
  });

  const bulk = useAction(async (action: BulkAction) => {
    const ids = selectedIds;
    for (let at = 0; at < ids.length; at += BULK_MAX) {
      const answer = await call(api.notifications.inbox.bulk.$post({ json: { action, ids: ids.slice(at, at + BULK_MAX) } }));
      setUnread(answer.unread_count);
    }
    // The answer says how many changed, not how: the same rules as the inbox give the new states, and the live
    // frames that follow carry the exact times.
    const now = new Date().toISOString();
    list.update((held) => held.map((item) => (ids.includes(item.id) ? afterAction(item, action, now) : item)));
    setSelected(new Set());
    document.getElementById("inbox-select-all")?.focus();
  });

  const markAll = useAction(async () => {
    await call(api.notifications.inbox["mark-all-as-read"].$put());
    setUnread(0);
    list.update((held) => applyChange(held, { all: true, read_at: new Date().toISOString() }, filters));
  });

  const changeView = (next: ViewId) => {
    setSelected(new Set());
    setView(next);
  };

  const select = (id: string, on: boolean) => {
    const next = new Set(selected);
    if (on) next.add(id);
    else next.delete(id);
    setSelected(next);
  };

  const problem = list.problem ?? step.problem ?? bulk.problem ?? markAll.problem;
  const emptyText = {
    unread: "Nothing unread. New notifications appear here as they arrive.",
    all: "Your inbox is empty. New notifications appear here as they arrive.",
    snoozed: "Nothing is snoozed.",
    archived: "Nothing is archived.",
  }[view];
  return (
    <Page
      title="Inbox"
      actions={
        <button type="button" onClick={() => void markAll.run()}>
          Mark all as read
        </button>
      }
    >
      <ViewTabs view={view} unread={unread} onView={changeView} />
      <p class="visually-hidden" role="status">
        {arrival}
      </p>
      <div id="inbox-panel" role="tabpanel" aria-labelledby={`tab-${view}`}>
        {problem ? (
          <div class="alert alert-error" role="alert">
            <strong>{problem.message}</strong>
            {problem.detail ? <span> {problem.detail}</span> : null}{" "}
            {list.problem ? (
              <button type="button" class="button-small" onClick={list.retry}>
                Retry
              </button>
            ) : null}
          </div>
        ) : null}
        {list.items === undefined ? (
          <Loading what="notifications" />
        ) : items.length === 0 ? (
          // An empty list under an error is not news: the list could not be read.
          list.problem ? null : (
            <Empty>{emptyText}</Empty>
          )
        ) : (
          <>
            <SelectionBar
              count={selectedIds.length}
              total={items.length}
              onSelectAll={(on) => setSelected(new Set(on ? items.map((item) => item.id) : []))}
              onBulk={(action) => {
                if (!bulk.pending) void bulk.run(action);
              }}
              onClear={() => setSelected(new Set())}
            />
            {/* biome-ignore lint/a11y/noStaticElementInteractions: arrow keys move focus between the rows it holds. */}
            <div class="inbox-groups" onKeyDown={moveBetweenRows}>
              {groupByDay(items, now).map((group) => (
                <section key={group.label} aria-labelledby={`group-${group.label}`}>
                  <h2 class="inbox-group" id={`group-${group.label}`}>
                    {group.label}
                  </h2>
                  <ul class="inbox-list">
                    {group.items.map((item) => (
                      <InboxItem
                        key={item.id}
                        item={item}
                        selected={selected.has(item.id)}
                        active={item.id === active}
                        onActivate={() => setActiveId(item.id)}
                        onSelect={(on) => select(item.id, on)}
                        onStep={(what) => void step.run(item, what)}
                      />
                    ))}
                  </ul>
                </section>
              ))}
            </div>
            {list.complete ? null : (
              <button
                type="button"
                ref={more}
                class="inbox-more"
                aria-disabled={list.loadingMore}
                onClick={() => {
                  if (!list.loadingMore) void list.loadMore();
                }}
              >
                {list.loadingMore ? "Loading…" : "Load more"}
              </button>
            )}
          </>
        )}
      </div>
    </Page>
  );
}
