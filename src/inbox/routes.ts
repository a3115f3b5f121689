import { type Context, Hono, type TypedResponse } from "hono";
import type * as z from "zod";
import { offeredProtocols, requireAuth, WATCH_PROTOCOL } from "../auth/session";
import { assertCan } from "../authz/guard";
import { badRequest, Messages, notFound, validationFailed } from "../http/errors";
import type { AppEnv } from "../http/types";
import { jsonBody, pathParams, queryParams } from "../http/validate";
import { describeRoute, NO_BODY, type RouteDoc } from "../openapi/describe";
import { userInbox } from "./address";
import { InboxMessages } from "./messages";
import type { InboxNotification } from "./model";
import {
  archiveStatusBody,
  BulkInboxActionResponse,
  bulkBody,
  InboxCountsResponse,
  InboxWatchFrame,
  ListInboxNotificationsResponse,
  listInboxQuery,
  notificationIdParam,
  readStatusBody,
  SNOOZE_MAX_MS,
  SNOOZE_MIN_MS,
  snoozeBody,
  UpdateInboxNotificationReadStatusResponse,
  watchInboxQuery,
} from "./schemas";
import type { ItemResult } from "./user-inbox";
import { AFTER_SEQ_AHEAD, inFormat, WATCH_HEADER, type WatchAttachment, type WatchRequest } from "./watch";

/** The inbox list's body, as documented. */
type ListInboxResponse = z.infer<typeof ListInboxNotificationsResponse>;

/** The caller's own inbox object: every inbox route is one round trip to it after authentication. */
function inboxOf(c: Context<AppEnv>, userId: string = c.get("auth").user.id) {
  return userInbox(c.env, userId);
}

function assertOwnInbox(c: Context<AppEnv>, action: "read" | "update") {
  assertCan(c, action, { type: "inbox_notification", ownerId: c.get("auth").user.id });
}

const NOT_YOURS = `Not one of the caller's notifications: \`${Messages.notFoundOrNoAccess}\`.`;

/** What every one-item change (read, archive, snooze) documents alike: its path parameter and its answer. */
const ONE_ITEM = {
  tags: ["Inbox"],
  access: "anyone",
  scope: "inbox_notification:update",
  paramDocs: { id: "Id of the notification." },
  responses: [{ status: 200, description: "The updated notification.", schema: UpdateInboxNotificationReadStatusResponse }],
} satisfies Pick<RouteDoc, "tags" | "access" | "scope" | "paramDocs" | "responses">;

const FILTER_DOCS = {
  targets: "Comma-separated target UUIDs; a notification must carry every one (at most 16).",
  templates: "Comma-separated template UUIDs; a notification's template must be any one (at most 16).",
  read_status: "`all` (default), `read` or `unread`.",
} as const;

/** The caller's inbox: list, watch, read state (docs/api.md, Notifications and Watching the inbox). */
export const inboxRoutes = new Hono<AppEnv>()
  .get(
    "/notifications/inbox/watch",
    describeRoute({
      operationId: "watchInboxNotifications",
      summary: "Watch the caller's inbox over a WebSocket",
      description:
        "A WebSocket upgrade (`Upgrade: websocket`); the query is checked before the upgrade. Answers **101 Switching Protocols**; each newly delivered (or woken) notification that matches the filters is then sent as one text frame, an `InboxNotificationFrame` (title and content rendered per `format`); with `sync=true`, every other change arrives as an `InboxChangeFrame`. Every frame carries the inbox's `seq`; with `after_seq=N`, every event after N that the socket would have received live is sent first, in order, then the live ones. Browsers may authenticate by offering the subprotocols `herald.v1` and `herald.token.<token>` (only `herald.v1` is echoed) or by cookie from an allowed Origin. Close codes: 4008 the client fell behind (reconnect with `after_seq`), 4401 the session ended (do not reconnect with the same token), 4409 `after_seq` is older than the events kept (list the inbox, then resume from its `seq`), 4429 the user holds more than `WATCH_MAX_PER_USER` watches and this was the oldest (do not reconnect on your own).",
      tags: ["Inbox"],
      access: "anyone",
      scope: "inbox_notification:read",
      paramDocs: {
        ...FILTER_DOCS,
        format: "Rendering of title and content: `markdown` (default) or `plaintext`.",
        sync: "`true` to also receive a change frame for every other change (read, archive, snooze…), whatever the filters.",
        sync_read_state: "The first name of `sync`, still accepted.",
        after_seq: "Resume: replay every event after this `seq` first (from a frame, the list or the counts).",
      },
      responses: [
        {
          status: 101,
          description:
            "Switching Protocols: the socket is open. The schema is not an HTTP body but that of each text frame sent on the socket afterwards.",
          schema: InboxWatchFrame,
          headers: { "Sec-WebSocket-Protocol": { description: "`herald.v1` when subprotocols were offered.", schema: { type: "string" } } },
        },
      ],
      errors: {
        400: "Not a WebSocket upgrade, subprotocols offered without `herald.v1`, or `after_seq` beyond the inbox's `seq`.",
        403: "Authenticated by cookie without an allowed `Origin`.",
      },
    }),
    requireAuth,
    queryParams(watchInboxQuery),
    async (c) => {
      const query = c.req.valid("query");
      if (c.req.header("Upgrade")?.toLowerCase() !== "websocket") {
        throw badRequest(InboxMessages.websocketOnly, { detail: InboxMessages.websocketOnlyDetail });
      }
      const offered = offeredProtocols(c);
      if (offered.length > 0 && !offered.includes(WATCH_PROTOCOL)) {
        throw badRequest(InboxMessages.unsupportedSubprotocol, { detail: InboxMessages.unsupportedSubprotocolDetail(WATCH_PROTOCOL) });
      }
      assertOwnInbox(c, "read");
      const attachment: WatchAttachment = {
        filter: { targets: query.targets, templates: query.templates, readStatus: query.read_status },
        format: query.format,
        sync: query.sync || query.sync_read_state,
      };
      const watch: WatchRequest = {
        attachment,
        keyId: c.get("auth").key.id,
        expiresAt: Date.parse(c.get("auth").key.expiresAt),
        protocol: offered.length > 0 ? WATCH_PROTOCOL : null,
        ...(query.after_seq === undefined ? {} : { afterSeq: query.after_seq }),
        maxSockets: c.get("config").WATCH_MAX_PER_USER,
      };
      const res = await inboxOf(c).fetch(new Request(c.req.url, { headers: { Upgrade: "websocket", [WATCH_HEADER]: JSON.stringify(watch) } }));
      // Only the object knows the current seq: it refuses an `after_seq` beyond it before upgrading.
      if (res.status === AFTER_SEQ_AHEAD) throw validationFailed([{ field: "after_seq", detail: await res.text() }]);
      return res;
    },
  )
  .get(
    "/notifications/inbox",
    describeRoute({
      operationId: "listInboxNotifications",
      summary: "List the caller's inbox, newest first",
      tags: ["Inbox"],
      access: "anyone",
      scope: "inbox_notification:read",
      paramDocs: {
        ...FILTER_DOCS,
        archived: "`exclude` (default), `include` or `only` archived notifications.",
        snoozed: "`exclude` (default), `include` or `only` snoozed notifications.",
        starting_before: "Id of the last notification of the current page: returns strictly older ones.",
        limit: "Page size, 1–100 (default 25).",
        format: "Rendering of title and content: `markdown` (default) or `plaintext`, as the watch renders them.",
      },
      responses: [
        {
          status: 200,
          description: "One page, the caller's total unread count, and the inbox's `seq` (watch with `after_seq` from it: nothing is missed).",
          schema: ListInboxNotificationsResponse,
        },
      ],
      errors: { 400: "`starting_before` is not one of the caller's notifications." },
    }),
    requireAuth,
    queryParams(listInboxQuery),
    async (c) => {
      const query = c.req.valid("query");
      assertOwnInbox(c, "read");
      const result = await inboxOf(c).list(
        { targets: query.targets, templates: query.templates, readStatus: query.read_status, archived: query.archived, snoozed: query.snoozed },
        query.starting_before,
        query.limit,
      );
      if (!result.ok) {
        throw validationFailed([{ field: "starting_before", detail: InboxMessages.unknownStartingBefore }]);
      }
      // The object hands back the page already serialised (see UserInbox.list); plain text is the rarer ask.
      const notifications =
        query.format === "plaintext"
          ? JSON.stringify((JSON.parse(result.notificationsJson) as InboxNotification[]).map((n) => inFormat(n, "plaintext")))
          : result.notificationsJson;
      const body = `{"notifications":${notifications},"unread_count":${result.unreadCount},"seq":${result.seq}}`;
      // Typed as the JSON it is, so the typed client still knows the shape.
      return c.body(body, 200, { "Content-Type": "application/json" }) as unknown as TypedResponse<ListInboxResponse, 200, "json">;
    },
  )
  .put(
    "/notifications/inbox/mark-all-as-read",
    describeRoute({
      operationId: "markAllInboxNotificationsAsRead",
      summary: "Mark every unread notification of the caller read",
      tags: ["Inbox"],
      access: "anyone",
      scope: "inbox_notification:update",
      responses: [{ status: 204, description: NO_BODY }],
    }),
    requireAuth,
    async (c) => {
      assertOwnInbox(c, "update");
      await inboxOf(c).markAllRead();
      return c.body(null, 204);
    },
  )
  .get(
    "/notifications/inbox/counts",
    describeRoute({
      operationId: "countInboxNotifications",
      summary: "Count the caller's inbox: unread, archived, snoozed, total, by template",
      description: "Exact counts, kept in the same transaction as every change, and the `seq` they are true at.",
      tags: ["Inbox"],
      access: "anyone",
      scope: "inbox_notification:read",
      responses: [{ status: 200, description: "The counts.", schema: InboxCountsResponse }],
    }),
    requireAuth,
    async (c) => {
      assertOwnInbox(c, "read");
      return c.json(await inboxOf(c).counts(), 200);
    },
  )
  .post(
    "/notifications/inbox/bulk",
    describeRoute({
      operationId: "bulkUpdateInboxNotifications",
      summary: "Read, unread, archive or unarchive many notifications at once",
      description:
        "One transaction: every selected notification the action changes, or none. Ids that are not the caller's are ignored (neither counted nor revealed); a `filter` selects what the list would show for it.",
      tags: ["Inbox"],
      access: "anyone",
      scope: "inbox_notification:update",
      responses: [{ status: 200, description: "How many notifications changed, and the unread count after.", schema: BulkInboxActionResponse }],
    }),
    requireAuth,
    jsonBody(bulkBody),
    async (c) => {
      const body = c.req.valid("json");
      assertOwnInbox(c, "update");
      const { filter } = body;
      const selection = filter
        ? {
            filter: {
              targets: filter.targets ?? [],
              templates: filter.templates ?? [],
              readStatus: filter.read_status ?? "all",
              archived: filter.archived ?? "exclude",
              snoozed: "exclude" as const,
            },
          }
        : { ids: body.ids ?? [] };
      const result = await inboxOf(c).bulk(body.action, selection);
      return c.json({ updated: result.updated, unread_count: result.unreadCount }, 200);
    },
  )
  .put(
    "/notifications/inbox/:id/read-status",
    describeRoute({
      operationId: "updateInboxNotificationReadStatus",
      summary: "Mark one notification read or unread",
      description: "Marking an archived notification unread also unarchives it: archived notifications are read.",
      ...ONE_ITEM,
      errors: { 404: NOT_YOURS },
    }),
    requireAuth,
    pathParams(notificationIdParam),
    jsonBody(readStatusBody),
    async (c) => {
      const { id } = c.req.valid("param");
      const { is_read } = c.req.valid("json");
      assertOwnInbox(c, "update");
      return itemAnswer(c, await inboxOf(c).setReadStatus(id, is_read), is_read ? InboxMessages.markedRead : InboxMessages.markedUnread);
    },
  )
  .put(
    "/notifications/inbox/:id/archive-status",
    describeRoute({
      operationId: "updateInboxNotificationArchiveStatus",
      summary: "Archive or unarchive one notification",
      description: "Archiving marks the notification read if it was unread and ends a snooze; unarchiving leaves `read_at` as it is.",
      ...ONE_ITEM,
      errors: { 404: NOT_YOURS },
    }),
    requireAuth,
    pathParams(notificationIdParam),
    jsonBody(archiveStatusBody),
    async (c) => {
      const { id } = c.req.valid("param");
      const { is_archived } = c.req.valid("json");
      assertOwnInbox(c, "update");
      return itemAnswer(c, await inboxOf(c).setArchived(id, is_archived), is_archived ? InboxMessages.archived : InboxMessages.unarchived);
    },
  )
  .put(
    "/notifications/inbox/:id/snooze",
    describeRoute({
      operationId: "snoozeInboxNotification",
      summary: "Snooze one notification until a time, or wake it now",
      description:
        "A snoozed notification is left out of the list by default and is not unread. When the time comes (from the inbox's own alarm), or with `until: null`, it wakes: unread again, and pushed to watchers as a new notification. Snoozing an archived notification unarchives it.",
      ...ONE_ITEM,
      errors: { 400: "`until` is less than a minute or more than 366 days ahead.", 404: NOT_YOURS },
    }),
    requireAuth,
    pathParams(notificationIdParam),
    jsonBody(snoozeBody),
    async (c) => {
      const { id } = c.req.valid("param");
      const { until } = c.req.valid("json");
      assertOwnInbox(c, "update");
      const at = until === null ? null : Date.parse(until);
      if (at !== null) {
        const ahead = at - Date.now();
        if (ahead < SNOOZE_MIN_MS || ahead > SNOOZE_MAX_MS) {
          throw validationFailed([{ field: "until", detail: InboxMessages.snoozeRange }]);
        }
      }
      const result = await inboxOf(c).snooze(id, at === null ? null : new Date(at).toISOString());
      return itemAnswer(c, result, until === null ? InboxMessages.unsnoozed : InboxMessages.snoozed);
    },
  );

/** The answer of every one-item change (read, archive, snooze): the interface's Response shape and the item. */
function itemAnswer(c: Context<AppEnv>, result: ItemResult, message: string) {
  if (!result) throw notFound();
  return c.json({ message, notification: result.notification, unread_count: result.unreadCount }, 200);
}
