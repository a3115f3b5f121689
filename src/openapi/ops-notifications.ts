import { z } from "zod";
import { listInboxQuery, notificationIdParam, readStatusBody, watchInboxQuery } from "../inbox/schemas";
import { customNotificationBody, messagesQuery, preferencesBody, settingsBody } from "../notifications/schemas";
import { named } from "./registry";
import {
  ListInboxNotificationsResponse,
  ListNotificationMessagesResponse,
  NotificationMethodsResponse,
  NotificationPreference,
  NotificationTemplate,
  UpdateInboxNotificationReadStatusResponse,
} from "./responses";
import { AUTH, AUTH_WRITE, BODY, errors, JSON_NO_BODY, QUERY, USER_404, userPath, type Errors, type Operation } from "./table";

named("CustomNotificationRequest", customNotificationBody);
named("NotificationsSettings", settingsBody, "`notifier_paused` is true when the notifier is paused.");
named("UpdateUserNotificationPreferences", preferencesBody, "`true` disables the template for the user.");
named("UpdateInboxNotificationReadStatusRequest", readStatusBody);

const FILTER_DOCS = {
  targets: "Comma-separated target UUIDs; a notification must carry every one (at most 16).",
  templates: "Comma-separated template UUIDs; a notification's template must be any one (at most 16).",
  read_status: "`all` (default), `read` or `unread`.",
} as const;

const INBOX_403: Errors = { 403: "The credential's scopes do not allow this on the caller's inbox." };

function templates(kind: "custom" | "system", operationId: string, id: string): Operation {
  return {
    method: "get",
    path: `/api/v2/notifications/templates/${kind}`,
    operationId,
    summary: `List ${kind} notification templates, by name (${id})`,
    tags: ["Notifications"],
    auth: "session",
    responses: [{ status: 200, description: "The templates.", schema: z.array(NotificationTemplate) }],
    errors: errors(AUTH, { 403: "The caller may not read notification templates." }, { 500: `Retrieving the ${kind} notification templates failed.` }),
  };
}

function preferences(method: "get" | "put"): Operation {
  const put = method === "put";
  return {
    method,
    path: "/api/v2/users/{user}/notifications/preferences",
    operationId: put ? "updateUserNotificationPreferences" : "getUserNotificationPreferences",
    summary: put ? "Update a user's template preferences (N13)" : "Get a user's template preferences (N12)",
    ...(put
      ? {
          description:
            "Upserts only the given entries. Keys must be ids of existing templates; mandatory templates cannot be disabled. Every bad key is reported and nothing changes.",
          body: preferencesBody,
        }
      : {}),
    tags: ["Notification preferences"],
    auth: "session",
    pathParams: userPath,
    responses: [
      { status: 200, description: "Every preference the user has set.", schema: z.array(NotificationPreference) },
    ],
    errors: errors(
      put ? BODY : {},
      put ? { 400: "A key is not a template id, or a mandatory template would be disabled (one validation per bad key)." } : {},
      put ? AUTH_WRITE : AUTH,
      { 403: "The caller can see the user but is neither that user nor an owner." },
      USER_404,
    ),
  };
}

/** N1–N13 and the delivery log. */
export const notificationOperations: Operation[] = [
  {
    method: "post",
    path: "/api/v2/notifications/custom",
    operationId: "sendCustomNotification",
    summary: "Send a custom notification to the caller (N1)",
    description: "At least one of `content.title` / `content.message` must be non-empty after trimming.",
    tags: ["Notifications"],
    auth: "session",
    body: customNotificationBody,
    responses: [{ status: 204, description: JSON_NO_BODY }],
    errors: errors(
      {
        400: "Invalid request body (e.g. empty title and message, or too long): `Invalid request body` with a `detail` and `validations`; or a body that is not JSON.",
        413: "The body is larger than 1 MiB.",
      },
      AUTH_WRITE,
      { 403: "The caller is a system user: `Forbidden`, `System users cannot send custom notifications.`" },
      { 500: "Sending the custom notification failed." },
    ),
  },
  {
    method: "get",
    path: "/api/v2/notifications/dispatch-methods",
    operationId: "getNotificationDispatchMethods",
    summary: "Available dispatch methods and the default (N2)",
    tags: ["Notifications"],
    auth: "session",
    responses: [{ status: 200, description: "An array with one entry.", schema: z.array(NotificationMethodsResponse) }],
    errors: AUTH,
  },
  {
    method: "get",
    path: "/api/v2/notifications/inbox",
    operationId: "listInboxNotifications",
    summary: "List the caller's inbox, newest first (N3)",
    tags: ["Inbox"],
    auth: "session",
    query: listInboxQuery,
    paramDocs: {
      ...FILTER_DOCS,
      starting_before: "Id of the last notification of the current page: returns strictly older ones.",
      limit: "Page size, 1–100 (default 25).",
    },
    responses: [{ status: 200, description: "One page and the caller's total unread count.", schema: ListInboxNotificationsResponse }],
    errors: errors(QUERY, { 400: "`starting_before` is not one of the caller's notifications." }, AUTH, INBOX_403),
  },
  {
    method: "get",
    path: "/api/v2/notifications/inbox/watch",
    operationId: "watchInboxNotifications",
    summary: "Watch the caller's inbox over a WebSocket (N5)",
    description:
      "A WebSocket upgrade (`Upgrade: websocket`); the query is checked before the upgrade. Answers **101 Switching Protocols**; each newly delivered notification that matches the filters is then sent as one text frame holding a `GetInboxNotificationResponse` (title and content rendered per `format`); with `sync_read_state=true`, read-state changes arrive as `InboxReadStateFrame`s. Browsers may authenticate by offering the subprotocols `herald.v1` and `herald.token.<token>` (only `herald.v1` is echoed) or by cookie from an allowed Origin. Close codes: 4008 the client fell behind (reconnect and list with N3), 4401 the session ended (do not reconnect with the same token).",
    tags: ["Inbox"],
    auth: "session",
    query: watchInboxQuery,
    paramDocs: {
      ...FILTER_DOCS,
      format: "Rendering of title and content: `markdown` (default) or `plaintext`.",
      sync_read_state: "`true` to also receive read-state changes.",
    },
    responses: [
      {
        status: 101,
        description:
          "Switching Protocols: the socket is open; frames are `GetInboxNotificationResponse` (and `InboxReadStateFrame` when synced).",
        headers: { "Sec-WebSocket-Protocol": { description: "`herald.v1` when subprotocols were offered.", schema: { type: "string" } } },
      },
    ],
    errors: errors(
      QUERY,
      { 400: "Not a WebSocket upgrade, or subprotocols offered without `herald.v1`." },
      AUTH,
      { 403: "Authenticated by cookie without an allowed `Origin`." },
      INBOX_403,
    ),
  },
  {
    method: "put",
    path: "/api/v2/notifications/inbox/mark-all-as-read",
    operationId: "markAllInboxNotificationsAsRead",
    summary: "Mark every unread notification of the caller read (N4)",
    tags: ["Inbox"],
    auth: "session",
    responses: [{ status: 204, description: JSON_NO_BODY }],
    errors: errors(AUTH_WRITE, INBOX_403),
  },
  {
    method: "put",
    path: "/api/v2/notifications/inbox/{id}/read-status",
    operationId: "updateInboxNotificationReadStatus",
    summary: "Mark one notification read or unread (N6)",
    tags: ["Inbox"],
    auth: "session",
    pathParams: notificationIdParam,
    paramDocs: { id: "Id of the notification." },
    body: readStatusBody,
    responses: [{ status: 200, description: "The updated notification.", schema: UpdateInboxNotificationReadStatusResponse }],
    errors: errors(BODY, { 400: "`id` is not a UUID." }, AUTH_WRITE, INBOX_403, {
      404: "Not one of the caller's notifications: `Resource not found or you do not have access to this resource`.",
    }),
  },
  {
    method: "get",
    path: "/api/v2/notifications/settings",
    operationId: "getNotificationsSettings",
    summary: "Get the notifier setting (N7)",
    tags: ["Notifications"],
    auth: "session",
    responses: [{ status: 200, description: "The settings.", schema: settingsBody }],
    errors: AUTH,
  },
  {
    method: "put",
    path: "/api/v2/notifications/settings",
    operationId: "updateNotificationsSettings",
    summary: "Pause or resume the notifier (N8)",
    description: "Owner only. Pausing stops all dispatch (inbox included); resuming delivers everything that waited, in order.",
    tags: ["Notifications"],
    auth: "session",
    body: settingsBody,
    responses: [
      { status: 200, description: "Changed: the new settings.", schema: settingsBody },
      { status: 304, description: "Not Modified: the value was already set. No body." },
    ],
    errors: errors(BODY, AUTH_WRITE, { 403: "The caller may not update the deployment configuration." }),
  },
  templates("custom", "listCustomNotificationTemplates", "N9"),
  templates("system", "listSystemNotificationTemplates", "N10"),
  {
    method: "post",
    path: "/api/v2/notifications/test",
    operationId: "sendTestNotification",
    summary: "Send the test notification to the caller (N11)",
    tags: ["Notifications"],
    auth: "session",
    responses: [{ status: 200, description: "Sent. No body (per the interface)." }],
    errors: errors(AUTH_WRITE, { 403: "Only an owner can send test notifications." }),
  },
  {
    method: "get",
    path: "/api/v2/notifications/messages",
    operationId: "listNotificationMessages",
    summary: "The delivery log (administrators)",
    tags: ["Notifications"],
    auth: "session",
    query: messagesQuery,
    responses: [{ status: 200, description: "One page, newest first, and the total count.", schema: ListNotificationMessagesResponse }],
    errors: errors(QUERY, AUTH, { 403: "The caller may not read notification messages." }),
  },
  preferences("get"),
  preferences("put"),
];
