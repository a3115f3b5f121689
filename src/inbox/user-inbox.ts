import { DurableObject } from "cloudflare:workers";
import { and, desc, eq, inArray, isNotNull, isNull, lt, or, sql, type SQL } from "drizzle-orm";
import { drizzle, type DrizzleSqliteDODatabase } from "drizzle-orm/durable-sqlite";
import { migrate } from "drizzle-orm/durable-sqlite/migrator";
import migrations from "../../drizzle/inbox/migrations.js";
import { database } from "../db/client";
import { apiKeys } from "../db/schema";
import { inSlices } from "../db/slices";
import type { Env } from "../env";
import { nowIso } from "../lib/crypto";
import {
  fallbackIcon,
  matchesFilter,
  toInboxNotification,
  type InboxDelivery,
  type InboxFilter,
  type InboxNotification,
} from "./model";
import { InboxMessages } from "./messages";
import * as schema from "./schema";
import { inboxCounters, inboxNotifications } from "./schema";
import { CLOSE_SESSION_ENDED, WATCH_HEADER, readStateFrame, sendOrClose, watchFrame, type ReadStateChange, type WatchAttachment } from "./watch";

const UNREAD = "unread";

export type ListResult =
  | { ok: true; /** A JSON array of InboxNotification, newest first. */ notificationsJson: string; unreadCount: number }
  | { ok: false; reason: "unknown_cursor" };

export type ReadStatusResult = { notification: InboxNotification; unreadCount: number } | null;

/**
 * One object per user (`idFromName(userId)`): that user's inbox rows, the maintained unread count, and the live
 * watch sockets. Every method runs on the object's single thread with synchronous SQLite, so a count update and
 * the row change it reflects can never interleave with another request.
 */
export class UserInbox extends DurableObject<Env> {
  private readonly db: DrizzleSqliteDODatabase<typeof schema>;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.db = drizzle(ctx.storage, { schema });
    void ctx.blockConcurrencyWhile(async () => {
      await migrate(this.db, migrations);
    });
    // Answered by the runtime itself: idle watchers keep their connection alive without waking the object.
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair("ping", "pong"));
  }

  /** The counter is read once per object lifetime, then kept beside the SQLite row it mirrors. */
  private unread: number | undefined;

  private unreadCount(): number {
    this.unread ??= this.db.select({ value: inboxCounters.value }).from(inboxCounters).where(eq(inboxCounters.name, UNREAD)).get()?.value ?? 0;
    return this.unread;
  }

  /** A transaction whose failure also drops the in-memory counter (SQLite rolled back; memory must not lie). */
  private transact<T>(work: () => T): T {
    try {
      return this.ctx.storage.transactionSync(work);
    } catch (error) {
      this.unread = undefined;
      throw error;
    }
  }

  private addUnread(delta: number): number {
    const next = Math.max(0, this.unreadCount() + delta);
    this.setUnread(next);
    return next;
  }

  private setUnread(value: number): void {
    this.unread = value;
    this.db
      .insert(inboxCounters)
      .values({ name: UNREAD, value })
      .onConflictDoUpdate({ target: inboxCounters.name, set: { value } })
      .run();
  }

  /**
   * Stores a notification and pushes it to matching watchers. Idempotent on the message id: a redelivery finds the
   * row, stores nothing and pushes nothing.
   */
  deliver(delivery: InboxDelivery): { stored: boolean; unreadCount: number } {
    const result = this.transact(() => {
      const inserted = this.db
        .insert(inboxNotifications)
        .values({
          id: delivery.id,
          userId: delivery.userId,
          templateId: delivery.templateId,
          targets: delivery.targets,
          title: delivery.title,
          content: delivery.content,
          icon: delivery.icon.trim() === "" ? fallbackIcon(delivery.templateGroup) : delivery.icon,
          actions: delivery.actions,
          readAt: null,
          createdAt: delivery.createdAt,
        })
        .onConflictDoNothing()
        .returning()
        .get();
      if (!inserted) return { row: undefined, unreadCount: this.unreadCount() };
      return { row: inserted, unreadCount: this.addUnread(1) };
    });
    if (result.row) this.push(toInboxNotification(result.row), result.unreadCount);
    return { stored: result.row !== undefined, unreadCount: result.unreadCount };
  }

  /** The inbox list: newest first, keyset-paged on (created_at, id) so equal timestamps are never skipped or repeated. */
  list(filter: InboxFilter, startingBefore: string | undefined, limit: number): ListResult {
    const conditions: SQL[] = [];
    if (startingBefore !== undefined) {
      const cursor = this.db
        .select({ createdAt: inboxNotifications.createdAt, id: inboxNotifications.id })
        .from(inboxNotifications)
        .where(eq(inboxNotifications.id, startingBefore))
        .get();
      if (!cursor) return { ok: false, reason: "unknown_cursor" };
      const older = or(
        lt(inboxNotifications.createdAt, cursor.createdAt),
        and(eq(inboxNotifications.createdAt, cursor.createdAt), lt(inboxNotifications.id, cursor.id)),
      );
      if (older) conditions.push(older);
    }
    if (filter.readStatus === "read") conditions.push(isNotNull(inboxNotifications.readAt));
    if (filter.readStatus === "unread") conditions.push(isNull(inboxNotifications.readAt));
    if (filter.templates.length > 0) conditions.push(inArray(inboxNotifications.templateId, filter.templates));
    for (const target of filter.targets) {
      conditions.push(sql`EXISTS (SELECT 1 FROM json_each(${inboxNotifications.targets}) WHERE value = ${target})`);
    }
    const page = this.db
      .select()
      .from(inboxNotifications)
      .where(and(...conditions))
      .orderBy(desc(inboxNotifications.createdAt), desc(inboxNotifications.id))
      .limit(limit)
      .as("page");
    // SQLite writes the page as the interface's JSON itself: no row objects, no parse/stringify of targets and
    // actions, and one string crosses the RPC boundary instead of 25 structured-cloned objects.
    const json = this.db
      .select({
        json: sql<string>`coalesce(json_group_array(json_object(
          'id', ${page.id}, 'user_id', ${page.userId}, 'template_id', ${page.templateId}, 'targets', json(${page.targets}),
          'title', ${page.title}, 'content', ${page.content}, 'icon', ${page.icon}, 'actions', json(${page.actions}),
          'read_at', ${page.readAt}, 'created_at', ${page.createdAt}
        ) ORDER BY ${page.createdAt} DESC, ${page.id} DESC), '[]')`,
      })
      .from(page)
      .get();
    return { ok: true, notificationsJson: json?.json ?? "[]", unreadCount: this.unreadCount() };
  }

  /** Which of these ids are notifications in this inbox (`POST /authcheck` `resource_id` lookups). */
  existing(ids: string[]): string[] {
    return inSlices(ids).flatMap((slice) =>
      this.db
        .select({ id: inboxNotifications.id })
        .from(inboxNotifications)
        .where(inArray(inboxNotifications.id, slice))
        .all()
        .map((r) => r.id),
    );
  }

  /** mark-all-as-read: every unread notification becomes read now; already-read ones keep their `read_at`. */
  markAllRead(): { unreadCount: number } {
    const readAt = nowIso();
    const changed = this.transact(() => {
      // The maintained count is exactly the number of rows this update touches.
      const unread = this.unreadCount();
      this.db.update(inboxNotifications).set({ readAt }).where(isNull(inboxNotifications.readAt)).run();
      this.setUnread(0);
      return unread;
    });
    if (changed > 0) this.pushReadState({ all: true, read_at: readAt }, 0);
    return { unreadCount: 0 };
  }

  /** read-status: sets or clears `read_at`; null when the notification is not in this inbox. */
  setReadStatus(id: string, isRead: boolean): ReadStatusResult {
    const result = this.transact(() => {
      const row = this.db.select().from(inboxNotifications).where(eq(inboxNotifications.id, id)).get();
      if (!row) return null;
      const wasRead = row.readAt !== null;
      if (wasRead === isRead) return { row, unreadCount: this.unreadCount(), changed: false };
      const readAt = isRead ? nowIso() : null;
      const updated = this.db.update(inboxNotifications).set({ readAt }).where(eq(inboxNotifications.id, id)).returning().get();
      return { row: updated ?? row, unreadCount: this.addUnread(isRead ? -1 : 1), changed: true };
    });
    if (!result) return null;
    const notification = toInboxNotification(result.row);
    if (result.changed) this.pushReadState({ id, read_at: notification.read_at }, result.unreadCount);
    return { notification, unreadCount: result.unreadCount };
  }

  /** The watch: the Worker has authenticated the caller and validated the filters; this only accepts the socket. */
  override async fetch(request: Request): Promise<Response> {
    const header = request.headers.get(WATCH_HEADER);
    if (request.headers.get("Upgrade")?.toLowerCase() !== "websocket" || !header) {
      return new Response("Expected a WebSocket upgrade from the Herald Worker.", { status: 400 });
    }
    const { attachment, keyId, expiresAt, protocol } = JSON.parse(header) as {
      attachment: WatchAttachment;
      keyId: string;
      expiresAt: number;
      protocol: string | null;
    };
    const pair = new WebSocketPair();
    const [client, server] = Object.values(pair) as [WebSocket, WebSocket];
    // Hibernatable: the filters live in the attachment, so they survive the object being evicted.
    // Tagged with the credential's key id, so ending that session can close exactly its sockets.
    this.ctx.acceptWebSocket(server, [keyId]);
    server.serializeAttachment({ ...attachment, session: { keyId, expiresAt } } satisfies WatchAttachment);
    await this.scheduleSessionAlarm(expiresAt);
    const headers = protocol ? { "Sec-WebSocket-Protocol": protocol } : undefined;
    return new Response(null, { status: 101, webSocket: client, headers });
  }

  /**
   * Closes the watch sockets opened with a credential that no longer works (logout, key deleted, password reset,
   * suspension…), or every socket when no key is given. A socket must not outlive the session that opened it.
   */
  endWatches(keyIds?: string[]): number {
    const sockets = keyIds ? keyIds.flatMap((id) => this.ctx.getWebSockets(id)) : this.ctx.getWebSockets();
    for (const ws of sockets) {
      try {
        ws.close(CLOSE_SESSION_ENDED, InboxMessages.sessionEnded);
      } catch {
        // already closing
      }
    }
    return sockets.length;
  }

  /** The alarm fires when the earliest watched session is due to expire (sessions of later ones wait their turn). */
  private async scheduleSessionAlarm(expiresAt: number): Promise<void> {
    const current = await this.ctx.storage.getAlarm();
    if (current === null || expiresAt < current) await this.ctx.storage.setAlarm(expiresAt);
  }

  /**
   * Closes, with 4401, the sockets whose session has expired. A login session slides forward on use, so the expiry a
   * socket recorded is checked against D1 first: a session still alive keeps its socket and its new expiry. Then the
   * alarm is set for the next expiry among the remaining sockets.
   */
  override async alarm(): Promise<void> {
    const now = Date.now();
    const due = this.ctx.getWebSockets().flatMap((ws) => {
      const session = (ws.deserializeAttachment() as WatchAttachment | null)?.session;
      return session && session.expiresAt <= now ? [{ ws, session }] : [];
    });
    const keyIds = [...new Set(due.map((d) => d.session.keyId))];
    const db = database(this.env.DB);
    const rows = await Promise.all(inSlices(keyIds).map((slice) => db.select({ id: apiKeys.id, expiresAt: apiKeys.expiresAt }).from(apiKeys).where(inArray(apiKeys.id, slice))));
    const current = new Map(rows.flat().map((k) => [k.id, Date.parse(k.expiresAt)] as const));
    for (const { ws, session } of due) {
      const expiresAt = current.get(session.keyId);
      if (expiresAt !== undefined && expiresAt > now) {
        ws.serializeAttachment({ ...(ws.deserializeAttachment() as WatchAttachment), session: { ...session, expiresAt } });
        continue;
      }
      try {
        ws.close(CLOSE_SESSION_ENDED, InboxMessages.sessionExpired);
      } catch {
        // already closing
      }
    }
    const next = this.ctx
      .getWebSockets()
      .map((ws) => (ws.deserializeAttachment() as WatchAttachment | null)?.session?.expiresAt)
      .filter((t): t is number => t !== undefined && t > now);
    if (next.length > 0) await this.ctx.storage.setAlarm(Math.min(...next));
  }

  override webSocketMessage(): void {
    // The watch is one-way. Pings are answered by the auto-response without reaching here; anything else is ignored.
  }

  override webSocketClose(ws: WebSocket, code: number, reason: string): void {
    // Complete the closing handshake the client started.
    try {
      ws.close(code === 1005 ? 1000 : code, reason);
    } catch {
      // already closed
    }
  }

  private push(notification: InboxNotification, unreadCount: number): void {
    const rendered = new Map<string, string>();
    for (const ws of this.ctx.getWebSockets()) {
      const attachment = ws.deserializeAttachment() as WatchAttachment | null;
      if (!attachment || !matchesFilter(notification, attachment.filter)) continue;
      let frame = rendered.get(attachment.format);
      if (frame === undefined) {
        frame = watchFrame(notification, unreadCount, attachment.format);
        rendered.set(attachment.format, frame);
      }
      sendOrClose(ws, frame);
    }
  }

  private pushReadState(change: ReadStateChange, unreadCount: number): void {
    let frame: string | undefined;
    for (const ws of this.ctx.getWebSockets()) {
      const attachment = ws.deserializeAttachment() as WatchAttachment | null;
      if (!attachment?.syncReadState) continue;
      frame ??= readStateFrame(change, unreadCount);
      sendOrClose(ws, frame);
    }
  }
}
