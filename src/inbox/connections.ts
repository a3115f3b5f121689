import type { EventLog } from "./event-log";
import { InboxMessages } from "./messages";
import type { WatchFormat } from "./model";
import {
  CLOSE_RESYNC,
  CLOSE_SESSION_ENDED,
  CLOSE_TOO_MANY,
  frameFor,
  type SequencedEvent,
  sendOrClose,
  type WatchAttachment,
  type WatchRequest,
} from "./watch";

/** A socket whose session was due to expire, with what it recorded of that session. */
export interface ExpiringSocket {
  ws: WebSocket;
  session: { keyId: string; expiresAt: number };
}

function attachmentOf(ws: WebSocket): WatchAttachment | null {
  return ws.deserializeAttachment() as WatchAttachment | null;
}

function close(ws: WebSocket, code: number, reason: string): void {
  try {
    ws.close(code, reason);
  } catch {
    // already closing
  }
}

/**
 * The watch sockets of one inbox object, accepted with WebSocket hibernation: what each socket asked for (its filters,
 * its format, the session that opened it) lives in its attachment, so it survives the object being evicted, and idle
 * sockets cost nothing. Each socket is tagged with the key id of the credential that opened it, so ending a session
 * closes exactly its sockets (docs/api.md, "Watching the inbox").
 */
export class WatchConnections {
  constructor(private readonly ctx: DurableObjectState) {}

  /**
   * Accepts a socket and, with `afterSeq`, first sends it every event after that one that it would have received
   * live, or closes it with 4409 when some are no longer kept. Nothing awaits between the two, so the replay and the
   * socket's first live frame cannot interleave.
   */
  accept(watch: WatchRequest, log: EventLog): Response {
    this.makeRoomFor(watch.maxSockets);
    const attachment: WatchAttachment = {
      ...watch.attachment,
      session: { keyId: watch.keyId, expiresAt: watch.expiresAt },
      openedAt: Date.now(),
    };
    const pair = new WebSocketPair();
    const [client, server] = Object.values(pair) as [WebSocket, WebSocket];
    this.ctx.acceptWebSocket(server, [watch.keyId]);
    server.serializeAttachment(attachment);
    if (watch.afterSeq !== undefined) this.replay(server, attachment, watch.afterSeq, log);
    const headers = watch.protocol ? { "Sec-WebSocket-Protocol": watch.protocol } : undefined;
    return new Response(null, { status: 101, webSocket: client, headers });
  }

  /**
   * Closes the oldest sockets, with 4429, until one more fits under `max`: each socket holds memory in the object and
   * a connection at the edge, so a user cannot hold an unbounded number. The newest watch wins, since an old one is
   * likelier a forgotten tab or a connection that died without closing (docs/api.md, "Watching the inbox").
   */
  private makeRoomFor(max: number): void {
    const open = this.ctx.getWebSockets();
    if (open.length < max) return;
    const openedAt = (ws: WebSocket) => (ws.deserializeAttachment() as WatchAttachment | null)?.openedAt ?? 0;
    const oldest = open.sort((a, b) => openedAt(a) - openedAt(b)).slice(0, open.length - max + 1);
    for (const ws of oldest) close(ws, CLOSE_TOO_MANY, InboxMessages.tooManyWatches);
  }

  private replay(ws: WebSocket, attachment: WatchAttachment, afterSeq: number, log: EventLog): void {
    if (!log.keepsAfter(afterSeq)) {
      close(ws, CLOSE_RESYNC, InboxMessages.resync);
      return;
    }
    for (const event of log.after(afterSeq)) {
      const frame = frameFor(event, attachment, new Map());
      if (frame !== undefined) sendOrClose(ws, frame);
    }
  }

  /** Sends each event, in `seq` order, to every socket that receives it (rendered once per format and event). */
  push(sequenced: SequencedEvent[]): void {
    if (sequenced.length === 0) return;
    const sockets = this.ctx.getWebSockets().flatMap((ws) => {
      const attachment = attachmentOf(ws);
      return attachment ? [{ ws, attachment }] : [];
    });
    if (sockets.length === 0) return;
    for (const event of sequenced) {
      const rendered = new Map<WatchFormat, string>();
      for (const { ws, attachment } of sockets) {
        const frame = frameFor(event, attachment, rendered);
        if (frame !== undefined) sendOrClose(ws, frame);
      }
    }
  }

  /**
   * Closes, with 4401, the sockets opened with a credential that no longer works (logout, key deleted, password
   * reset, suspension…), or every socket when no key is given. A socket must not outlive the session that opened it.
   */
  end(keyIds?: string[]): number {
    const sockets = keyIds ? keyIds.flatMap((id) => this.ctx.getWebSockets(id)) : this.ctx.getWebSockets();
    for (const ws of sockets) close(ws, CLOSE_SESSION_ENDED, InboxMessages.sessionEnded);
    return sockets.length;
  }

  /** The expiries (epoch ms) still ahead of `now` of the sessions that opened the open sockets. */
  expiries(now: number): number[] {
    return this.ctx
      .getWebSockets()
      .map((ws) => attachmentOf(ws)?.session?.expiresAt)
      .filter((t): t is number => t !== undefined && t > now);
  }

  /** The sockets whose session, as they recorded it, has expired at `now`. */
  expired(now: number): ExpiringSocket[] {
    return this.ctx.getWebSockets().flatMap((ws) => {
      const session = attachmentOf(ws)?.session;
      return session && session.expiresAt <= now ? [{ ws, session }] : [];
    });
  }

  /** The session slid forward: the socket keeps going until the new expiry. */
  extend({ ws, session }: ExpiringSocket, expiresAt: number): void {
    const attachment = attachmentOf(ws);
    if (attachment) ws.serializeAttachment({ ...attachment, session: { ...session, expiresAt } });
  }

  /** The session has ended: its socket is closed with 4401. */
  closeExpired({ ws }: ExpiringSocket): void {
    close(ws, CLOSE_SESSION_ENDED, InboxMessages.sessionExpired);
  }

  /** Completes the closing handshake a client started. */
  closed(ws: WebSocket, code: number, reason: string): void {
    try {
      ws.close(code === 1005 ? 1000 : code, reason);
    } catch {
      // already closed
    }
  }
}
