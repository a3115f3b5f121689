import { useEffect, useRef, useState } from "preact/hooks";
import { api, call } from "../api";
import type { Me } from "../session";
import { useAction } from "../ui/action";
import { Empty, Loading, Page, ProblemAlert } from "../ui/components";
import { InboxItem, type ItemStep } from "./item";
import { onFrame, setUnread } from "./live";
import { afterAction, applyChange, type BulkAction, DEFAULT_FILTERS, type Filters, type Item, matches, snoozeUntil, withState } from "./model";
import { FilterBar, SelectionBar } from "./toolbar";
import { useInboxList } from "./use-inbox";
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
 * title. Noted before the request, since the live frame that removes the item may arrive before the API's answer.
 */
function useFocusAfterRemoval(items: Item[] | undefined) {
  const pending = useRef<{ id: string; index: number; until: number } | undefined>(undefined);
  useEffect(() => {
    const left = pending.current;
    if (!left || !items || items.some((item) => item.id === left.id)) return;
    pending.current = undefined;
    if (Date.now() > left.until) return;
    const next = items[Math.min(left.index, items.length - 1)];
    const target = next ? document.getElementById(`title-${next.id}`) : document.querySelector<HTMLElement>("main h1");
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

export function InboxPage(_props: { me: Me }) {
  const [filters, setFilters] = useState<Filters>(DEFAULT_FILTERS);
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  const list = useInboxList(filters);
  const arrival = useArrivals(filters);
  const keepFocus = useFocusAfterRemoval(list.items);
  const items = list.items ?? [];
  const selectedIds = items.filter((item) => selected.has(item.id)).map((item) => item.id);

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

  const changeFilters = (next: Filters) => {
    setSelected(new Set());
    setFilters(next);
  };

  const select = (id: string, on: boolean) => {
    const next = new Set(selected);
    if (on) next.add(id);
    else next.delete(id);
    setSelected(next);
  };

  const isDefault = filters.read === "all" && filters.archived === "exclude" && filters.snoozed === "exclude";
  return (
    <Page
      title="Inbox"
      actions={
        <button type="button" onClick={() => void markAll.run()}>
          Mark all as read
        </button>
      }
    >
      <FilterBar filters={filters} onFilters={changeFilters} />
      <p class="visually-hidden" role="status">
        {arrival}
      </p>
      <ProblemAlert problem={list.problem} />
      <ProblemAlert problem={step.problem ?? bulk.problem ?? markAll.problem} />
      {list.items === undefined ? (
        <Loading what="notifications" />
      ) : items.length === 0 ? (
        <Empty>{isDefault ? "Your inbox is empty. New notifications appear here as they arrive." : "No notifications match these filters."}</Empty>
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
          <ul class="inbox-list" aria-label="Notifications">
            {items.map((item) => (
              <InboxItem
                key={item.id}
                item={item}
                selected={selected.has(item.id)}
                onSelect={(on) => select(item.id, on)}
                onStep={(what) => void step.run(item, what)}
              />
            ))}
          </ul>
          {list.complete ? null : (
            <button
              type="button"
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
    </Page>
  );
}
