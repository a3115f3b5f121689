import { Hono, type Context, type TypedResponse } from "hono";
import type { InboxNotification } from "./model";
import { offeredProtocols, requireAuth, WATCH_PROTOCOL } from "../auth/session";
import { assertCan } from "../authz/guard";
import { badRequest, Messages, notFound, validationFailed } from "../http/errors";
import type { AppEnv } from "../http/types";
import { jsonBody, pathParams, queryParams } from "../http/validate";
import { describeRoute, NO_BODY } from "../openapi/describe";
import { InboxWatchFrame, ListInboxNotificationsResponse, UpdateInboxNotificationReadStatusResponse } from "../openapi/responses";
import { InboxMessages } from "./messages";
import { listInboxQuery, notificationIdParam, readStatusBody, watchInboxQuery } from "./schemas";
import { WATCH_HEADER, type WatchAttachment } from "./watch";

/** The inbox list's body (ListInboxNotificationsResponse in the OpenAPI document). */
interface ListInboxResponse {
  notifications: InboxNotification[];
  unread_count: number;
}

/** The caller's own inbox object: every inbox route is one round trip to it after authentication. */
function inboxOf(c: Context<AppEnv>, userId: string = c.var.auth.user.id) {
  return c.env.USER_INBOX.get(c.env.USER_INBOX.idFromName(userId));
}

function assertOwnInbox(c: Context<AppEnv>, action: "read" | "update") {
  assertCan(c, action, { type: "inbox_notification", ownerId: c.var.auth.user.id });
}

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
        "A WebSocket upgrade (`Upgrade: websocket`); the query is checked before the upgrade. Answers **101 Switching Protocols**; each newly delivered notification that matches the filters is then sent as one text frame holding a `GetInboxNotificationResponse` (title and content rendered per `format`); with `sync_read_state=true`, read-state changes arrive as `InboxReadStateFrame`s. Browsers may authenticate by offering the subprotocols `herald.v1` and `herald.token.<token>` (only `herald.v1` is echoed) or by cookie from an allowed Origin. Close codes: 4008 the client fell behind (reconnect and list the inbox), 4401 the session ended (do not reconnect with the same token).",
      tags: ["Inbox"],
      access: "anyone",
      paramDocs: {
        ...FILTER_DOCS,
        format: "Rendering of title and content: `markdown` (default) or `plaintext`.",
        sync_read_state: "`true` to also receive read-state changes.",
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
        400: "Not a WebSocket upgrade, or subprotocols offered without `herald.v1`.",
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
        syncReadState: query.sync_read_state,
      };
      const headers = new Headers({ Upgrade: "websocket" });
      headers.set(
        WATCH_HEADER,
        JSON.stringify({
          attachment,
          keyId: c.var.auth.key.id,
          expiresAt: Date.parse(c.var.auth.key.expiresAt),
          protocol: offered.length > 0 ? WATCH_PROTOCOL : null,
        }),
      );
      return inboxOf(c).fetch(new Request(c.req.url, { headers }));
    },
  )
  .get(
    "/notifications/inbox",
    describeRoute({
      operationId: "listInboxNotifications",
      summary: "List the caller's inbox, newest first",
      tags: ["Inbox"],
      access: "anyone",
      paramDocs: {
        ...FILTER_DOCS,
        starting_before: "Id of the last notification of the current page: returns strictly older ones.",
        limit: "Page size, 1–100 (default 25).",
      },
      responses: [{ status: 200, description: "One page and the caller's total unread count.", schema: ListInboxNotificationsResponse }],
      errors: { 400: "`starting_before` is not one of the caller's notifications." },
    }),
    requireAuth,
    queryParams(listInboxQuery),
    async (c) => {
      const query = c.req.valid("query");
      assertOwnInbox(c, "read");
      const result = await inboxOf(c).list(
        { targets: query.targets, templates: query.templates, readStatus: query.read_status },
        query.starting_before,
        query.limit,
      );
      if (!result.ok) {
        throw validationFailed([{ field: "starting_before", detail: InboxMessages.unknownStartingBefore }]);
      }
      // The object hands back the page already serialised (see UserInbox.list).
      const body = `{"notifications":${result.notificationsJson},"unread_count":${result.unreadCount}}`;
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
      responses: [{ status: 204, description: NO_BODY }],
    }),
    requireAuth,
    async (c) => {
      assertOwnInbox(c, "update");
      await inboxOf(c).markAllRead();
      return c.body(null, 204);
    },
  )
  .put(
    "/notifications/inbox/:id/read-status",
    describeRoute({
      operationId: "updateInboxNotificationReadStatus",
      summary: "Mark one notification read or unread",
      tags: ["Inbox"],
      access: "anyone",
      paramDocs: { id: "Id of the notification." },
      responses: [{ status: 200, description: "The updated notification.", schema: UpdateInboxNotificationReadStatusResponse }],
      errors: { 404: `Not one of the caller's notifications: \`${Messages.notFoundOrNoAccess}\`.` },
    }),
    requireAuth,
    pathParams(notificationIdParam),
    jsonBody(readStatusBody),
    async (c) => {
      const { id } = c.req.valid("param");
      const { is_read } = c.req.valid("json");
      assertOwnInbox(c, "update");
      const result = await inboxOf(c).setReadStatus(id, is_read);
      if (!result) throw notFound();
      return c.json(
        {
          message: is_read ? InboxMessages.markedRead : InboxMessages.markedUnread,
          notification: result.notification,
          unread_count: result.unreadCount,
        },
        200,
      );
    },
  );
