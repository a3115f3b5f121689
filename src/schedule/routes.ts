import { type Context, Hono } from "hono";
import { auditInsert } from "../audit/log";
import { requireAuth } from "../auth/session";
import { assertCan } from "../authz/guard";
import { notificationSchedules, type UserRow } from "../db/schema";
import { dbFor } from "../db/session";
import type { AppEnv } from "../http/types";
import { jsonBody } from "../http/validate";
import { nowIso } from "../lib/crypto";
import { describeRoute, type Errors, errors, USER_404 } from "../openapi/describe";
import { resolveUser } from "../users/resolve";
import { userPath } from "../users/schemas";
import { ScheduleMessages } from "./messages";
import { ScheduleResponse, scheduleBody } from "./schemas";
import { rowOf, scheduleJson, scheduleQuery } from "./store";

/**
 * The schedule is one of the user's notification preferences: the user themself or an owner reads and changes it,
 * under the same permission and scopes (docs/schedule.md, "The schedule").
 */
async function targetUser(c: Context<AppEnv>, action: "read" | "update"): Promise<UserRow> {
  const user = await resolveUser(c, c.req.param("user") ?? "");
  assertCan(c, action, { type: "notification_preference", ownerId: user.id }, ScheduleMessages.forbidden(action));
  return user;
}

const SCHEDULE_403: Errors = { 403: "The caller can see the user but is neither that user nor an owner." };

/** `GET` / `PUT /users/{user}/notifications/schedule` (docs/schedule.md). */
export const scheduleRoutes = new Hono<AppEnv>()
  .get(
    "/users/:user/notifications/schedule",
    describeRoute({
      operationId: "getUserNotificationSchedule",
      summary: "Get a user's quiet hours and digest",
      description: "A user who never set a schedule has the defaults: UTC, no quiet hours, digest off.",
      tags: ["Notification preferences"],
      access: "anyone",
      scope: "notification_preference:read",
      pathParams: userPath,
      responses: [{ status: 200, description: "The user's schedule.", schema: ScheduleResponse }],
      errors: errors(SCHEDULE_403, USER_404),
    }),
    requireAuth,
    async (c) => {
      const user = await targetUser(c, "read");
      const [row] = await scheduleQuery(dbFor(c, "read"), user.id);
      return c.json(scheduleJson(row), 200);
    },
  )
  .put(
    "/users/:user/notifications/schedule",
    describeRoute({
      operationId: "updateUserNotificationSchedule",
      summary: "Set a user's quiet hours and digest",
      description:
        "Replaces the whole schedule. Applies to external copies enqueued afterwards; mandatory templates (passcodes, security notices) ignore it.",
      tags: ["Notification preferences"],
      access: "anyone",
      scope: "notification_preference:update",
      pathParams: userPath,
      responses: [{ status: 200, description: "The schedule as stored.", schema: ScheduleResponse }],
      errors: errors(
        { 400: "An unknown time zone, a bad time, day or digest, or more than 7 ranges (one validation per bad field)." },
        SCHEDULE_403,
        USER_404,
      ),
    }),
    requireAuth,
    jsonBody(scheduleBody),
    async (c) => {
      const body = c.req.valid("json");
      const user = await targetUser(c, "update");
      const db = dbFor(c, "write");
      const row = rowOf(user.id, body, nowIso());
      const { userId: _key, ...fields } = row;
      await db.batch([
        db.insert(notificationSchedules).values(row).onConflictDoUpdate({ target: notificationSchedules.userId, set: fields }),
        auditInsert(db, c, {
          action: "update",
          resourceType: "notification_schedule",
          resourceId: user.id,
          diff: { timezone: row.timezone, quiet_hours: row.quietHours, digest: row.digest },
        }),
      ]);
      return c.json(scheduleJson(row), 200);
    },
  );
