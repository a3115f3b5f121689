import { DurableObject } from "cloudflare:workers";
import { drizzle } from "drizzle-orm/durable-sqlite";
import { migrate } from "drizzle-orm/durable-sqlite/migrator";
import migrations from "../../drizzle/inbox/migrations.js";
import { currentExpiries } from "../auth/keys";
import { database } from "../db/client";
import type { Env } from "../env";
import { nowIso } from "../lib/crypto";
import { handOffDigest } from "../schedule/digest";
import { type AlarmDuty, SharedAlarm } from "./alarm";
import { WatchConnections } from "./connections";
import { InboxCounters } from "./counters";
import { type DigestFate, type DigestHold, InboxDigests } from "./digests";
import { decideEmail } from "./email-decisions";
import { type ExportPage, exportPage, type InboxSectionKey } from "./export";
import { InboxMessages } from "./messages";
import type { InboxDelivery, InboxLimits, InboxNotification, ListFilter } from "./model";
import { toInboxNotification } from "./model";
import { InboxRetention } from "./retention";
import * as schema from "./schema";
import type { BulkAction, InboxAction } from "./states";
import type { InboxStorage } from "./storage";
import { type BulkSelection, type InboxCounts, InboxStore, type ListResult } from "./store";
import { AFTER_SEQ_AHEAD, WATCH_HEADER, type WatchRequest } from "./watch";

export type { BulkSelection, InboxCounts, ListResult };

export type ItemResult = { notification: InboxNotification; unreadCount: number } | null;

/**
 * One object per user (`idFromName(userId)`): that user's inbox. The object is the shell that ties its parts
 * together, each in a file of its own:
 * - the data (src/inbox/store.ts): rows, counters and numbered events, changed in transactions that commit together;
 * - the watch sockets (src/inbox/connections.ts): accepted with hibernation, replayed to, pushed to, closed;
 * - the alarm (src/inbox/alarm.ts), shared by its duties: waking snoozed items, closing sockets whose session ended,
 *   removing what retention lets go (src/inbox/retention.ts), ending digest windows (src/inbox/digests.ts);
 * - the user's export and erasure (src/inbox/export.ts, `erase` below; docs/privacy.md).
 * Every method runs on the object's single thread with synchronous SQLite, so a change and the frames it pushes can
 * never interleave with another request (docs/inbox.md).
 */
export class UserInbox extends DurableObject<Env> {
  private readonly storage: InboxStorage;
  private readonly store: InboxStore;
  private readonly sockets: WatchConnections;
  private readonly retention: InboxRetention;
  private readonly alarms: SharedAlarm;
  private readonly digests: InboxDigests;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.storage = { db: drizzle(ctx.storage, { schema }), sql: ctx.storage.sql, storage: ctx.storage };
    this.store = new InboxStore(this.storage, new InboxCounters(this.storage));
    this.sockets = new WatchConnections(ctx);
    this.retention = new InboxRetention(this.storage, this.store);
    this.digests = new InboxDigests(this.storage);
    this.alarms = new SharedAlarm(ctx.storage, [this.snoozeWakes, this.sessionExpiries, this.retentionSweeps, this.digestWindows]);
    void ctx.blockConcurrencyWhile(async () => {
      await migrate(this.storage.db, migrations);
    });
    // Answered by the runtime itself: idle watchers keep their connection alive without waking the object.
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair("ping", "pong"));
  }

  /** Snoozed items wake when their time comes: unread again, pushed as new notifications. */
  private readonly snoozeWakes: AlarmDuty = {
    nextDue: () => this.store.nextWake(),
    run: (now) => {
      this.wakeDue(now);
    },
  };

  /**
   * A socket closes, with 4401, when the session that opened it expires. A login session slides forward on use, so
   * the expiry a socket recorded is checked against D1 first: a session still alive keeps its socket and its new expiry.
   */
  private readonly sessionExpiries: AlarmDuty = {
    nextDue: (now) => {
      const expiries = this.sockets.expiries(now);
      return expiries.length > 0 ? Math.min(...expiries) : undefined;
    },
    run: async (now) => {
      const due = this.sockets.expired(now);
      if (due.length === 0) return;
      const current = await currentExpiries(database(this.env.DB), [...new Set(due.map((d) => d.session.keyId))]);
      for (const socket of due) {
        const expiresAt = current.get(socket.session.keyId);
        if (expiresAt !== undefined && expiresAt > now) this.sockets.extend(socket, expiresAt);
        else this.sockets.closeExpired(socket);
      }
    },
  };

  /**
   * Read and archived items give way to retention (docs/inbox.md, "Retention"): past INBOX_RETENTION, or the oldest
   * beyond INBOX_MAX_ITEMS, a page per run. Removals are events like any change, pushed to synced watchers.
   */
  private readonly retentionSweeps: AlarmDuty = {
    nextDue: (now) => this.retention.nextDue(now),
    run: (now) => {
      this.sockets.push(this.retention.sweepDue(now));
    },
  };

  /**
   * Digest windows end (docs/schedule.md, "Digests"): each is decided once, in a transaction, then handed to the
   * message log; a hand-off that fails is tried again HAND_OFF_RETRY_MS later, never decided again.
   */
  private readonly digestWindows: AlarmDuty = {
    nextDue: () => this.digests.nextDue(),
    run: async (now) => {
      await this.endDigests(now);
    },
  };

  /**
   * Stores a notification and pushes it to matching watchers. Idempotent on the message id: a redelivery finds the
   * row, stores nothing and pushes nothing. `limits` are the deployment's INBOX_MAX_ITEMS and INBOX_RETENTION, which
   * the object keeps for its alarm; a delivery that takes the inbox past the cap schedules a sweep at once.
   */
  async deliver(delivery: InboxDelivery, limits: InboxLimits): Promise<{ stored: boolean; unreadCount: number }> {
    const sequenced = this.store.deliver(delivery);
    this.sockets.push(sequenced);
    const unreadCount = this.store.counters.get("unread");
    // New limits may move a sweep (only if something may go at all); an item past the cap makes one due at once.
    const newLimits = this.retention.follow(limits);
    if ((newLimits && this.retention.removable() > 0) || (sequenced.length > 0 && this.retention.overCap(limits))) {
      await this.alarms.rearm(Date.now());
    }
    return { stored: sequenced.length > 0, unreadCount };
  }

  /** Read-aware e-mail: whether the e-mail copy of notification `id` goes out now (src/inbox/email-decisions.ts). */
  emailDecision(id: string): { send: boolean } {
    return decideEmail(this.storage, this.store, id);
  }

  /**
   * Holds an e-mail copy for the user's digest (docs/schedule.md, "Digests"): into the open window, or a new one ending
   * at `endsAt` (the Worker computed it from the schedule). Answers the window, whose end the alarm now covers.
   */
  async holdForDigest(entry: DigestHold, endsAt: number, recipient: Record<string, string>): Promise<{ digestId: string; endsAt: number }> {
    const held = this.digests.hold(entry, endsAt, recipient);
    await this.alarms.rearm(Date.now());
    return held;
  }

  /** What became of a held copy whose own send was re-driven (src/inbox/digests.ts, `release`). */
  digestFate(notificationId: string): DigestFate {
    return this.digests.release(notificationId);
  }

  /**
   * Ends every digest window due at `now` and hands each decision to the message log, as the alarm does; given `now`,
   * a test controls the clock. Returns the ids each hand-off put on the queue.
   */
  async endDigests(now: number): Promise<string[][]> {
    const handed: string[][] = [];
    for (const window of this.digests.closeDue(now)) {
      try {
        handed.push(await handOffDigest(this.env, window, now));
        this.digests.handedOff(window.id, now);
      } catch (error) {
        console.error(`[herald] digest ${window.id} could not be handed off: ${error instanceof Error ? error.name : "error"}`);
        this.digests.handOffFailed(window.id, now);
      }
    }
    return handed;
  }

  list(filter: ListFilter, startingBefore: string | undefined, limit: number): ListResult {
    return this.store.list(filter, startingBefore, limit);
  }

  counts(): InboxCounts {
    return this.store.counts();
  }

  /** Which of these ids are notifications in this inbox (`POST /authcheck` `resource_id` lookups). */
  existing(ids: string[]): string[] {
    return this.store.existing(ids);
  }

  /** read-status: sets or clears `read_at` (marking an archived item unread brings it back: archived means read). */
  setReadStatus(id: string, isRead: boolean): Promise<ItemResult> {
    return this.changeOne(id, { kind: isRead ? "read" : "unread" });
  }

  setArchived(id: string, archived: boolean): Promise<ItemResult> {
    return this.changeOne(id, { kind: archived ? "archive" : "unarchive" });
  }

  /** Snoozes until `until` (an ISO timestamp the Worker checked), or, with null, wakes the item now. */
  snooze(id: string, until: string | null): Promise<ItemResult> {
    return this.changeOne(id, until === null ? { kind: "wake" } : { kind: "snooze", until });
  }

  private async changeOne(id: string, action: InboxAction): Promise<ItemResult> {
    const removable = this.retention.removable();
    const result = this.store.changeOne(id, action, nowIso());
    if (!result) return null;
    this.sockets.push(result.sequenced);
    const answer = { notification: toInboxNotification(result.row), unreadCount: this.store.counters.get("unread") };
    await this.followChange(result.snoozesMoved, removable);
    return answer;
  }

  /** mark-all-as-read: every unread notification becomes read now (docs/inbox.md, "Item states"). */
  async markAllRead(): Promise<{ unreadCount: number }> {
    const removable = this.retention.removable();
    this.sockets.push(this.store.markAllRead(nowIso()));
    await this.followChange(false, removable);
    return { unreadCount: 0 };
  }

  /** A bulk action in one transaction: every selected item that the action changes, or none. */
  async bulk(action: BulkAction, selection: BulkSelection): Promise<{ updated: number; unreadCount: number }> {
    const removable = this.retention.removable();
    const result = this.store.bulk(action, selection, nowIso());
    this.sockets.push(result.sequenced);
    const answer = { updated: result.updated, unreadCount: this.store.counters.get("unread") };
    await this.followChange(result.snoozesMoved, removable);
    return answer;
  }

  /**
   * The alarm follows a change that moved a snooze, or that let more items give way to retention (read or archived:
   * one may be old enough already, or the inbox over its cap). `removable` is how many could before the change.
   */
  private async followChange(snoozesMoved: boolean, removable: number): Promise<void> {
    if (snoozesMoved || this.retention.removable() > removable) await this.alarms.rearm(Date.now());
  }

  /**
   * One retention sweep at `now` under `limits`, as the alarm runs it under the kept ones (docs/inbox.md, "Retention"):
   * how many items it removed and whether it filled its page. Given both, a test controls the clock and the limits.
   */
  sweep(now: number, limits: InboxLimits): { removed: number; more: boolean } {
    const swept = this.retention.sweep(now, limits);
    this.sockets.push(swept.sequenced);
    return { removed: swept.removed, more: swept.more };
  }

  /** One page of a section of the user's export, after the rowid `after` (docs/privacy.md, "The export"). */
  exportPage(key: InboxSectionKey, after: number): ExportPage {
    return exportPage(this.storage, key, after);
  }

  /**
   * The user's erasure (docs/privacy.md, "Erasure"): every watch socket closed, the alarm deleted, every row the object
   * stores deleted (`deleteAll`) and what memory kept of them forgotten. The empty schema is then laid down again, so a
   * late caller (a delivery that was already on its way) finds an empty inbox rather than missing tables; the erasure's
   * last step erases again once nothing can still be on its way. Running it twice is the same as once.
   */
  async erase(): Promise<void> {
    this.sockets.end();
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
    this.store.forget();
    await migrate(this.storage.db, migrations);
  }

  /** Wakes every item whose snooze is due at `now` (epoch ms); returns how many woke. */
  wakeDue(now: number): number {
    const sequenced = this.store.wakeDue(nowIso(now));
    this.sockets.push(sequenced);
    return sequenced.length;
  }

  /**
   * The watch: the Worker has authenticated the caller and validated the query; this accepts the socket and, with
   * `after_seq`, first replays every event after it that the socket would have received live.
   */
  override async fetch(request: Request): Promise<Response> {
    const header = request.headers.get(WATCH_HEADER);
    if (request.headers.get("Upgrade")?.toLowerCase() !== "websocket" || !header) {
      return new Response("Expected a WebSocket upgrade from the Herald Worker.", { status: 400 });
    }
    const watch = JSON.parse(header) as WatchRequest;
    const seq = this.store.counters.get("seq");
    if (watch.afterSeq !== undefined && watch.afterSeq > seq) return new Response(InboxMessages.afterSeqAhead(seq), { status: AFTER_SEQ_AHEAD });
    // The alarm first, counting the new socket's session: once accepted, the socket is closed when it expires.
    await this.alarms.rearm(Date.now(), [watch.expiresAt]);
    return this.sockets.accept(watch, this.store.events);
  }

  /** Closes the watch sockets of these credentials, or every socket (src/inbox/revoke.ts). */
  endWatches(keyIds?: string[]): number {
    return this.sockets.end(keyIds);
  }

  override async alarm(): Promise<void> {
    await this.alarms.fire(Date.now());
  }

  override webSocketMessage(): void {
    // The watch is one-way. Pings are answered by the auto-response without reaching here; anything else is ignored.
  }

  override webSocketClose(ws: WebSocket, code: number, reason: string): void {
    this.sockets.closed(ws, code, reason);
  }
}
