import { and, desc, eq } from "drizzle-orm";
import { type Context, Hono } from "hono";
import * as z from "zod";
import { auditInsert } from "../audit/log";
import { SENSITIVE_LIMIT } from "../auth/rate-limit";
import { requireAuth } from "../auth/session";
import { assertCan } from "../authz/guard";
import { pushSubscriptions } from "../db/schema";
import { dbFor } from "../db/session";
import { ApiError, forbidden, Messages, notFound } from "../http/errors";
import { canonicalId, isUuidShaped } from "../http/ids";
import type { AppEnv } from "../http/types";
import { jsonBody } from "../http/validate";
import { describeRoute, errors, NO_BODY, noPermission, USER_404 } from "../openapi/describe";
import { resolveUser } from "../users/resolve";
import { userPath } from "../users/schemas";
import { PushMessages } from "./messages";
import { addPushSubscriptionBody, PushPublicKey, PushSubscription, userSubscriptionPath } from "./schemas";
import { addSubscription, PUSH_SUBSCRIPTIONS_MAX_PER_USER, toSubscriptionResponse } from "./subscriptions";
import { vapidSigner } from "./vapid";

/**
 * Only the user themself subscribes a browser: a subscription sends that person's notifications to a device, so an
 * owner who could add one for someone else could read their notifications (docs/push.md, "Who may do what").
 */
async function subscribingUser(c: Context<AppEnv>) {
  const user = await resolveUser(c, c.req.param("user") ?? "");
  if (user.id !== c.get("auth").user.id) throw forbidden(Messages.forbidden, PushMessages.onlySelf);
  assertCan(c, "update", { type: "notification_preference", ownerId: user.id });
  return user;
}

/** Web Push: the public key browsers subscribe with, and a user's subscriptions (docs/api.md, "Web Push"). */
export const pushRoutes = new Hono<AppEnv>()
  .get(
    "/notifications/push/public-key",
    describeRoute({
      operationId: "getPushPublicKey",
      summary: "The VAPID public key browsers subscribe with",
      description: "No credential. Give it to `pushManager.subscribe({ userVisibleOnly: true, applicationServerKey })`.",
      tags: ["Web Push"],
      responses: [{ status: 200, description: "The key.", schema: PushPublicKey }],
      errors: { 404: `\`${PushMessages.notConfigured}\`: the deployment has no VAPID key pair (docs/push.md, "Keys").` },
    }),
    async (c) => {
      const signer = vapidSigner(c.get("config"));
      if (!signer) throw new ApiError(404, PushMessages.notConfigured, { detail: PushMessages.notConfiguredDetail });
      // The configured key as it is, without waiting for the private key's check: a broken pair fails the pushes
      // with its reason (docs/push.md, "Keys"), and this stays a constant answer.
      return c.json({ public_key: c.get("config").VAPID_PUBLIC_KEY ?? "" }, 200);
    },
  )
  .post(
    "/users/:user/push-subscriptions",
    describeRoute({
      operationId: "addPushSubscription",
      summary: "Subscribe a browser to Web Push",
      description:
        'The user themself. A new subscription sends the user the security notice `Notification channel added` (docs/security.md, "Security notices"). The same endpoint again is the same browser: that subscription takes the new keys (and name, if given) and is answered with 200, and no notice is sent.',
      tags: ["Web Push"],
      access: "anyone",
      scope: "notification_preference:update",
      pathParams: userPath,
      responses: [
        { status: 201, description: "The new subscription.", schema: PushSubscription },
        {
          status: 200,
          description: "The endpoint was already subscribed: the subscription, with the keys and name just sent.",
          schema: PushSubscription,
        },
      ],
      errors: errors(
        {
          400: `An endpoint that is not a push service's, a \`p256dh\` that is not a P-256 point, an \`auth\` that is not 16 bytes (each named in \`validations\`), or \`${PushMessages.tooMany}\` (${PUSH_SUBSCRIPTIONS_MAX_PER_USER} per user).`,
        },
        noPermission("update this user's notification preferences"),
        { 403: `Another user: \`${PushMessages.onlySelf}\`` },
        USER_404,
        { 409: `\`${PushMessages.notConfigured}\`` },
        {
          429: `The user sent ${SENSITIVE_LIMIT.limit} adds in the last minute, a known endpoint's included (docs/security.md, "What one user can make Herald hold"): \`${Messages.rateLimited(SENSITIVE_LIMIT.limit, "1m0s")}\`, with \`Retry-After\`.`,
        },
      ),
    }),
    requireAuth,
    jsonBody(addPushSubscriptionBody),
    async (c) => {
      const body = c.req.valid("json");
      const user = await subscribingUser(c);
      const { row, created } = await addSubscription(c, user, body);
      return created ? c.json(toSubscriptionResponse(row), 201) : c.json(toSubscriptionResponse(row), 200);
    },
  )
  .get(
    "/users/:user/push-subscriptions",
    describeRoute({
      operationId: "listPushSubscriptions",
      summary: "List a user's push subscriptions, newest first",
      description: "The user themself, or an owner. Each names its push service by origin only.",
      tags: ["Web Push"],
      access: "anyone",
      scope: "notification_preference:read",
      pathParams: userPath,
      responses: [{ status: 200, description: "The subscriptions.", schema: z.array(PushSubscription) }],
      errors: errors(noPermission("read this user's notification preferences"), USER_404),
    }),
    requireAuth,
    async (c) => {
      const user = await resolveUser(c, c.req.param("user"));
      assertCan(c, "read", { type: "notification_preference", ownerId: user.id });
      const rows = await dbFor(c, "read")
        .select()
        .from(pushSubscriptions)
        .where(eq(pushSubscriptions.userId, user.id))
        .orderBy(desc(pushSubscriptions.createdAt), desc(pushSubscriptions.id));
      return c.json(rows.map(toSubscriptionResponse), 200);
    },
  )
  .delete(
    "/users/:user/push-subscriptions/:id",
    describeRoute({
      operationId: "deletePushSubscription",
      summary: "Remove a push subscription",
      description: "The user themself, or an owner. Nothing more is pushed to that browser; copies still waiting to be sent to it are given up.",
      tags: ["Web Push"],
      access: "anyone",
      scope: "notification_preference:update",
      pathParams: userSubscriptionPath,
      responses: [{ status: 204, description: NO_BODY }],
      errors: errors(noPermission("update this user's notification preferences"), USER_404, {
        404: "The push subscription is not one of this user's.",
      }),
    }),
    requireAuth,
    async (c) => {
      const user = await resolveUser(c, c.req.param("user"));
      assertCan(c, "update", { type: "notification_preference", ownerId: user.id });
      const id = c.req.param("id");
      if (!isUuidShaped(id)) throw notFound();
      const db = dbFor(c, "write");
      const which = and(eq(pushSubscriptions.id, canonicalId(id)), eq(pushSubscriptions.userId, user.id));
      const [found] = await db.select({ id: pushSubscriptions.id, name: pushSubscriptions.name }).from(pushSubscriptions).where(which).limit(1);
      if (!found) throw notFound();
      await db.batch([
        db.delete(pushSubscriptions).where(which),
        auditInsert(db, c, { action: "delete", resourceType: "push_subscription", resourceId: found.id, diff: { owner: user.id, name: found.name } }),
      ]);
      return c.body(null, 204);
    },
  );
