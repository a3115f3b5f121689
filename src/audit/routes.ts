import { Hono } from "hono";
import { requireAuth } from "../auth/session";
import { assertCan } from "../authz/guard";
import { dbFor } from "../db/session";
import { badRequest } from "../http/errors";
import type { AppEnv } from "../http/types";
import { queryParams } from "../http/validate";
import { describeRoute, noPermission } from "../openapi/describe";
import { AUDIT_SEARCH_KEYS, AuditMessages } from "./messages";
import { type AuditLogEntry, GetAuditLogsResponse, listAuditQuery } from "./schemas";
import { auditPage, parseAuditSearch } from "./search";
import { describeEntry } from "./sentences";

/** Reading the audit log (docs/security.md, "The audit log"). */
export const auditRoutes = new Hono<AppEnv>().get(
  "/audit",
  describeRoute({
    operationId: "getAuditLogs",
    summary: "Read the audit log, newest first, searchable",
    description:
      "The site-wide log needs `audit_log` `read` at the site level (owners and auditors); an organization's auditor is refused, since an entry belongs to no organization.",
    tags: ["Audit"],
    access: "audit-reader",
    scope: "audit_log:read",
    paramDocs: {
      q: `Space-separated \`key:value\` terms, all of which must match: ${AUDIT_SEARCH_KEYS.map((k) => `\`${k}:\``).join(", ")}. Values are compared whole (\`%\` and \`_\` are plain characters); \`action\`, \`resource_type\`, \`username\` and \`email\` ignore ASCII case; \`username\` and \`email\` name the acting user; \`date_from\` and \`date_to\` are UTC days (YYYY-MM-DD), both included. A term without a key, an unknown or repeated key, an empty, over-long or malformed value, or \`date_from\` after \`date_to\` → 400 \`${AuditMessages.invalidSearch}\` with a \`q\` validation.`,
      limit: "Entries per page, 1–100 (default 25).",
      offset: "Entries to skip, 0–1,000,000 (default 0).",
    },
    responses: [
      {
        status: 200,
        description: "One page, newest first (time, then id, descending), and the exact count of entries that match.",
        schema: GetAuditLogsResponse,
      },
    ],
    errors: noPermission("read the audit log"),
  }),
  requireAuth,
  queryParams(listAuditQuery),
  async (c) => {
    const { q, limit, offset } = c.req.valid("query");
    assertCan(c, "read", { type: "audit_log" });
    const parsed = parseAuditSearch(q ?? "");
    if (!parsed.ok) throw badRequest(AuditMessages.invalidSearch, { validations: parsed.problems.map((detail) => ({ field: "q", detail })) });
    const db = dbFor(c, "read");
    const [page, total] = await db.batch(auditPage(db, parsed.search, limit, offset));
    const entries: AuditLogEntry[] = page.map(({ entry, actor, target }) => ({
      id: entry.id,
      time: entry.time,
      user: entry.userId !== null && actor !== null ? { id: entry.userId, username: actor } : null,
      action: entry.action,
      resource_type: entry.resourceType,
      resource_id: entry.resourceId,
      ip: entry.ip,
      user_agent: entry.userAgent,
      status_code: entry.statusCode,
      description: describeEntry({ ...entry, actor, target }),
      additional_fields: entry.diff,
    }));
    return c.json({ audit_logs: entries, count: total[0]?.n ?? 0 }, 200);
  },
);
