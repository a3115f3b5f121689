import { hc } from "hono/client";
import type { HeraldApi } from "../app";
import { BOOKMARK_HEADER, laterBookmark } from "../db/bookmark";

export type { SignEmbedTokenOptions } from "../auth/embed-token";
export { signEmbedToken } from "../auth/embed-token";
export type { ChangeFrame, InboxChange, NotificationFrame, WatchHandle, WatchInboxOptions, WatchStatus, WatchStopReason } from "./watch";
export { watchInbox } from "./watch";

export interface ClientOptions {
  /** The service's origin, e.g. "https://herald.example.com". */
  baseUrl: string;
  /** A session token or API key, sent as Service-Session-Token. */
  token?: string;
  fetch?: typeof fetch;
}

/**
 * A typed client for every /api/v2 endpoint, derived from the app's own route types by Hono's `hc`: paths,
 * parameters, bodies and responses are checked at compile time against the server code.
 *
 * @example
 * const herald = createHeraldClient({ baseUrl: "http://localhost:8787", token });
 * const res = await herald.notifications.inbox.$get({ query: { read_status: "unread" } });
 * const { notifications, unread_count } = await res.json();
 */
export function createHeraldClient(options: ClientOptions) {
  const send = options.fetch ?? fetch;
  const token: Record<string, string> = options.token ? { "Service-Session-Token": options.token } : {};
  // The latest D1 bookmark Herald answered with, sent back on every later call (docs/consistency.md): what this client
  // wrote, it reads back, whichever replica serves the read. Answers may arrive out of order, so the later one is kept.
  let bookmark: string | undefined;
  const remembering: typeof fetch = async (input, init) => {
    const res = await send(input, init);
    const received = res.headers.get(BOOKMARK_HEADER);
    if (received) bookmark = laterBookmark(bookmark, received);
    return res;
  };
  return hc<HeraldApi>(`${options.baseUrl.replace(/\/$/, "")}/api/v2`, {
    headers: () => (bookmark === undefined ? token : { ...token, [BOOKMARK_HEADER]: bookmark }),
    fetch: remembering,
  });
}

export type HeraldClient = ReturnType<typeof createHeraldClient>;
