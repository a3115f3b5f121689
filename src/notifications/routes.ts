import { and, asc, count, desc, eq, type SQL } from "drizzle-orm";
import { type Context, Hono } from "hono";
import * as z from "zod";
import { auditInsert } from "../audit/log";
import { CUSTOM_NOTIFICATIONS, limitCustomNotifications } from "../auth/rate-limit";
import { requireAuth } from "../auth/session";
import { assertCan, assertScope, can } from "../authz/guard";
import { formatDuration } from "../config/duration";
import { type MessageRow, notificationMessages, notificationTemplates, type TemplateRow } from "../db/schema";
import { dbFor } from "../db/session";
import { ApiError, badRequest, forbidden, Messages, notFound } from "../http/errors";
import { ResponseBody } from "../http/schemas";
import type { AppEnv } from "../http/types";
import { jsonBody, pathParams, queryParams } from "../http/validate";
import { describeRoute, errors, NO_BODY, noPermission } from "../openapi/describe";
import { redrive } from "./background";
import { methodsConfigured } from "./configured";
import { enqueueNotification } from "./enqueue";
import { NotificationsMessages } from "./messages";
import {
  customNotificationBody,
  ListNotificationMessagesResponse,
  messagesQuery,
  NotificationMethodsConfigured,
  NotificationMethodsResponse,
  NotificationTemplate,
  settingsBody,
  TemplateSettings,
  templateIdParam,
  templateMethodBody,
  templateSettingsBody,
} from "./schemas";
import { readPaused, writePaused } from "./settings";
import { TEMPLATE_IDS } from "./templates";

/** The interface's NotificationTemplate: `actions` is a JSON string, `method` "" when the deployment default. */
function toTemplateResponse(t: TemplateRow): z.infer<typeof NotificationTemplate> {
  return {
    id: t.id,
    name: t.name,
    title_template: t.titleTemplate,
    body_template: t.bodyTemplate,
    actions: t.actions,
    group: t.group,
    method: t.method,
    kind: t.kind,
    enabled_by_default: t.enabledByDefault,
  };
}

function toSettingsResponse(t: TemplateRow) {
  return { id: t.id, email_when_unread_after: formatDuration(t.emailWhenUnreadAfterMs) };
}

async function templateById(c: Context<AppEnv>, id: string): Promise<TemplateRow> {
  const [template] = await dbFor(c, "read").select().from(notificationTemplates).where(eq(notificationTemplates.id, id));
  if (!template) throw notFound();
  return template;
}

function toMessageResponse(m: MessageRow) {
  return {
    id: m.id,
    notification_id: m.notificationId,
    template_id: m.templateId,
    user_id: m.userId,
    method: m.method,
    destination: m.destination,
    status: m.status,
    status_reason: m.statusReason ?? "",
    attempts: m.attempts,
    created_by: m.createdBy,
    created_at: m.createdAt,
    updated_at: m.updatedAt,
    sent_at: m.sentAt,
    next_retry_after: m.nextRetryAfter,
    targets: m.targets,
  };
}

async function templatesOfKind(c: Context<AppEnv>, kind: TemplateRow["kind"]) {
  assertCan(c, "read", { type: "notification_template" });
  const db = dbFor(c, "read");
  try {
    const rows = await db.select().from(notificationTemplates).where(eq(notificationTemplates.kind, kind)).orderBy(asc(notificationTemplates.name));
    return c.json(rows.map(toTemplateResponse), 200);
  } catch {
    // The template lists' documented 500: the storage failed (the error handler would log it the same way).
    throw new ApiError(500, NotificationsMessages.templatesFailed(kind), { detail: Messages.requestId(c.get("requestId")) });
  }
}

function describeTemplates(kind: TemplateRow["kind"], operationId: string) {
  return describeRoute({
    operationId,
    summary: `List ${kind} notification templates, by name`,
    tags: ["Notifications"],
    access: "anyone",
    scope: "notification_template:read",
    responses: [{ status: 200, description: "The templates.", schema: z.array(NotificationTemplate) }],
    errors: errors(noPermission("read notification templates"), { 500: `Retrieving the ${kind} notification templates failed.` }),
  });
}

/** Sending, dispatch methods, the notifier setting, templates and the delivery log (docs/api.md, Notifications). */
export const notificationRoutes = new Hono<AppEnv>()
  .post(
    "/notifications/custom",
    describeRoute({
      operationId: "sendCustomNotification",
      summary: "Send a custom notification to the caller",
      description: "At least one of `content.title` / `content.message` must be non-empty after trimming.",
      tags: ["Notifications"],
      access: "anyone",
      scope: "notification_message:create",
      responses: [{ status: 204, description: NO_BODY }],
      errors: errors(
        { 403: `The caller is a system user: \`${NotificationsMessages.systemUserForbidden}\`, \`${NotificationsMessages.systemUserCustom}\`` },
        {
          429: `The caller sent ${CUSTOM_NOTIFICATIONS.limit} custom notifications in the last minute, with every credential together (docs/security.md, "What one user can make Herald hold"): \`${Messages.rateLimited("N", "D")}\`, with \`Retry-After\`.`,
        },
        { 500: "Sending the custom notification failed." },
      ),
    }),
    requireAuth,
    jsonBody(customNotificationBody, { invalidMessage: NotificationsMessages.invalidCustomBody }),
    async (c) => {
      const auth = c.get("auth");
      const message = { type: "notification_message", ownerId: auth.user.id } as const;
      if (!can(c, "create", message)) {
        if (auth.user.isSystem) throw forbidden(NotificationsMessages.systemUserForbidden, NotificationsMessages.systemUserCustom);
        assertCan(c, "create", message);
      }
      const body = c.req.valid("json");
      await enqueueNotification(
        c.env,
        c.executionCtx,
        {
          userId: auth.user.id,
          templateId: TEMPLATE_IDS.custom,
          labels: { custom_title: body.content.title.trim(), custom_message: body.content.message.trim() },
          createdBy: auth.user.id,
        },
        dbFor(c, "write"),
        // After validation and the permission check, so only a request that would fill the inbox counts; alongside
        // the template and preference reads, and refused before anything is stored.
        limitCustomNotifications(c),
      );
      return c.body(null, 204);
    },
  )
  .get(
    "/notifications/dispatch-methods",
    describeRoute({
      operationId: "getNotificationDispatchMethods",
      summary: "Available dispatch methods and the default",
      tags: ["Notifications"],
      access: "anyone",
      scope: "deployment_config:read",
      responses: [{ status: 200, description: "An array with one entry.", schema: z.array(NotificationMethodsResponse) }],
    }),
    requireAuth,
    (c) => {
      assertScope(c, "deployment_config", "read");
      return c.json([{ available: ["smtp", "webhook"], default: c.get("config").NOTIFICATIONS_METHOD }], 200);
    },
  )
  .get(
    "/notifications/dispatch-methods/configured",
    describeRoute({
      operationId: "getNotificationDispatchMethodsConfigured",
      summary: "Whether each dispatch method is configured (owners, auditors)",
      description:
        "Herald's own: `true` when the method's server is set (`EMAIL_SMARTHOST`, `NOTIFICATIONS_WEBHOOK_URL`). Says nothing about the server itself.",
      tags: ["Notifications"],
      access: "config-reader",
      scope: "deployment_config:read",
      responses: [{ status: 200, description: "One flag per method.", schema: NotificationMethodsConfigured }],
      errors: noPermission("read the deployment configuration"),
    }),
    requireAuth,
    (c) => {
      assertCan(c, "read", { type: "deployment_config" });
      return c.json(methodsConfigured(c.get("config")), 200);
    },
  )
  .get(
    "/notifications/settings",
    describeRoute({
      operationId: "getNotificationsSettings",
      summary: "Get the notifier setting",
      tags: ["Notifications"],
      access: "anyone",
      scope: "deployment_config:read",
      responses: [{ status: 200, description: "The settings.", schema: settingsBody }],
    }),
    requireAuth,
    async (c) => {
      assertScope(c, "deployment_config", "read");
      return c.json({ notifier_paused: await readPaused(dbFor(c, "read")) }, 200);
    },
  )
  .put(
    "/notifications/settings",
    describeRoute({
      operationId: "updateNotificationsSettings",
      summary: "Pause or resume the notifier",
      description: "Owner only. Pausing stops all dispatch (inbox included); resuming delivers everything that waited, in order.",
      tags: ["Notifications"],
      access: "owner",
      scope: "deployment_config:update",
      responses: [
        { status: 200, description: "Changed: the new settings.", schema: settingsBody },
        { status: 304, description: "Not Modified: the value was already set. No body." },
      ],
      errors: noPermission("update the deployment configuration"),
    }),
    requireAuth,
    jsonBody(settingsBody),
    async (c) => {
      assertCan(c, "update", { type: "deployment_config" });
      const { notifier_paused } = c.req.valid("json");
      const db = dbFor(c, "write");
      const current = await readPaused(db);
      if (current === notifier_paused) return c.body(null, 304);
      await db.batch([
        writePaused(db, notifier_paused),
        auditInsert(db, c, {
          action: "update",
          resourceType: "deployment_config",
          resourceId: "notifier_paused",
          diff: { notifier_paused: { old: current, new: notifier_paused } },
        }),
      ]);
      // Resuming sends everything that waited, oldest first.
      if (!notifier_paused) c.executionCtx.waitUntil(redrive(c.env, 0));
      return c.json({ notifier_paused }, 200);
    },
  )
  .get("/notifications/templates/custom", describeTemplates("custom", "listCustomNotificationTemplates"), requireAuth, (c) =>
    templatesOfKind(c, "custom"),
  )
  .get("/notifications/templates/system", describeTemplates("system", "listSystemNotificationTemplates"), requireAuth, (c) =>
    templatesOfKind(c, "system"),
  )
  .get(
    "/notifications/templates/:id/settings",
    describeRoute({
      operationId: "getNotificationTemplateSettings",
      summary: "A template's delivery settings",
      tags: ["Notifications"],
      access: "anyone",
      scope: "notification_template:read",
      responses: [{ status: 200, description: "The settings.", schema: TemplateSettings }],
      errors: errors(noPermission("read notification templates"), { 404: `No template has this id (\`${Messages.notFoundOrNoAccess}\`).` }),
    }),
    requireAuth,
    pathParams(templateIdParam),
    async (c) => {
      assertCan(c, "read", { type: "notification_template" });
      const template = await templateById(c, c.req.valid("param").id);
      return c.json(toSettingsResponse(template), 200);
    },
  )
  .put(
    "/notifications/templates/:id/settings",
    describeRoute({
      operationId: "updateNotificationTemplateSettings",
      summary: "Make a system template's e-mail read-aware",
      description:
        "Owner only. With `email_when_unread_after` set, the template's e-mail copy waits that long and goes out only if the inbox copy is still unread and not archived then; otherwise the message log records it as `skipped` (docs/broadcasts.md). Applies to messages enqueued afterwards.",
      tags: ["Notifications"],
      access: "owner",
      scope: "notification_template:update",
      responses: [{ status: 200, description: "The new settings.", schema: TemplateSettings }],
      errors: errors(noPermission("update notification templates"), {
        400: `A custom template (\`${NotificationsMessages.readAwareSystemOnly}\`) or one never delivered to the inbox.`,
        404: `No template has this id (\`${Messages.notFoundOrNoAccess}\`).`,
      }),
    }),
    requireAuth,
    pathParams(templateIdParam),
    jsonBody(templateSettingsBody),
    async (c) => {
      assertCan(c, "update", { type: "notification_template" });
      const template = await templateById(c, c.req.valid("param").id);
      const delay = c.req.valid("json").email_when_unread_after;
      if (template.kind !== "system") throw badRequest(NotificationsMessages.readAwareSystemOnly);
      if (template.externalOnly) throw badRequest(NotificationsMessages.readAwareNeedsInbox(template.name));
      const db = dbFor(c, "write");
      await db.batch([
        db.update(notificationTemplates).set({ emailWhenUnreadAfterMs: delay }).where(eq(notificationTemplates.id, template.id)),
        auditInsert(db, c, {
          action: "update",
          resourceType: "notification_template",
          resourceId: template.id,
          diff: { email_when_unread_after_ms: { old: template.emailWhenUnreadAfterMs, new: delay } },
        }),
      ]);
      return c.json(toSettingsResponse({ ...template, emailWhenUnreadAfterMs: delay }), 200);
    },
  )
  .put(
    "/notifications/templates/:id/method",
    describeRoute({
      operationId: "updateNotificationTemplateMethod",
      summary: "Set how a template's messages are delivered besides the inbox",
      description:
        'Coder\'s endpoint. Owner only, audited. `"smtp"` or `"webhook"` for this template whatever the deployment\'s default, `""` for the deployment\'s `NOTIFICATIONS_METHOD`. Applies to messages enqueued afterwards.',
      tags: ["Notifications"],
      access: "owner",
      scope: "notification_template:update",
      responses: [
        { status: 200, description: `Changed: \`${NotificationsMessages.templateMethodUpdated}\``, schema: ResponseBody },
        { status: 304, description: "Not Modified: the template already had this method. No body." },
      ],
      errors: errors(noPermission("update notification templates"), {
        404: `No template has this id (\`${Messages.notFoundOrNoAccess}\`).`,
      }),
    }),
    requireAuth,
    pathParams(templateIdParam),
    jsonBody(templateMethodBody, { invalidMessage: NotificationsMessages.invalidTemplateMethod }),
    async (c) => {
      assertCan(c, "update", { type: "notification_template" });
      const { method } = c.req.valid("json");
      // Read where it is written: a replica's older method would make a change look like no change (304).
      const db = dbFor(c, "write");
      const [template] = await db
        .select()
        .from(notificationTemplates)
        .where(eq(notificationTemplates.id, c.req.valid("param").id));
      if (!template) throw notFound();
      if (template.method === method) return c.body(null, 304);
      await db.batch([
        db.update(notificationTemplates).set({ method }).where(eq(notificationTemplates.id, template.id)),
        auditInsert(db, c, {
          action: "update",
          resourceType: "notification_template",
          resourceId: template.id,
          diff: { method: { old: template.method, new: method } },
        }),
      ]);
      return c.json({ message: NotificationsMessages.templateMethodUpdated }, 200);
    },
  )
  .post(
    "/notifications/test",
    describeRoute({
      operationId: "sendTestNotification",
      summary: "Send the test notification to the caller",
      tags: ["Notifications"],
      access: "owner",
      scope: "notification_message:create",
      responses: [{ status: 200, description: "Sent. No body (per the interface)." }],
      errors: { 403: NotificationsMessages.ownerSendsTest },
    }),
    requireAuth,
    async (c) => {
      // Site-wide create on messages: the owner's permission, not a member's own-notification one.
      assertCan(c, "create", { type: "notification_message" }, NotificationsMessages.ownerSendsTest);
      const caller = c.get("auth").user.id;
      await enqueueNotification(c.env, c.executionCtx, { userId: caller, templateId: TEMPLATE_IDS.test, createdBy: caller }, dbFor(c, "write"));
      return c.body(null, 200);
    },
  )
  .get(
    "/notifications/messages",
    describeRoute({
      operationId: "listNotificationMessages",
      summary: "The delivery log (owners)",
      tags: ["Notifications"],
      access: "owner",
      scope: "notification_message:read",
      responses: [{ status: 200, description: "One page, newest first, and the total count.", schema: ListNotificationMessagesResponse }],
      errors: noPermission("read notification messages"),
    }),
    requireAuth,
    queryParams(messagesQuery),
    async (c) => {
      assertCan(c, "read", { type: "notification_message" });
      const q = c.req.valid("query");
      const filters: SQL[] = [];
      if (q.status) filters.push(eq(notificationMessages.status, q.status));
      if (q.method) filters.push(eq(notificationMessages.method, q.method));
      if (q.user_id) filters.push(eq(notificationMessages.userId, q.user_id));
      if (q.template_id) filters.push(eq(notificationMessages.templateId, q.template_id));
      const db = dbFor(c, "read");
      const where = and(...filters);
      const [rows, total] = await db.batch([
        db
          .select()
          .from(notificationMessages)
          .where(where)
          .orderBy(desc(notificationMessages.createdAt), desc(notificationMessages.id))
          .limit(q.limit)
          .offset(q.offset),
        db.select({ n: count() }).from(notificationMessages).where(where),
      ]);
      return c.json({ messages: rows.map(toMessageResponse), count: total[0]?.n ?? 0 }, 200);
    },
  );
