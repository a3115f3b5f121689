import { markdownToPlaintext } from "../markdown/plaintext";
import { InboxMessages } from "./messages";
import type { InboxFilter, InboxNotification, WatchFormat } from "./model";

/** Internal header carrying the validated watch request from the Worker to the object (never from a client). */
export const WATCH_HEADER = "X-Herald-Watch";

/** What each watch socket remembers across hibernation (kept well under the 2 KiB attachment limit). */
export interface WatchAttachment {
  filter: InboxFilter;
  format: WatchFormat;
  /** Opt-in (`sync_read_state=true`): also receive read-state changes made by mark-all-as-read and read-status. */
  syncReadState: boolean;
  /** The credential that opened the socket, and when it expires (epoch ms) as last known: the object's alarm closes the socket then, unless the session slid forward. */
  session?: { keyId: string; expiresAt: number };
}

/**
 * Close codes of the watch socket (docs/api.md, Watching the inbox):
 * - 4008: the client fell behind (its send buffer passed MAX_BUFFERED_BYTES). Nothing is dropped silently: the
 *   client reconnects and lists the inbox to catch up.
 */
const CLOSE_FELL_BEHIND = 4008;
/**
 * - 4401: the credential that opened the socket stopped working (logout, token deleted, password reset or change,
 *   suspension, deletion, login conversion) or expired. Clients must not reconnect with the same token.
 */
export const CLOSE_SESSION_ENDED = 4401;
const MAX_BUFFERED_BYTES = 1024 * 1024;

/** The watch's frame: exactly the interface's GetInboxNotificationResponse, title and content rendered per `format`. */
export function watchFrame(notification: InboxNotification, unreadCount: number, format: WatchFormat): string {
  const rendered =
    format === "plaintext"
      ? { ...notification, title: markdownToPlaintext(notification.title), content: markdownToPlaintext(notification.content) }
      : notification;
  return JSON.stringify({ notification: rendered, unread_count: unreadCount });
}

/** read-status changes one notification; mark-all-as-read marks everything up to `read_at` read. */
export type ReadStateChange = { id: string; read_at: string | null } | { all: true; read_at: string };

/** Sync frames carry `read_state` instead of `notification`, so a client tells the two apart by key. */
export function readStateFrame(change: ReadStateChange, unreadCount: number): string {
  return JSON.stringify({ read_state: change, unread_count: unreadCount });
}

/**
 * Sends a frame, or closes a socket whose client is not keeping up: a frame is either delivered or the client is
 * told (by the close) that it must resynchronise — never silently skipped.
 */
export function sendOrClose(ws: WebSocket, frame: string): void {
  try {
    const buffered = (ws as { bufferedAmount?: unknown }).bufferedAmount;
    if (typeof buffered === "number" && buffered > MAX_BUFFERED_BYTES) {
      ws.close(CLOSE_FELL_BEHIND, InboxMessages.fellBehind);
      return;
    }
    ws.send(frame);
  } catch {
    // The socket closed between listing and sending; its client reconnects and lists.
  }
}
