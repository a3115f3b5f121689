import { asc, eq, inArray } from "drizzle-orm";
import { type Context, Hono } from "hono";
import * as z from "zod";
import { auditInsert } from "../audit/log";
import { requireAuth } from "../auth/session";
import { assertCan } from "../authz/guard";
import type { Database } from "../db/client";
import { notificationPreferences, notificationTemplates, type UserRow } from "../db/schema";
import { dbFor } from "../db/session";
import { inSlices } from "../db/slices";
import { validationFailed } from "../http/errors";
import { canonicalId } from "../http/ids";
import type { AppEnv } from "../http/types";
import { jsonBody } from "../http/validate";
import { nowIso } from "../lib/crypto";
import { describeRoute, type Errors, errors, USER_404 } from "../openapi/describe";
import { resolveUser } from "../users/resolve";
import { userPath } from "../users/schemas";
import { NotificationsMessages } from "./messages";
import { NotificationPreference, preferencesBody } from "./schemas";

async function preferencesOf(db: Database, userId: string) {
  const rows = await db
    .select()
    .from(notificationPreferences)
    .where(eq(notificationPreferences.userId, userId))
    .orderBy(asc(notificationPreferences.templateId));
  return rows.map((p) => ({ id: p.templateId, disabled: p.disabled, updated_at: p.updatedAt }));
}

/** The user themself or an owner; someone who can see the user but not its preferences gets 403 (docs/api.md, Notifications). */
async function targetUser(c: Context<AppEnv>, action: "read" | "update"): Promise<UserRow> {
  const user = await resolveUser(c, c.req.param("user") ?? "");
  assertCan(c, action, { type: "notification_preference", ownerId: user.id }, NotificationsMessages.preferencesForbidden(action));
  return user;
}

const PREFERENCES_403: Errors = { 403: "The caller can see the user but is neither that user nor an owner." };

/** Per-user template preferences (docs/api.md, Notifications). */
export const preferenceRoutes = new Hono<AppEnv>()
  .get(
    "/users/:user/notifications/preferences",
    describeRoute({
      operationId: "getUserNotificationPreferences",
      summary: "Get a user's template preferences",
      tags: ["Notification preferences"],
      access: "anyone",
      scope: "notification_preference:read",
      pathParams: userPath,
      responses: [{ status: 200, description: "Every preference the user has set.", schema: z.array(NotificationPreference) }],
      errors: errors(PREFERENCES_403, USER_404),
    }),
    requireAuth,
    async (c) => {
      const user = await targetUser(c, "read");
      return c.json(await preferencesOf(dbFor(c, "read"), user.id), 200);
    },
  )
  .put(
    "/users/:user/notifications/preferences",
    describeRoute({
      operationId: "updateUserNotificationPreferences",
      summary: "Update a user's template preferences",
      description:
        "Upserts only the given entries. Keys must be ids of existing templates; mandatory templates cannot be disabled. Every bad key is reported and nothing changes.",
      tags: ["Notification preferences"],
      access: "anyone",
      scope: "notification_preference:update",
      pathParams: userPath,
      responses: [{ status: 200, description: "Every preference the user has set.", schema: z.array(NotificationPreference) }],
      errors: errors(
        { 400: "A key is not a template id, or a mandatory template would be disabled (one validation per bad key)." },
        PREFERENCES_403,
        USER_404,
      ),
    }),
    requireAuth,
    jsonBody(preferencesBody),
    async (c) => {
      c.req.valid("json");
      // Keys from the raw JSON: zod rebuilds records by assignment, which would swallow a "__proto__" key unchecked.
      const raw = (await c.req.json()) as { template_disabled_map: Record<string, boolean> };
      // Template ids in any case name the same template (src/http/ids.ts); a field names the key as it was given.
      const entries = Object.entries(raw.template_disabled_map).map(([given, disabled]) => ({ given, id: canonicalId(given), disabled }));
      const map = new Map<string, boolean>();
      const validations: { field: string; detail: string }[] = [];
      for (const { given, id, disabled } of entries) {
        if (map.has(id) && map.get(id) !== disabled) {
          validations.push({ field: `template_disabled_map.${given}`, detail: NotificationsMessages.templateGivenTwice });
        }
        map.set(id, disabled);
      }
      const user = await targetUser(c, "update");
      const db = dbFor(c, "write");
      const ids = [...map.keys()];
      const templates = (
        await Promise.all(
          inSlices(ids).map((slice) =>
            db
              .select({ id: notificationTemplates.id, mandatory: notificationTemplates.mandatory, name: notificationTemplates.name })
              .from(notificationTemplates)
              .where(inArray(notificationTemplates.id, slice)),
          ),
        )
      ).flat();
      const known = new Map(templates.map((t) => [t.id, t]));
      // Every problem is reported at once, one validation per bad key, and nothing is written.
      for (const { given, id, disabled } of entries) {
        const template = known.get(id);
        if (!template) validations.push({ field: `template_disabled_map.${given}`, detail: NotificationsMessages.unknownTemplate });
        else if (template.mandatory && disabled)
          validations.push({ field: `template_disabled_map.${given}`, detail: NotificationsMessages.mandatoryTemplate(template.name) });
      }
      if (validations.length > 0) throw validationFailed(validations);

      const updatedAt = nowIso();
      const writes = ids.map((templateId) =>
        db
          .insert(notificationPreferences)
          .values({ userId: user.id, templateId, disabled: map.get(templateId) ?? false, updatedAt })
          .onConflictDoUpdate({
            target: [notificationPreferences.userId, notificationPreferences.templateId],
            set: { disabled: map.get(templateId) ?? false, updatedAt },
          }),
      );
      await db.batch([
        auditInsert(db, c, {
          action: "update",
          resourceType: "notification_preference",
          resourceId: user.id,
          diff: { template_disabled_map: Object.fromEntries(map) },
        }),
        ...writes,
      ]);
      return c.json(await preferencesOf(db, user.id), 200);
    },
  );
