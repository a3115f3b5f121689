import { Hono } from "hono";
import { auditInsert } from "../audit/log";
import { limitSensitive } from "../auth/rate-limit";
import { requireAuth } from "../auth/session";
import { requireRecentAuth } from "../auth/step-up";
import { assertCan } from "../authz/guard";
import { dbFor } from "../db/session";
import type { AppEnv } from "../http/types";
import { describeRoute, errors, RATE, USER_404 } from "../openapi/describe";
import { resolveUser } from "../users/resolve";
import { userPath } from "../users/schemas";
import { exportDocument, exportStream } from "./export";
import { PrivacyMessages } from "./messages";
import { UserExport } from "./schemas";

/** `GET /users/{user}/export` (docs/privacy.md, "The export"). */
export const privacyRoutes = new Hono<AppEnv>().get(
  "/users/:user/export",
  describeRoute({
    operationId: "exportUser",
    summary: "Export everything Herald stores about a user",
    description:
      "The user themself, after a recent sign-in (step-up), or an owner. One JSON document, written as it is read, a page of rows at a time: each stored table's rows about the user, with every column as stored except secrets and what is someone else's (docs/privacy.md). A failure midway ends the download with an error, never with a shorter document. Audited; 10 a minute per caller.",
    tags: ["Users"],
    access: "anyone",
    scope: "user:read_personal",
    pathParams: userPath,
    responses: [
      {
        status: 200,
        description: "The document, as an attachment (`Content-Disposition`).",
        schema: UserExport,
        headers: {
          "Content-Disposition": {
            description: '`attachment; filename="herald-export-<user id>.json"`',
            schema: { type: "string" },
          },
        },
      },
    ],
    errors: errors({ 403: `The caller may not read this user's personal data: \`${PrivacyMessages.othersExport}\`.` }, USER_404, RATE),
  }),
  requireAuth,
  requireRecentAuth,
  async (c) => {
    const user = await resolveUser(c, c.req.param("user"));
    const self = user.id === c.get("auth").user.id;
    assertCan(c, "read_personal", { type: "user", ownerId: user.id }, PrivacyMessages.othersExport);
    // Someone else's export holds their audit entries: whoever exports it must be able to read the audit log too.
    if (!self) assertCan(c, "read", { type: "audit_log" }, PrivacyMessages.othersExport);
    await limitSensitive(c, "export");
    const db = dbFor(c, "write");
    if (c.req.method !== "HEAD") await db.batch([auditInsert(db, c, { action: "export", resourceType: "user", resourceId: user.id })]);
    return c.body(exportStream(exportDocument(c.env, dbFor(c, "read"), user.id)), 200, {
      "Content-Type": "application/json; charset=utf-8",
      "Content-Disposition": `attachment; filename="herald-export-${user.id}.json"`,
    });
  },
);
