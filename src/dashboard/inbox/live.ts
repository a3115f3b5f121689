import { type ChangeFrame, type NotificationFrame, type WatchHandle, type WatchStatus, watchInbox } from "../../client";
import { api, call } from "../api";
import { createStore } from "../ui/store";

/**
 * The signed-in person's inbox, watched for as long as they are signed in, whatever page is open: the unread count
 * (the badge and the tab title) and every frame, for the inbox page's list. The typed client's `watchInbox()`
 * resumes after a drop from the last `seq` it delivered, so nothing is missed or seen twice (docs/dashboard.md#live).
 */
export const unreadCount = createStore<number | undefined>(undefined);
export const connection = createStore<WatchStatus>("connecting");
/** Why the watch stopped, once it has: `replaced` when the person's newer watches pushed this one out (4429). */
export const stoppedBecause = createStore<string | undefined>(undefined);

export type InboxFrame = NotificationFrame | ChangeFrame;
const listeners = new Set<(frame: InboxFrame) => void>();
/** Called after the events the watch missed could no longer be replayed (4409): lists must be read again. */
const resyncListeners = new Set<() => void>();

/** Follows every frame of the watch (new notifications, and changes made anywhere: other tabs, the API). */
export function onFrame(listener: (frame: InboxFrame) => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

export function onResync(listener: () => void): () => void {
  resyncListeners.add(listener);
  return () => resyncListeners.delete(listener);
}

let handle: WatchHandle | undefined;
/** Bumped by every start and stop: a start whose first answer arrives after a stop (a quick sign-out) opens nothing. */
let generation = 0;
/** The seq the shown unread count is true at: an answer read before it (a list that arrives late) is older news. */
let countSeq = 0;

/** The inbox's counts, or undefined when they could not be read (the watch then finds its own starting point). */
async function readCounts() {
  try {
    return await call(api.notifications.inbox.counts.$get());
  } catch {
    return undefined;
  }
}

/**
 * Starts watching from `seq` (the counts' seq, read first so the count and the stream agree). When Herald cannot be
 * reached the watch starts anyway: it keeps trying with backoff, and the count is read again once it is open.
 */
export async function startLive(): Promise<void> {
  stopLive();
  const started = generation;
  const counts = await readCounts();
  if (started !== generation) return;
  if (counts) setUnread(counts.unread, counts.seq);
  const deliver = (frame: InboxFrame) => {
    setUnread(frame.unread_count, frame.seq);
    for (const listener of listeners) listener(frame);
  };
  handle = watchInbox({
    baseUrl: location.origin,
    sync: true,
    format: "markdown",
    ...(counts ? { afterSeq: counts.seq } : {}),
    onNotification: deliver,
    onChange: deliver,
    onStatus(status, detail) {
      stoppedBecause.set(status === "stopped" ? detail : undefined);
      connection.set(status);
      if (status === "open" && unreadCount.get() === undefined) {
        void readCounts().then((fresh) => fresh && setUnread(fresh.unread, fresh.seq));
      }
      if (status === "resynced") {
        countSeq = 0;
        void readCounts().then((fresh) => fresh && setUnread(fresh.unread, fresh.seq));
        for (const listener of resyncListeners) listener();
      }
    },
  });
}

export function stopLive(): void {
  generation += 1;
  handle?.close();
  handle = undefined;
  countSeq = 0;
  unreadCount.set(undefined);
}

/**
 * A new unread count. With the `seq` it is true at (frames, the list, the counts), it is shown unless a newer one
 * already is; answers arrive out of order, frames never do. An action's answer (a read, mark all) has no seq: while
 * the watch is open its frame follows at once and is the truth, so the answer only stands in when the watch is down.
 */
export function setUnread(count: number, seq?: number): void {
  if (seq === undefined) {
    if (connection.get() !== "open") unreadCount.set(count);
    return;
  }
  if (seq < countSeq) return;
  countSeq = seq;
  unreadCount.set(count);
}
