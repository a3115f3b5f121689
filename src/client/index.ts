import { hc } from "hono/client";
import type { HeraldApi } from "../app";

export { watchInbox } from "./watch";
export type { ChangeFrame, InboxChange, NotificationFrame, WatchHandle, WatchInboxOptions, WatchStatus, WatchStopReason } from "./watch";

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
  return hc<HeraldApi>(`${options.baseUrl.replace(/\/$/, "")}/api/v2`, {
    headers: options.token ? { "Service-Session-Token": options.token } : {},
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
}

export type HeraldClient = ReturnType<typeof createHeraldClient>;
