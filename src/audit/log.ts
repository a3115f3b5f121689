import type { SQL } from "drizzle-orm";
import type { Context } from "hono";
import type { Database } from "../db/client";
import { insertWhere } from "../db/insert-where";
import { type AuditLogInsert, auditLogs } from "../db/schema";
import type { AppEnv } from "../http/types";
import { nowIso } from "../lib/crypto";
import { USER_AGENT_MAX } from "../security/device";

export interface AuditEvent {
  action: string;
  resourceType: string;
  resourceId: string;
  /** What changed; callers never put secrets or hashes here. */
  diff?: Record<string, unknown>;
  /** The actor; defaults to the authenticated caller. */
  userId?: string | null;
  /**
   * The HTTP status the action answered: 200 unless the entry records a refusal, such as a failed second factor
   * (401). Shown as `status_code` (docs/security.md, "The audit log").
   */
  statusCode?: number;
}

/**
 * Builds the audit insert for a state change so callers can put it in the same `db.batch()` as the change itself:
 * either both commit or neither does.
 */
export function auditInsert(db: Database, c: Context<AppEnv>, event: AuditEvent) {
  return db.insert(auditLogs).values(auditRow(c, event));
}

/**
 * The audit insert of a change that may not happen: written only if `condition` holds when it runs, in the same
 * `db.batch()` as the change (a target created only within its user's cap, docs/targets.md).
 */
export function auditInsertWhere(db: Database, c: Context<AppEnv>, event: AuditEvent, condition: SQL) {
  return insertWhere(db, auditLogs, auditRow(c, event), condition);
}

function auditRow(c: Context<AppEnv>, event: AuditEvent): Required<AuditLogInsert> {
  return {
    id: crypto.randomUUID(),
    time: nowIso(),
    userId: event.userId !== undefined ? event.userId : (c.get("auth")?.user.id ?? null),
    action: event.action,
    resourceType: event.resourceType,
    resourceId: event.resourceId,
    diff: event.diff ?? {},
    ip: clientIp(c),
    requestId: c.get("requestId") ?? "",
    userAgent: (c.req.header("User-Agent") ?? "").slice(0, USER_AGENT_MAX),
    statusCode: event.statusCode ?? 200,
  };
}

/**
 * An entry for what Herald did by itself, outside any request: no actor, address or request id. Delivery writes one
 * when a push service says a subscription is gone and Herald removes it (docs/push.md, "Delivery").
 */
export function systemAuditInsert(db: Database, event: Omit<AuditEvent, "userId">) {
  return db.insert(auditLogs).values({
    id: crypto.randomUUID(),
    time: nowIso(),
    userId: null,
    action: event.action,
    resourceType: event.resourceType,
    resourceId: event.resourceId,
    diff: event.diff ?? {},
    ip: "",
    requestId: "",
    userAgent: "",
    statusCode: event.statusCode ?? 200,
  });
}

/** The client address Cloudflare reports; local runs have none. */
export function clientIp(c: Context): string {
  return c.req.header("CF-Connecting-IP") ?? "";
}
