import { asc, eq, inArray } from "drizzle-orm";
import { type Context, Hono } from "hono";
import * as z from "zod";
import { auditInsert } from "../audit/log";
import { requireAuth } from "../auth/session";
import { assertCan } from "../authz/guard";
import type { Database } from "../db/client";
import { channelPreferences, notificationTargets, notificationTemplates, type UserRow } from "../db/schema";
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
import { ChannelMessages } from "./messages";
import { targetChannel, targetIdOf } from "./model";
import { ChannelSwitch, channelsBody } from "./schemas";

/**
 * Every template × every channel the user has that it can reach (docs/channels.md, "Channel preferences"): e-mail,
 * push, and each of their targets, verified or not, so a grid can be drawn from the answer alone. Unset is enabled;
 * mandatory templates are always enabled.
 */
async function switchesOf(db: Database, userId: string): Promise<z.infer<typeof ChannelSwitch>[]> {
  const [templates, targets, stored] = await db.batch([
    db
      .select({ id: notificationTemplates.id, mandatory: notificationTemplates.mandatory, externalOnly: notificationTemplates.externalOnly })
      .from(notificationTemplates)
      .orderBy(asc(notificationTemplates.group), asc(notificationTemplates.name)),
    db
      .select({ id: notificationTargets.id })
      .from(notificationTargets)
      .where(eq(notificationTargets.userId, userId))
      .orderBy(asc(notificationTargets.createdAt)),
    db.select().from(channelPreferences).where(eq(channelPreferences.userId, userId)),
  ]);
  const set = new Map(stored.map((row) => [`${row.templateId} ${row.channel}`, row.enabled]));
  const channels = ["email", "push", ...targets.map((t) => targetChannel(t.id))];
  return templates.flatMap((template) =>
    channels
      .filter((channel) => reaches(template, channel))
      .map((channel) => ({
        template_id: template.id,
        channel,
        enabled: template.mandatory || (set.get(`${template.id} ${channel}`) ?? true),
      })),
  );
}

/** Whether a template's copies can go to a channel at all (docs/channels.md, "One copy per destination"). */
function reaches(template: { mandatory: boolean; externalOnly: boolean }, channel: string): boolean {
  if (channel === "email") return true;
  if (template.externalOnly) return false;
  return !(template.mandatory && targetIdOf(channel) !== undefined);
}

/** The user themself or an owner, like the other notification preferences (docs/api.md, Notifications). */
async function targetUser(c: Context<AppEnv>, action: "read" | "update"): Promise<UserRow> {
  const user = await resolveUser(c, c.req.param("user") ?? "");
  assertCan(c, action, { type: "notification_preference", ownerId: user.id }, ChannelMessages.forbidden(action));
  return user;
}

const CHANNELS_403: Errors = { 403: "The caller can see the user but is neither that user nor an owner." };
const fullList = { status: 200, description: "Every template × channel of the user, as now set.", schema: z.array(ChannelSwitch) } as const;

/** `GET` / `PUT /users/{user}/notifications/channels` (docs/channels.md, "Channel preferences"). */
export const channelRoutes = new Hono<AppEnv>()
  .get(
    "/users/:user/notifications/channels",
    describeRoute({
      operationId: "getUserChannelPreferences",
      summary: "Get a user's channel switches",
      description:
        "One entry per template and channel it can reach (`email`, `push`, and `target:<id>` for each of the user's targets; the passcode only `email`, security notices no target).",
      tags: ["Notification preferences"],
      access: "anyone",
      scope: "notification_preference:read",
      pathParams: userPath,
      responses: [fullList],
      errors: errors(CHANNELS_403, USER_404),
    }),
    requireAuth,
    async (c) => {
      const user = await targetUser(c, "read");
      return c.json(await switchesOf(dbFor(c, "read"), user.id), 200);
    },
  )
  .put(
    "/users/:user/notifications/channels",
    describeRoute({
      operationId: "updateUserChannelPreferences",
      summary: "Switch templates on or off per channel",
      description:
        "Upserts the given switches and answers the full list. Every bad entry is reported (unknown template, a target that is not the user's, a mandatory template turned off, the same switch given twice with different values) and nothing changes.",
      tags: ["Notification preferences"],
      access: "anyone",
      scope: "notification_preference:update",
      pathParams: userPath,
      responses: [fullList],
      errors: errors(
        { 400: "An entry is malformed or names something the user cannot switch (one validation per bad entry)." },
        CHANNELS_403,
        USER_404,
      ),
    }),
    requireAuth,
    jsonBody(channelsBody),
    async (c) => {
      const given = c.req.valid("json").map((entry) => {
        const target = targetIdOf(entry.channel);
        return {
          ...entry,
          template_id: canonicalId(entry.template_id),
          channel: target === undefined ? entry.channel : targetChannel(canonicalId(target)),
        };
      });
      const user = await targetUser(c, "update");
      const db = dbFor(c, "write");
      const templateIds = [...new Set(given.map((e) => e.template_id))];
      const [templates, targets] = await Promise.all([
        Promise.all(
          inSlices(templateIds).map((slice) =>
            db
              .select({ id: notificationTemplates.id, name: notificationTemplates.name, mandatory: notificationTemplates.mandatory })
              .from(notificationTemplates)
              .where(inArray(notificationTemplates.id, slice)),
          ),
        ).then((slices) => slices.flat()),
        db.select({ id: notificationTargets.id }).from(notificationTargets).where(eq(notificationTargets.userId, user.id)),
      ]);
      const known = new Map(templates.map((t) => [t.id, t]));
      const owned = new Set<string>(targets.map((t) => targetChannel(t.id)));
      // Every problem is reported at once, one validation per bad entry, and nothing is written.
      const validations: { field: string; detail: string }[] = [];
      const chosen = new Map<string, (typeof given)[number]>();
      given.forEach((entry, i) => {
        const template = known.get(entry.template_id);
        const key = `${entry.template_id} ${entry.channel}`;
        if (!template) validations.push({ field: `${i}.template_id`, detail: ChannelMessages.unknownTemplate });
        else if (template.mandatory && !entry.enabled) validations.push({ field: `${i}.enabled`, detail: ChannelMessages.mandatory(template.name) });
        if (targetIdOf(entry.channel) !== undefined && !owned.has(entry.channel)) {
          validations.push({ field: `${i}.channel`, detail: ChannelMessages.unknownTarget });
        }
        const earlier = chosen.get(key);
        if (earlier && earlier.enabled !== entry.enabled) validations.push({ field: `${i}`, detail: ChannelMessages.givenTwice });
        chosen.set(key, entry);
      });
      if (validations.length > 0) throw validationFailed(validations);

      const updatedAt = nowIso();
      const writes = [...chosen.values()].map((entry) =>
        db
          .insert(channelPreferences)
          .values({ userId: user.id, templateId: entry.template_id, channel: entry.channel, enabled: entry.enabled, updatedAt })
          .onConflictDoUpdate({
            target: [channelPreferences.userId, channelPreferences.templateId, channelPreferences.channel],
            set: { enabled: entry.enabled, updatedAt },
          }),
      );
      await db.batch([
        auditInsert(db, c, {
          action: "update",
          resourceType: "notification_preference",
          resourceId: user.id,
          diff: { channels: [...chosen.values()] },
        }),
        ...writes,
      ]);
      return c.json(await switchesOf(db, user.id), 200);
    },
  );
