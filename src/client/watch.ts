import type { InboxNotification } from "../inbox/model";

export interface NotificationFrame {
  notification: InboxNotification;
  unread_count: number;
}

export interface ReadStateFrame {
  read_state: { id: string; read_at: string | null } | { all: true; read_at: string };
  unread_count: number;
}

export type WatchStopReason = "closed" | "session-ended" | "unauthorized";

export interface WatchInboxOptions {
  baseUrl: string;
  token: string;
  targets?: string[];
  templates?: string[];
  readStatus?: "all" | "read" | "unread";
  format?: "markdown" | "plaintext";
  /** Also receive read-state changes (mark-all-as-read, read-status) so every tab's badge stays right. */
  syncReadState?: boolean;
  onNotification(frame: NotificationFrame): void;
  onReadState?(frame: ReadStateFrame): void;
  /** Connection lifecycle, for a UI indicator. */
  onStatus?(status: "connecting" | "open" | "reconnecting" | "stopped", detail?: string): void;
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
}

/** The server closes with this when the session that opened the socket ended (logout, revocation, …). */
const SESSION_ENDED = 4401;
const POLICY_VIOLATION = 1008;

function watchUrl(options: WatchInboxOptions): string {
  const url = new URL("/api/v2/notifications/inbox/watch", options.baseUrl);
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  if (options.targets?.length) url.searchParams.set("targets", options.targets.join(","));
  if (options.templates?.length) url.searchParams.set("templates", options.templates.join(","));
  if (options.readStatus) url.searchParams.set("read_status", options.readStatus);
  if (options.format) url.searchParams.set("format", options.format);
  if (options.syncReadState) url.searchParams.set("sync_read_state", "true");
  return url.href;
}

/**
 * Watches the inbox (`GET /notifications/inbox/watch`) from a browser or Node. The token travels as a subprotocol (`herald.v1`,
 * `herald.token.<token>`), never in the URL. Dropped connections reconnect with jittered exponential backoff and
 * the same filters; it stops for good when the session ends (close 4401), when the token is rejected, or on close().
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

  // A browser cannot see why an upgrade failed, so after a failed connect ask a plain endpoint whether the token
  // still works: if not, reconnecting would only hammer the server.
  const tokenRejected = async (): Promise<boolean> => {
    try {
      const res = await doFetch(new URL("/api/v2/users/me", options.baseUrl), { headers: { "Service-Session-Token": options.token } });
      return res.status === 401;
    } catch {
      return false;
    }
  };

  const connect = () => {
    if (stopped) return;
    options.onStatus?.(attempt === 0 ? "connecting" : "reconnecting");
    let opened = false;
    const ws = new Socket(watchUrl(options), ["herald.v1", `herald.token.${options.token}`]);
    socket = ws;
    ws.addEventListener("open", () => {
      opened = true;
      attempt = 0;
      options.onStatus?.("open");
    });
    ws.addEventListener("message", (event: MessageEvent) => {
      if (typeof event.data !== "string" || event.data === "pong") return;
      const frame = JSON.parse(event.data) as NotificationFrame | ReadStateFrame;
      if ("notification" in frame) options.onNotification(frame);
      else options.onReadState?.(frame);
    });
    ws.addEventListener("close", (event: CloseEvent) => {
      if (stopped) return;
      if (event.code === SESSION_ENDED || event.code === POLICY_VIOLATION) return stop("session-ended");
      void (async () => {
        if (!opened && (await tokenRejected())) return stop("unauthorized");
        const ceiling = Math.min(maxMs, initialMs * 2 ** attempt);
        attempt += 1;
        schedule(connect, Math.round(random() * ceiling));
      })();
    });
  };

  connect();
  return {
    close() {
      stop("closed");
      socket?.close(1000, "client closed");
    },
    stopped: stoppedPromise,
  };
}
