import * as z from "zod";
import { count, timestamp } from "../http/schemas";
import { described, named } from "../openapi/registry";

/**
 * `GET /audit`'s query (docs/security.md, "The audit log"). `q` is parsed by src/audit/search.ts; its bound here
 * refuses a huge query before any parsing. `offset` stops at a million: past the rows a deployment keeps, and SQLite
 * walks every skipped row.
 */
export const listAuditQuery = z.strictObject({
  q: z.string().max(1024).optional(),
  limit: z.coerce.number().int().min(1).max(100).default(25),
  offset: z.coerce.number().int().min(0).max(1_000_000).default(0),
});

const AuditLog = named(
  "AuditLog",
  z.strictObject({
    id: z.uuid(),
    time: timestamp,
    user: described(
      "The acting user; null for an action without one (a refused sign-in of no account) or a user that no longer resolves.",
      z.strictObject({ id: z.uuid(), username: z.string() }).nullable(),
    ),
    action: z.string(),
    resource_type: z.string(),
    resource_id: z.string(),
    ip: described("The client address Cloudflare reported; empty when the request carried none.", z.string()),
    user_agent: described("The request's User-Agent, cut to 512 characters.", z.string()),
    status_code: described("The HTTP status of the action: 200, or the refusal it recorded (401 for a failed second factor).", z.number().int()),
    description: described("A short sentence saying what happened, made from the action and the resource.", z.string()),
    additional_fields: described("What changed, as stored with the entry; never a secret.", z.record(z.string(), z.unknown())),
  }),
  'One audit log entry (docs/security.md, "The audit log").',
);

export const GetAuditLogsResponse = named("GetAuditLogsResponse", z.strictObject({ audit_logs: z.array(AuditLog), count }));

export type AuditLogEntry = z.infer<typeof AuditLog>;
