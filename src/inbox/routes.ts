import { Hono, type Context, type TypedResponse } from "hono";
import type { InboxNotification } from "./model";
import { offeredProtocols, requireAuth, WATCH_PROTOCOL } from "../auth/session";
import { assertCan } from "../authz/guard";
import { badRequest, notFound, validationFailed } from "../http/errors";
import type { AppEnv } from "../http/types";
import { jsonBody, pathParams, queryParams } from "../http/validate";
import { listInboxQuery, notificationIdParam, readStatusBody, watchInboxQuery } from "./schemas";
import { WATCH_HEADER, type WatchAttachment } from "./watch";

/** N3's body (interface: ListInboxNotificationsResponse). */
export interface ListInboxResponse {
  notifications: InboxNotification[];
  unread_count: number;
}

/** The caller's own inbox object: every inbox route is one round trip to it after authentication. */
export function inboxOf(c: Context<AppEnv>, userId: string = c.var.auth.user.id) {
  return c.env.USER_INBOX.get(c.env.USER_INBOX.idFromName(userId));
}

function assertOwnInbox(c: Context<AppEnv>, action: "read" | "update") {
  assertCan(c, action, { type: "inbox_notification", ownerId: c.var.auth.user.id });
}

/** N3–N6 (SPEC §4). */
export const inboxRoutes = new Hono<AppEnv>()
  .get("/notifications/inbox/watch", requireAuth, queryParams(watchInboxQuery), async (c) => {
    const query = c.req.valid("query");
    if (c.req.header("Upgrade")?.toLowerCase() !== "websocket") {
      throw badRequest("This endpoint only serves WebSocket connections.", {
        detail: "Send a WebSocket upgrade request (Upgrade: websocket).",
      });
    }
    const offered = offeredProtocols(c);
    if (offered.length > 0 && !offered.includes(WATCH_PROTOCOL)) {
      throw badRequest("Unsupported WebSocket subprotocol.", { detail: `Offer the "${WATCH_PROTOCOL}" subprotocol.` });
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
  })
  .get("/notifications/inbox", requireAuth, queryParams(listInboxQuery), async (c) => {
    const query = c.req.valid("query");
    assertOwnInbox(c, "read");
    const result = await inboxOf(c).list(
      { targets: query.targets, templates: query.templates, readStatus: query.read_status },
      query.starting_before,
      query.limit,
    );
    if (!result.ok) {
      throw validationFailed([{ field: "starting_before", detail: "No notification of yours has this id." }]);
    }
    // The object hands back the page already serialised (see UserInbox.list).
    const body = `{"notifications":${result.notificationsJson},"unread_count":${result.unreadCount}}`;
    // Typed as the JSON it is, so the typed client still knows the shape.
    return c.body(body, 200, { "Content-Type": "application/json" }) as unknown as TypedResponse<ListInboxResponse, 200, "json">;
  })
  .put("/notifications/inbox/mark-all-as-read", requireAuth, async (c) => {
    assertOwnInbox(c, "update");
    await inboxOf(c).markAllRead();
    return c.body(null, 204);
  })
  .put(
    "/notifications/inbox/:id/read-status",
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
          message: is_read ? "Notification marked as read." : "Notification marked as unread.",
          notification: result.notification,
          unread_count: result.unreadCount,
        },
        200,
      );
    },
  );
