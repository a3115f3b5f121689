import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { type ApiProblem, api, asProblem, call } from "../api";
import { connection, type InboxFrame, onFrame, onResync, setUnread } from "./live";
import { applyChange, type Filters, type Item, insert, matches, mayBringIn, PAGE_SIZE } from "./model";

/** Frames kept to replay onto a page that was being read while they arrived. */
const KEPT_FRAMES = 200;
/** The list holds at most this many items when read again in one request (the API's largest page). */
const MAX_PAGE = 100;

function readPage(filters: Filters, limit: number, startingBefore?: string) {
  return call(
    api.notifications.inbox.$get({
      query: {
        read_status: filters.read,
        archived: filters.archived,
        snoozed: filters.snoozed,
        format: "markdown",
        limit: String(limit),
        ...(startingBefore ? { starting_before: startingBefore } : {}),
      },
    }),
  );
}

function applyFrame(items: Item[], frame: InboxFrame, filters: Filters, complete: boolean): Item[] {
  return "notification" in frame ? insert(items, frame.notification, filters, complete) : applyChange(items, frame.change, filters);
}

export interface InboxList {
  /** Undefined until the first page arrives (and again while the filters change). */
  items: Item[] | undefined;
  /** Every item the filters select is loaded: no "Load more". */
  complete: boolean;
  loadingMore: boolean;
  problem: ApiProblem | undefined;
  loadMore(): Promise<void>;
  /** Reads the list again, keeping as many items as it holds (the Retry of a failed read). */
  retry(): void;
  /** Applies a local change (an answer of the API) to the list; items that no longer match the filters leave it. */
  update(change: (items: Item[]) => Item[]): void;
}

/**
 * The inbox list for `filters`, kept current by the live watch (docs/inbox.md, "Sequenced sync"): a page is true at
 * its `seq`, so frames up to it are already in it and later ones (also those that arrived while it was being read)
 * are applied on top. A change that may bring in items the list does not hold makes it read the list again.
 */
export function useInboxList(filters: Filters): InboxList {
  const [items, setItems] = useState<Item[] | undefined>(undefined);
  const [complete, setComplete] = useState(false);
  const [loadingMore, setLoadingMore] = useState(false);
  const [problem, setProblem] = useState<ApiProblem | undefined>(undefined);
  const current = useRef({ items, complete, filters, problem });
  current.current = { items, complete, filters, problem };
  const frames = useRef<InboxFrame[]>([]);
  const listedSeq = useRef(0);
  /** Bumped by every full read: an older read's answer, arriving late, is dropped. */
  const generation = useRef(0);
  const reloadTimer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);

  const reload = useCallback(async (keepCount: boolean) => {
    const gen = ++generation.current;
    const { filters: asked, items: held } = current.current;
    const limit = keepCount ? Math.min(MAX_PAGE, Math.max(PAGE_SIZE, held?.length ?? 0)) : PAGE_SIZE;
    try {
      const page = await readPage(asked, limit);
      if (gen !== generation.current) return;
      const done = page.notifications.length < limit;
      let list = page.notifications;
      for (const frame of frames.current) if (frame.seq > page.seq) list = applyFrame(list, frame, asked, done);
      listedSeq.current = page.seq;
      setUnread(page.unread_count, page.seq);
      setProblem(undefined);
      setComplete(done);
      setItems(list);
    } catch (error) {
      if (gen !== generation.current) return;
      setProblem(asProblem(error));
      setItems((list) => list ?? []);
    }
  }, []);

  // A new set of filters is a new list, shown as loading until its first page arrives. The filters themselves are
  // read through `current`; `key` names them.
  const key = `${filters.read}/${filters.archived}/${filters.snoozed}`;
  useEffect(() => {
    setItems(undefined);
    setComplete(false);
    void reload(false);
  }, [key, reload]);

  useEffect(() => {
    const offFrame = onFrame((frame) => {
      frames.current.push(frame);
      if (frames.current.length > KEPT_FRAMES) frames.current.shift();
      if (frame.seq <= listedSeq.current) return;
      const { filters: now, items: held, complete: done } = current.current;
      if (held === undefined) return;
      setItems((list) => list && applyFrame(list, frame, now, done));
      if ("change" in frame && mayBringIn(held, frame.change, now)) {
        clearTimeout(reloadTimer.current);
        reloadTimer.current = setTimeout(() => void reload(true), 300);
      }
    });
    const offResync = onResync(() => void reload(true));
    // A read that failed while Herald was unreachable is made again once the watch is back: the frames it replays
    // cannot fill a list that was never read (docs/dashboard.md, "When Herald cannot be reached").
    const offConnection = connection.subscribe((status) => {
      if (status === "open" && current.current.problem !== undefined) void reload(true);
    });
    return () => {
      offFrame();
      offResync();
      offConnection();
      clearTimeout(reloadTimer.current);
    };
  }, [reload]);

  const loadMore = useCallback(async () => {
    const { items: held, filters: asked } = current.current;
    const last = held?.[held.length - 1];
    if (!last) return;
    const gen = generation.current;
    setLoadingMore(true);
    try {
      const page = await readPage(asked, PAGE_SIZE, last.id);
      if (gen !== generation.current) return;
      let more = page.notifications;
      // New notifications are already at the top; only later changes concern an older page.
      for (const frame of frames.current) if (frame.seq > page.seq && "change" in frame) more = applyChange(more, frame.change, asked);
      setProblem(undefined);
      setComplete(page.notifications.length < PAGE_SIZE);
      setItems((list) => {
        const have = new Set((list ?? []).map((item) => item.id));
        return [...(list ?? []), ...more.filter((item) => !have.has(item.id))];
      });
    } catch (error) {
      setProblem(asProblem(error));
    } finally {
      setLoadingMore(false);
    }
  }, []);

  const update = useCallback(
    (change: (items: Item[]) => Item[]) => setItems((list) => list && change(list).filter((item) => matches(item, current.current.filters))),
    [],
  );

  const retry = useCallback(() => void reload(true), [reload]);

  return { items, complete, loadingMore, problem, loadMore, update, retry };
}
