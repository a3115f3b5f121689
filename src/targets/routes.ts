import { type Context, Hono } from "hono";
import * as z from "zod";
import { limitSensitive } from "../auth/rate-limit";
import { requireAuth } from "../auth/session";
import { requireRecentAuth } from "../auth/step-up";
import type { Action } from "../authz/catalog";
import { assertCan } from "../authz/guard";
import type { UserRow } from "../db/schema";
import { dbFor } from "../db/session";
import { forbidden, Messages, notFound } from "../http/errors";
import { canonicalId, isUuidShaped } from "../http/ids";
import type { AppEnv } from "../http/types";
import { jsonBody } from "../http/validate";
import { describeRoute, type Errors, errors, NO_BODY, USER_404 } from "../openapi/describe";
import { resolveUser } from "../users/resolve";
import { userPath } from "../users/schemas";
import { TargetMessages } from "./messages";
import { CreatedNotificationTarget, createTargetBody, NotificationTarget, TARGETS_MAX_PER_USER, userTargetPath, verifyTargetBody } from "./schemas";
import { allowedUrl, createTarget, listTargets, MAX_CODE_TRIES, removeTarget, verifyTarget } from "./service";

/**
 * Only the user themself manages their targets (docs/targets.md, "Who may do what"): a target receives the user's
 * notifications, so not even an owner adds, reads or removes another user's. The permission (and a narrowed token's
 * scope) is checked first, so a token without it learns which scope it lacks.
 */
async function ownTargets(c: Context<AppEnv>, action: Action): Promise<UserRow> {
  const user = await resolveUser(c, c.req.param("user") ?? "");
  assertCan(c, action, { type: "notification_target", ownerId: user.id });
  if (user.id !== c.get("auth").user.id) throw forbidden(Messages.forbidden, TargetMessages.onlySelf);
  return user;
}

/** The target `{id}` of the path, canonical; anything that is not a UUID names no target. */
function targetId(c: Context<AppEnv>): string {
  const id = c.req.param("id") ?? "";
  if (!isUuidShaped(id)) throw notFound();
  return canonicalId(id);
}

const SELF_403: Errors = {
  403: `\`{user}\` is another user (\`${TargetMessages.onlySelf}\`), or the credential lacks the permission or scope.`,
};
const TARGET_404: Errors = { 404: "The target is not one of this user's." };
const SENSITIVE_429: Errors = { 429: `Rate limited: 10 a minute per user (\`${Messages.rateLimited(10, "1m0s")}\`).` };

/** The user's own notification targets (docs/targets.md; docs/api.md, "Notification targets"). */
export const targetRoutes = new Hono<AppEnv>()
  .post(
    "/users/:user/notification-targets",
    describeRoute({
      operationId: "createNotificationTarget",
      summary: "Add a notification target: a webhook, Slack, Teams or Discord",
      description: `The user themself, after a recent sign-in. At most ${TARGETS_MAX_PER_USER} per user. Herald at once sends the target a verification message holding a 6-digit code (a \`webhook\` gets the event \`target.verification\` with \`{"code"}\` in \`payload\`); the target receives notifications only once the code is entered with \`POST …/{id}/verify\`. The user is sent the security notice \`Notification channel added\` at once (docs/security.md, "Security notices").`,
      tags: ["Notification targets"],
      access: "anyone",
      scope: "notification_target:create",
      pathParams: userPath,
      responses: [
        {
          status: 201,
          description: "The target, unverified; for a `webhook`, with its signing `secret`, shown this once.",
          schema: CreatedNotificationTarget,
        },
      ],
      errors: errors(
        {
          400: `A URL the kind does not allow (a validation on \`url\`, docs/targets.md "Outbound safety"), or \`${TargetMessages.tooMany}\`.`,
        },
        SELF_403,
        USER_404,
        SENSITIVE_429,
      ),
    }),
    requireAuth,
    requireRecentAuth,
    jsonBody(createTargetBody),
    async (c) => {
      const body = c.req.valid("json");
      const user = await ownTargets(c, "create");
      // A refused URL costs nothing: it is checked before the limit, which guards what a new target sends.
      const url = allowedUrl(c.get("config"), body);
      await limitSensitive(c, "target-create", user.id);
      return c.json(await createTarget(c, dbFor(c, "write"), user, body, url), 201);
    },
  )
  .get(
    "/users/:user/notification-targets",
    describeRoute({
      operationId: "listNotificationTargets",
      summary: "List a user's notification targets, newest first",
      description: "The user themself. Never a URL or a secret: only each URL's origin.",
      tags: ["Notification targets"],
      access: "anyone",
      scope: "notification_target:read",
      pathParams: userPath,
      responses: [{ status: 200, description: "The targets.", schema: z.array(NotificationTarget) }],
      errors: errors(SELF_403, USER_404),
    }),
    requireAuth,
    async (c) => {
      const user = await ownTargets(c, "read");
      return c.json(await listTargets(dbFor(c, "read"), user.id), 200);
    },
  )
  .delete(
    "/users/:user/notification-targets/:id",
    describeRoute({
      operationId: "deleteNotificationTarget",
      summary: "Remove a notification target",
      description: "The user themself. Nothing more is sent to it; copies still waiting for a retry fail as `the target was removed`.",
      tags: ["Notification targets"],
      access: "anyone",
      scope: "notification_target:delete",
      pathParams: userTargetPath,
      responses: [{ status: 204, description: NO_BODY }],
      errors: errors(SELF_403, USER_404, TARGET_404),
    }),
    requireAuth,
    async (c) => {
      const user = await ownTargets(c, "delete");
      await removeTarget(c, dbFor(c, "write"), user, targetId(c));
      return c.body(null, 204);
    },
  )
  .post(
    "/users/:user/notification-targets/:id/verify",
    describeRoute({
      operationId: "verifyNotificationTarget",
      summary: "Verify a notification target with the code it received",
      description: `The user themself. The ${MAX_CODE_TRIES}th incorrect code removes the target: add it again for a new code.`,
      tags: ["Notification targets"],
      access: "anyone",
      scope: "notification_target:update",
      pathParams: userTargetPath,
      responses: [{ status: 200, description: "The target, verified.", schema: NotificationTarget }],
      errors: errors(
        {
          400: `An incorrect code: \`${TargetMessages.incorrectCode}\` with a validation on \`code\` and the tries left in \`detail\`; the ${MAX_CODE_TRIES}th: \`${TargetMessages.removedAfterTries}\`, and the target is gone.`,
        },
        SELF_403,
        USER_404,
        TARGET_404,
        { 409: `\`${TargetMessages.alreadyVerified}\`` },
        SENSITIVE_429,
      ),
    }),
    requireAuth,
    jsonBody(verifyTargetBody),
    async (c) => {
      const { code } = c.req.valid("json");
      const user = await ownTargets(c, "update");
      const id = targetId(c);
      await limitSensitive(c, "target-verify", user.id);
      return c.json(await verifyTarget(c, dbFor(c, "write"), user, id, code), 200);
    },
  );
