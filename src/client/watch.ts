import type * as z from "zod";
import type { InboxChangeFrame, InboxNotificationFrame } from "../inbox/schemas";
import type { InboxChange } from "../inbox/watch";

/** A change to existing notifications: the ids (or, with `all`, every notification that was unread) and what changed. */
export type { InboxChange };

/**
 * A notification that arrived (delivered, or woken from a snooze) and matches the watch's filters, with the inbox's
 * sequence number of this event (docs/inbox.md, "Sequenced sync and resume").
 */
export type NotificationFrame = z.infer<typeof InboxNotificationFrame>;

/**
 * Sent only with `sync`: every other change (read, unread, archive, snooze, bulk, mark-all-as-read), whatever the
 * filters. The fields present are the ones that changed, with their new values.
 */
export type ChangeFrame = z.infer<typeof InboxChangeFrame>;

export type WatchStopReason = "closed" | "session-ended" | "unauthorized" | "replaced";

/**
 * - `connecting`, `open`, `reconnecting`, `stopped` (detail: the WatchStopReason): the connection's lifecycle;
 * - `resynced` (detail: the seq resumed from): the events after the last delivered one are no longer kept (4409), and
 *   the watch resumed from a newer seq. Without `onResync`, this is the application's cue to list the inbox again.
 */
export type WatchStatus = "connecting" | "open" | "reconnecting" | "resynced" | "stopped";

export interface WatchInboxOptions {
  baseUrl: string;
  /**
   * A session token or API key. Without one, the browser's session cookie authenticates (a page served by Herald
   * itself, or a same-site page): the cookie is HttpOnly, so a script never holds the token (docs/dashboard.md).
   */
  token?: string;
  targets?: string[];
  templates?: string[];
  readStatus?: "all" | "read" | "unread";
  format?: "markdown" | "plaintext";
  /** Also receive a change frame for every other change (read, archive, snooze, bulk…), so every tab's copy stays right. */
  sync?: boolean;
  /** @deprecated The first name of `sync`. */
  syncReadState?: boolean;
  /**
   * Start after this seq (list, then watch): the `seq` that `GET /notifications/inbox` or `/counts` reported with the
   * state the application already has. Without it, the watch starts from the inbox's seq when watchInbox() is called.
   */
  afterSeq?: number;
  onNotification(frame: NotificationFrame): void;
  /** Change frames (with `sync`). */
  onChange?(frame: ChangeFrame): void;
  /**
   * The events after the last delivered seq are no longer kept (close 4409): list the inbox again and return the `seq`
   * the list reports; the watch resumes from it. Returning undefined resumes from the counts endpoint's seq. A throw
   * (or a failed request) is retried with the reconnect backoff.
   */
  onResync?: () => Promise<number | undefined> | number | undefined;
  /** Connection lifecycle, for a UI indicator (see WatchStatus). */
  onStatus?(status: WatchStatus, detail?: string): void;
  /** Reconnect backoff: full jitter over min(maxMs, initialMs · 2^attempt). */
  backoff?: { initialMs?: number; maxMs?: number };
  /** Injection points for environments without globals (and for tests of the backoff). */
  WebSocket?: typeof WebSocket;
  fetch?: typeof fetch;
  random?: () => number;
  setTimeout?: (fn: () => void, ms: number) => unknown;
}

export interface WatchHandle {
  close(): void;
  /** Resolves with why the watch stopped for good. */
  stopped: Promise<WatchStopReason>;
  /** The seq of the last frame delivered (or the seq resumed from), undefined before the first one is known. */
  readonly seq: number | undefined;
}

/** The server closes with this when the session that opened the socket ended (logout, revocation, …). */
const SESSION_ENDED = 4401;
const POLICY_VIOLATION = 1008;
/** `after_seq` is older than the events the server keeps: list, then resume from the list's seq. */
const RESYNC = 4409;
/** The user opened more watches than the server allows and this was the oldest: reconnecting would push out another. */
const REPLACED = 4429;

function watchUrl(options: WatchInboxOptions, afterSeq: number | undefined): string {
  const url = new URL("/api/v2/notifications/inbox/watch", options.baseUrl);
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  if (options.targets?.length) url.searchParams.set("targets", options.targets.join(","));
  if (options.templates?.length) url.searchParams.set("templates", options.templates.join(","));
  if (options.readStatus) url.searchParams.set("read_status", options.readStatus);
  if (options.format) url.searchParams.set("format", options.format);
  if (options.sync ?? options.syncReadState) url.searchParams.set("sync", "true");
  if (afterSeq !== undefined) url.searchParams.set("after_seq", String(afterSeq));
  return url.href;
}

/** What `GET /notifications/inbox/counts` says: the inbox's current seq, a rejected token, or nothing usable. */
type SeqProbe = { seq: number } | "unauthorized" | undefined;

/**
 * Watches the inbox (`GET /notifications/inbox/watch`) from a browser or Node, and delivers every event exactly once,
 * in `seq` order, across dropped connections:
 *
 * - The token travels as a subprotocol (`herald.v1`, `herald.token.<token>`), never in the URL; without a token, the
 *   browser's session cookie authenticates the socket and the counts requests.
 * - It starts from `afterSeq` or, without it, from the inbox's seq when called (read from `GET
 *   /notifications/inbox/counts`; if that fails, from the first frame that arrives).
 * - It remembers the seq of the last frame it delivered and reconnects (after a drop, or 4008 when the client fell
 *   behind) with `after_seq` set to it, with jittered exponential backoff and the same filters: the server replays what
 *   was missed. Frames at or below the last delivered seq are dropped, so nothing is delivered twice.
 * - On 4409 (the events after that seq are no longer kept) it asks `onResync` for the seq to resume from (the
 *   application re-lists). Without `onResync` it reads the seq from the counts endpoint and reports
 *   `onStatus("resynced", seq)`: the application's copy may have missed events and must be listed again. The same
 *   happens when the remembered seq is beyond the inbox's (the server refuses it before the upgrade).
 * - It stops for good when the session ends (close 4401), when the token is rejected, when the user's newer watches
 *   pushed this one out (close 4429, `replaced`), or on close().
 */
export function watchInbox(options: WatchInboxOptions): WatchHandle {
  const Socket = options.WebSocket ?? globalThis.WebSocket;
  const doFetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  const random = options.random ?? Math.random;
  const schedule = options.setTimeout ?? ((fn: () => void, ms: number) => setTimeout(fn, ms));
  const initialMs = options.backoff?.initialMs ?? 500;
  const maxMs = options.backoff?.maxMs ?? 30_000;
  let attempt = 0;
  let socket: WebSocket | undefined;
  let stopped = false;
  /** The seq of the last frame delivered, or the seq to start or resume from: the next connection's `after_seq`. */
  let lastSeq = options.afterSeq;
  /** Set by 4409 (or an `after_seq` the server refused): the next connection first finds a new seq to resume from. */
  let mustResync = false;
  let resolveStopped: (reason: WatchStopReason) => void = () => undefined;
  const stoppedPromise = new Promise<WatchStopReason>((resolve) => {
    resolveStopped = resolve;
  });

  const stop = (reason: WatchStopReason) => {
    if (stopped) return;
    stopped = true;
    options.onStatus?.("stopped", reason);
    resolveStopped(reason);
  };

  // Also how a failed connect is explained: a browser cannot see why an upgrade failed, so ask a plain endpoint
  // whether the token still works (if not, reconnecting would only hammer the server) and what the seq is.
  const probe = async (): Promise<SeqProbe> => {
    try {
      // `credentials` is the browser's (a same-site page on another origin); the Workers types do not know it.
      const init: { credentials?: "include"; headers?: Record<string, string> } =
        options.token === undefined ? { credentials: "include" } : { headers: { "Service-Session-Token": options.token } };
      const res = await doFetch(new URL("/api/v2/notifications/inbox/counts", options.baseUrl), init);
      if (!res.ok) {
        // Only the status is needed; a body never read would keep the request open.
        await res.body?.cancel();
        return res.status === 401 ? "unauthorized" : undefined;
      }
      const body = (await res.json()) as { seq?: unknown };
      return typeof body.seq === "number" ? { seq: body.seq } : undefined;
    } catch {
      return undefined;
    }
  };

  const retry = () => {
    if (stopped) return;
    const ceiling = Math.min(maxMs, initialMs * 2 ** attempt);
    attempt += 1;
    schedule(() => void reconnect(), Math.round(random() * ceiling));
  };

  /** The seq to resume from after 4409: the application's (it re-listed), else the counts endpoint's. */
  const resyncSeq = async (): Promise<SeqProbe> => {
    if (options.onResync) {
      try {
        const seq = await options.onResync();
        if (seq !== undefined) return { seq };
      } catch {
        return undefined;
      }
    }
    return probe();
  };

  const reconnect = async () => {
    if (stopped) return;
    options.onStatus?.("reconnecting");
    if (mustResync) {
      const found = await resyncSeq();
      if (stopped) return;
      if (found === "unauthorized") return stop("unauthorized");
      if (found === undefined) return retry();
      mustResync = false;
      lastSeq = found.seq;
      options.onStatus?.("resynced", String(found.seq));
    }
    open();
  };

  const deliver = (data: string) => {
    const frame = JSON.parse(data) as Partial<NotificationFrame & ChangeFrame>;
    if (typeof frame.seq === "number") {
      // A frame already delivered (defensive: the server's replay starts after `after_seq`).
      if (lastSeq !== undefined && frame.seq <= lastSeq) return;
      lastSeq = frame.seq;
    }
    if (frame.notification !== undefined) options.onNotification(frame as NotificationFrame);
    else if (frame.change !== undefined) options.onChange?.(frame as ChangeFrame);
  };

  const open = () => {
    if (stopped) return;
    let opened = false;
    const protocols = options.token === undefined ? ["herald.v1"] : ["herald.v1", `herald.token.${options.token}`];
    const ws = new Socket(watchUrl(options, lastSeq), protocols);
    socket = ws;
    ws.addEventListener("open", () => {
      opened = true;
      attempt = 0;
      options.onStatus?.("open");
    });
    ws.addEventListener("message", (event: MessageEvent) => {
      if (ws !== socket || typeof event.data !== "string" || event.data === "pong") return;
      deliver(event.data);
    });
    ws.addEventListener("close", (event: CloseEvent) => {
      if (stopped || ws !== socket) return;
      if (event.code === SESSION_ENDED || event.code === POLICY_VIOLATION) return stop("session-ended");
      if (event.code === REPLACED) return stop("replaced");
      if (event.code === RESYNC) {
        mustResync = true;
        return retry();
      }
      if (opened) return retry();
      void (async () => {
        const found = await probe();
        if (stopped) return;
        if (found === "unauthorized") return stop("unauthorized");
        // The server refuses an `after_seq` beyond its seq before the upgrade: resume from its seq instead.
        if (found !== undefined && lastSeq !== undefined && found.seq < lastSeq) mustResync = true;
        retry();
      })();
    });
  };

  void (async () => {
    options.onStatus?.("connecting");
    if (lastSeq === undefined) {
      const found = await probe();
      if (stopped) return;
      if (found === "unauthorized") return stop("unauthorized");
      if (found !== undefined) lastSeq = found.seq;
    }
    open();
  })();

  return {
    close() {
      stop("closed");
      socket?.close(1000, "client closed");
    },
    stopped: stoppedPromise,
    get seq() {
      return lastSeq;
    },
  };
}
