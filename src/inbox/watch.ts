import type * as z from "zod";
import { markdownToPlaintext } from "../markdown/plaintext";
import { InboxMessages } from "./messages";
import { type InboxFilter, type InboxNotification, matchesFilter, type WatchFormat } from "./model";
import type { InboxChangeFrame } from "./schemas";

/** Internal header carrying the validated watch request from the Worker to the object (never from a client). */
export const WATCH_HEADER = "X-Herald-Watch";

/** What each watch socket remembers across hibernation (kept well under the 2 KiB attachment limit). */
export interface WatchAttachment {
  filter: InboxFilter;
  format: WatchFormat;
  /** `sync=true`: also receive a change frame for every other kind of change, whatever the filters. */
  sync: boolean;
  /** The credential that opened the socket, and when it expires (epoch ms) as last known: the object's alarm closes the socket then, unless the session slid forward. */
  session?: { keyId: string; expiresAt: number };
  /** When the socket was accepted (epoch ms): past the per-user limit, the oldest one gives way. */
  openedAt?: number;
}

/** The watch request the Worker hands the object in WATCH_HEADER. */
export interface WatchRequest {
  attachment: WatchAttachment;
  keyId: string;
  expiresAt: number;
  protocol: string | null;
  /** `after_seq`: replay every event after this one before the live ones. */
  afterSeq?: number;
  /** WATCH_MAX_PER_USER: how many watch sockets the user may hold at once (docs/api.md, "Watching the inbox"). */
  maxSockets: number;
}

/** The object's answer (an internal status, never a client's) when `after_seq` is ahead of the inbox's seq. */
export const AFTER_SEQ_AHEAD = 409;

/**
 * Close codes of the watch socket (docs/api.md, Watching the inbox):
 * - 4008: the client fell behind (its send buffer passed MAX_BUFFERED_BYTES). Nothing is dropped silently: the
 *   client reconnects with `after_seq` and misses nothing.
 */
const CLOSE_FELL_BEHIND = 4008;
/**
 * - 4401: the credential that opened the socket stopped working (logout, token deleted, password reset or change,
 *   suspension, deletion, login conversion) or expired. Clients must not reconnect with the same token.
 */
export const CLOSE_SESSION_ENDED = 4401;
/** - 4409: `after_seq` is older than the events the object keeps: list the inbox, then resume from its `seq`. */
export const CLOSE_RESYNC = 4409;
/**
 * - 4429: the user opened more than WATCH_MAX_PER_USER watches, and this one was the oldest. Clients must not
 *   reconnect on their own (that would push out another of the user's watches); a person can reload.
 */
export const CLOSE_TOO_MANY = 4429;
const MAX_BUFFERED_BYTES = 1024 * 1024;

/**
 * A change to many items at once: the ids (or every item that was unread, for mark-all-as-read) and what changed, as
 * the change frame documents it (src/inbox/schemas.ts).
 */
export type InboxChange = z.infer<typeof InboxChangeFrame>["change"];

/**
 * One numbered event of the inbox (docs/inbox.md, "Sequenced sync"), as stored: a notification that arrives (a
 * delivery, or a snoozed item waking, marked `wake`), or a change to existing items.
 */
export type InboxEvent = { notification: InboxNotification; wake?: true } | { change: InboxChange };

export interface SequencedEvent {
  seq: number;
  event: InboxEvent;
  /** The unread count once the change that made the event has committed (all events of one bulk action share it). */
  unread: number;
}

/**
 * The frame this socket is sent for an event, or undefined when the socket does not receive it:
 * - a notification that matches the socket's filters: `{seq, notification, unread_count}`, rendered per `format`;
 * - with `sync`, every change (whatever the filters) as `{seq, change, unread_count}`, and a wake the filters leave
 *   out as the change it is (unread again, no longer snoozed), so a synced client's state never drifts.
 * Replay and live pushes both go through here, so a resumed socket receives exactly what it would have live.
 */
export function frameFor(sequenced: SequencedEvent, attachment: WatchAttachment, rendered: Map<WatchFormat, string>): string | undefined {
  const { seq, event, unread } = sequenced;
  if ("notification" in event) {
    const { notification } = event;
    if (matchesFilter(notification, attachment.filter)) {
      let frame = rendered.get(attachment.format);
      if (frame === undefined) {
        frame = notificationFrame(seq, notification, unread, attachment.format);
        rendered.set(attachment.format, frame);
      }
      return frame;
    }
    if (!event.wake || !syncs(attachment)) return undefined;
    return changeFrame(seq, { ids: [notification.id], read_at: null, snoozed_until: null }, unread);
  }
  return syncs(attachment) ? changeFrame(seq, event.change, unread) : undefined;
}

/** Sockets opened before `sync` had its name carry `syncReadState`, its first name (docs/api.md, "Watching the inbox"). */
function syncs(attachment: WatchAttachment & { syncReadState?: boolean }): boolean {
  return attachment.sync ?? attachment.syncReadState ?? false;
}

/** A notification as a client asked to see it: title and content as stored (Markdown) or as plain text. */
export function inFormat(notification: InboxNotification, format: WatchFormat): InboxNotification {
  if (format === "markdown") return notification;
  return { ...notification, title: markdownToPlaintext(notification.title), content: markdownToPlaintext(notification.content) };
}

/** A new-notification frame: the interface's GetInboxNotificationResponse plus `seq`. */
function notificationFrame(seq: number, notification: InboxNotification, unreadCount: number, format: WatchFormat): string {
  return JSON.stringify({ seq, notification: inFormat(notification, format), unread_count: unreadCount });
}

function changeFrame(seq: number, change: InboxChange, unreadCount: number): string {
  return JSON.stringify({ seq, change, unread_count: unreadCount });
}

/**
 * Sends a frame, or closes a socket whose client is not keeping up: a frame is either delivered or the client is
 * told (by the close) that it must resume — never silently skipped.
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
    // The socket closed between listing and sending; its client reconnects and resumes.
  }
}
