import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { getConfig } from "../../src/config/config";
import { userInbox } from "../../src/inbox/address";
import type { InboxDelivery, InboxLimits, InboxNotification } from "../../src/inbox/model";
import { inboxLimits } from "../../src/inbox/retention";
import type { BulkAction, ChangedFields } from "../../src/inbox/states";
import type { InboxCounts } from "../../src/inbox/user-inbox";
import { BASE, call, json, send } from "../helpers";

export const TEMPLATE_A = "c425f63e-716a-4bf4-ae24-78348f706c3f";
export const TEMPLATE_B = "39b1e189-c857-4b0c-877a-511144c18516";

/** The user's inbox object, for a test to call its RPC methods directly. */
export function inbox(userId: string) {
  return userInbox(env, userId);
}

/** The suite's INBOX_MAX_ITEMS and INBOX_RETENTION (test/fixtures/vars.ts), as every producer hands them over. */
export const LIMITS: InboxLimits = inboxLimits(getConfig(env));

/**
 * Deliveries are dated a second apart from 30 days ago: well inside the retention (docs/inbox.md, "Retention"), so no
 * item a test delivers is old enough to give way unless the test dates it so.
 */
let clock = Date.now() - 30 * 24 * 60 * 60 * 1000;

/** A delivery as the notification pipeline makes one, dated a second after the last. */
export function delivery(userId: string, overrides: Partial<InboxDelivery> = {}): InboxDelivery {
  clock += 1000;
  return {
    id: crypto.randomUUID(),
    userId,
    templateId: TEMPLATE_A,
    templateGroup: "Notification Events",
    targets: [],
    title: "Hello **there**",
    content: "Read [the docs](https://example.com/docs).",
    icon: "",
    actions: [{ label: "Open", url: "https://example.com" }],
    createdAt: new Date(clock).toISOString(),
    ...overrides,
  };
}

/** Delivers straight to the user's object, as the notification pipeline does, with the suite's limits. */
export async function deliver(userId: string, overrides: Partial<InboxDelivery> = {}, limits: InboxLimits = LIMITS): Promise<InboxDelivery> {
  const made = delivery(userId, overrides);
  await inbox(userId).deliver(made, limits);
  return made;
}

export interface ListBody {
  notifications: InboxNotification[];
  unread_count: number;
  seq: number;
}

export async function list(token: string, query = ""): Promise<ListBody> {
  const res = await call("GET", `/notifications/inbox${query}`, { token });
  expect(res.status).toBe(200);
  return (await res.json()) as ListBody;
}

/** A watch socket with a queue of received frames. */
export interface Watcher {
  ws: WebSocket;
  protocol: string | null;
  /** Resolves when the socket closes (listened for from the start: a 4409 comes right after the upgrade). */
  closed: Promise<CloseEvent>;
  next(timeoutMs?: number): Promise<Record<string, unknown>>;
  /** Resolves true when no frame arrives within the window. */
  quiet(windowMs?: number): Promise<boolean>;
}

export async function watch(query: string, headers: Record<string, string>): Promise<Watcher> {
  const res = await send(new Request(`${BASE}/api/v2/notifications/inbox/watch${query}`, { headers: { Upgrade: "websocket", ...headers } }));
  expect(res.status).toBe(101);
  const ws = res.webSocket;
  if (!ws) throw new Error("no socket");
  ws.accept();
  const closed = new Promise<CloseEvent>((resolve) => ws.addEventListener("close", resolve, { once: true }));
  const frames: Record<string, unknown>[] = [];
  const waiters: ((frame: Record<string, unknown>) => void)[] = [];
  ws.addEventListener("message", (event) => {
    if (event.data === "pong") return; // the keep-alive answer, not a frame
    const frame = JSON.parse(String(event.data)) as Record<string, unknown>;
    const waiter = waiters.shift();
    if (waiter) waiter(frame);
    else frames.push(frame);
  });
  return {
    ws,
    protocol: res.headers.get("Sec-WebSocket-Protocol"),
    closed,
    next(timeoutMs = 2000) {
      const queued = frames.shift();
      if (queued) return Promise.resolve(queued);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error("no frame arrived")), timeoutMs);
        waiters.push((frame) => {
          clearTimeout(timer);
          resolve(frame);
        });
      });
    },
    async quiet(windowMs = 150) {
      if (frames.length > 0) return false;
      await new Promise((r) => setTimeout(r, windowMs));
      return frames.length === 0;
    },
  };
}

/**
 * A watch frame (docs/inbox.md, "Sequenced sync"): a new (or woken) notification, or, with `sync=true`, a change or a
 * removal (docs/inbox.md, "Retention").
 */
export type Frame = { seq: number; unread_count: number } & (
  | { notification: InboxNotification }
  | { change: ({ ids: string[]; removed?: true } | { all: true }) & ChangedFields }
);

/** The next frame, typed. */
export async function nextFrame(w: Watcher): Promise<Frame> {
  return (await w.next()) as unknown as Frame;
}

/** The frames up to and including `seq` (the socket's last event must come by then). */
export async function framesUntil(w: Watcher, seq: number): Promise<Frame[]> {
  const frames: Frame[] = [];
  for (let last = 0; last < seq; ) {
    const frame = await nextFrame(w);
    frames.push(frame);
    last = frame.seq;
  }
  return frames;
}

/**
 * What a synced client does with a frame: a notification frame puts the item as sent; a change sets the fields it
 * carries on its ids, or, for mark-all-as-read (`all`), on every item that was unread (neither read nor snoozed); a
 * removal (retention) drops its ids.
 */
export function applyFrame(replica: Map<string, InboxNotification>, frame: Frame): void {
  if ("notification" in frame) {
    replica.set(frame.notification.id, frame.notification);
    return;
  }
  const { change } = frame;
  if ("removed" in change && change.removed) {
    for (const id of change.ids) replica.delete(id);
    return;
  }
  const targets =
    "ids" in change
      ? change.ids.flatMap((id) => replica.get(id) ?? [])
      : [...replica.values()].filter((n) => n.read_at === null && n.snoozed_until === null);
  for (const n of targets) {
    replica.set(n.id, {
      ...n,
      ...("read_at" in change ? { read_at: change.read_at ?? null } : {}),
      ...("archived_at" in change ? { archived_at: change.archived_at ?? null } : {}),
      ...("snoozed_until" in change ? { snoozed_until: change.snoozed_until ?? null } : {}),
    });
  }
}

/** Every notification the list shows for `query` (archived and snoozed included by default), paged 100 at a time. */
export async function listAll(token: string, query = "archived=include&snoozed=include"): Promise<ListBody> {
  const notifications: InboxNotification[] = [];
  let first: ListBody | undefined;
  for (;;) {
    const cursor = notifications.at(-1)?.id;
    const page = await list(token, `?${query}&limit=100${cursor ? `&starting_before=${cursor}` : ""}`);
    first ??= page;
    // Every page of one listing is true at the same seq when nothing changed in between.
    expect(page.seq).toBe(first.seq);
    notifications.push(...page.notifications);
    if (page.notifications.length < 100) return { notifications, unread_count: first.unread_count, seq: first.seq };
  }
}

export async function counts(token: string): Promise<InboxCounts> {
  const res = await call("GET", "/notifications/inbox/counts", { token });
  expect(res.status).toBe(200);
  return json<InboxCounts>(res);
}

/** The counts a listing implies (docs/inbox.md, "Item states": unread is neither read nor snoozed). */
export function countsOf(notifications: InboxNotification[], seq: number): InboxCounts {
  const templates = new Map<string, { template_id: string; unread: number; total: number }>();
  const unread = (n: InboxNotification) => (n.read_at === null && n.snoozed_until === null ? 1 : 0);
  for (const n of notifications) {
    const t = templates.get(n.template_id) ?? { template_id: n.template_id, unread: 0, total: 0 };
    templates.set(n.template_id, { ...t, unread: t.unread + unread(n), total: t.total + 1 });
  }
  return {
    unread: notifications.filter((n) => unread(n) === 1).length,
    archived: notifications.filter((n) => n.archived_at !== null).length,
    snoozed: notifications.filter((n) => n.snoozed_until !== null).length,
    total: notifications.length,
    // In SQLite's (binary) order, as the counts endpoint lists them.
    by_template: [...templates.values()].sort((a, b) => (a.template_id < b.template_id ? -1 : a.template_id > b.template_id ? 1 : 0)),
    seq,
  };
}

export const setRead = (token: string, id: string, is_read: boolean) =>
  call("PUT", `/notifications/inbox/${id}/read-status`, { token, body: { is_read } });
export const setArchived = (token: string, id: string, is_archived: boolean) =>
  call("PUT", `/notifications/inbox/${id}/archive-status`, { token, body: { is_archived } });
export const snooze = (token: string, id: string, until: string | null) =>
  call("PUT", `/notifications/inbox/${id}/snooze`, { token, body: { until } });
export const markAllRead = (token: string) => call("PUT", "/notifications/inbox/mark-all-as-read", { token });

export interface BulkFilter {
  templates?: string[];
  targets?: string[];
  read_status?: "all" | "read" | "unread";
  archived?: "exclude" | "include" | "only";
}
export const bulk = (token: string, body: { action: BulkAction; ids?: string[]; filter?: BulkFilter }) =>
  call("POST", "/notifications/inbox/bulk", { token, body });

/** An RFC 3339 instant `ms` from now, as the snooze endpoint stores it. */
export const fromNow = (ms: number) => new Date(Date.now() + ms).toISOString();

/** The body of a one-item change (read-status, archive-status, snooze). */
export interface ItemBody {
  message: string;
  notification: InboxNotification;
  unread_count: number;
}
