import { Hono } from "hono";
import { requireAuth } from "../auth/session";
import { assertCan } from "../authz/guard";
import { readFresh } from "../db/session";
import { Messages, notFound, validationFailed } from "../http/errors";
import type { AppEnv } from "../http/types";
import { headerParams, jsonBody, pathParams, queryParams } from "../http/validate";
import { describeRoute, errors, noPermission } from "../openapi/describe";
import { BroadcastMessages } from "./messages";
import {
  BroadcastCreated,
  BroadcastProgress,
  broadcastIdParam,
  createBroadcastBody,
  idempotencyHeader,
  ListBroadcastsResponse,
  listBroadcastsQuery,
} from "./schemas";
import { broadcastProgress, createBroadcast, listBroadcasts } from "./service";

/** Broadcasts (docs/broadcasts.md): one notification to many inboxes, and its progress. */
export const broadcastRoutes = new Hono<AppEnv>()
  .post(
    "/notifications/broadcasts",
    describeRoute({
      operationId: "createBroadcast",
      summary: "Send a notification to an audience",
      description:
        "Answers once the audience is counted and the broadcast stored; the fan-out runs on the queue. Each recipient gets exactly one inbox item and the e-mail/webhook copy their preferences for the Broadcast template allow. With `email_when_unread_after`, the e-mail waits that long and is sent only if the inbox item is still unread and not archived (otherwise the message log records it as `skipped`).",
      tags: ["Broadcasts"],
      access: "user-admin",
      scope: "notification_broadcast:create",
      responses: [{ status: 202, description: "Accepted: the broadcast's id and the recipients counted.", schema: BroadcastCreated }],
      errors: errors(noPermission("send broadcasts"), {
        429: `The caller sent \`BROADCASTS_PER_MINUTE\` broadcasts in the last minute or \`BROADCASTS_PER_DAY\` in the last day (docs/broadcasts.md, "Limits"): \`${Messages.rateLimited("N", "D")}\`, with \`Retry-After\` saying when the oldest of them leaves the window. A replay of an \`Idempotency-Key\` is never refused by it.`,
      }),
    }),
    requireAuth,
    headerParams(idempotencyHeader),
    jsonBody(createBroadcastBody),
    async (c) => {
      assertCan(c, "create", { type: "notification_broadcast" });
      const created = await createBroadcast(c, c.req.valid("json"), c.req.valid("header")["idempotency-key"]);
      return c.json(created, 202);
    },
  )
  // The list has one path segment fewer than `/:id`, so Hono never matches one for the other, in either order.
  .get(
    "/notifications/broadcasts",
    describeRoute({
      operationId: "listBroadcasts",
      summary: "List broadcasts, newest first, with their progress",
      description:
        "Each item is the broadcast's progress (as `GET /notifications/broadcasts/{id}` answers it) plus its title. Page with `starting_before` set to the last id of the previous page; a page shorter than `limit` is the last.",
      tags: ["Broadcasts"],
      access: "user-admin",
      scope: "notification_broadcast:read",
      paramDocs: {
        starting_before: "Id of the last broadcast of the current page: returns strictly older ones, in (created_at, id) order.",
        limit: "Page size, 1–100 (default 25).",
      },
      responses: [{ status: 200, description: "One page, newest first.", schema: ListBroadcastsResponse }],
      errors: errors(noPermission("read broadcasts"), {
        400: `\`starting_before\` names no broadcast (\`${BroadcastMessages.unknownStartingBefore}\`).`,
      }),
    }),
    requireAuth,
    queryParams(listBroadcastsQuery),
    async (c) => {
      assertCan(c, "read", { type: "notification_broadcast" });
      const query = c.req.valid("query");
      // A cursor from a page another replica served may be newer than this one: checked on the primary before the 400.
      const page = await readFresh(c, (db) => listBroadcasts(db, query.starting_before, query.limit));
      if (!page) throw validationFailed([{ field: "starting_before", detail: BroadcastMessages.unknownStartingBefore }]);
      return c.json({ broadcasts: page }, 200);
    },
  )
  .get(
    "/notifications/broadcasts/:id",
    describeRoute({
      operationId: "getBroadcast",
      summary: "A broadcast's progress",
      description: "`pending` reaches 0 and `completed_at` is set once every recipient's inbox copy is stored or has failed for good.",
      tags: ["Broadcasts"],
      access: "user-admin",
      scope: "notification_broadcast:read",
      responses: [{ status: 200, description: "The progress.", schema: BroadcastProgress }],
      errors: { ...noPermission("read broadcasts"), 404: "No broadcast has this id." },
    }),
    requireAuth,
    pathParams(broadcastIdParam),
    async (c) => {
      assertCan(c, "read", { type: "notification_broadcast" });
      // A broadcast just created is found even where a replica has not seen it yet (docs/consistency.md).
      const progress = await readFresh(c, (db) => broadcastProgress(db, c.req.valid("param").id));
      if (!progress) throw notFound();
      return c.json(progress, 200);
    },
  );
