import { and, count, desc, eq, gte, inArray, lt, type SQL, sql } from "drizzle-orm";
import { alias } from "drizzle-orm/sqlite-core";
import type { Database } from "../db/client";
import { auditLogs, users } from "../db/schema";
import { AUDIT_SEARCH_KEYS, AuditMessages } from "./messages";

/**
 * `GET /audit?q=` (docs/security.md, "The audit log"): space-separated `key:value` terms, each key at most once, all
 * of them narrowing (AND). Every value is compared whole — never as a LIKE pattern, so `%` and `_` are themselves —
 * `action`, `resource_type`, `username` and `email` without regard to ASCII case. `username` and `email` name the
 * acting user; `date_from` and `date_to` are UTC days, both included. A term without a key, an unknown or repeated
 * key, an empty, over-long or malformed value is a problem the 400 names, never silently ignored.
 */
export interface AuditSearch {
  action?: string;
  resourceType?: string;
  resourceId?: string;
  username?: string;
  email?: string;
  ip?: string;
  /** The first instant included, RFC 3339 (as `time` is stored). */
  from?: string;
  /** The first instant no longer included: midnight after `date_to`. */
  before?: string;
}

type SearchKey = (typeof AUDIT_SEARCH_KEYS)[number];
export type AuditSearchResult = { ok: true; search: AuditSearch } | { ok: false; problems: string[] };

/** The longest value each key takes: an e-mail's 320, the rest generous for ids and addresses; a long date is a bad date. */
const MAX_VALUE: Record<SearchKey, number> = {
  action: 64,
  resource_type: 64,
  resource_id: 128,
  username: 64,
  email: 320,
  ip: 64,
  date_from: 64,
  date_to: 64,
};

/** Quoted in a problem: a hostile term is named, not echoed whole. */
const quoted = (text: string) => (text.length > 40 ? `${text.slice(0, 40)}…` : text);

function isSearchKey(key: string): key is SearchKey {
  return (AUDIT_SEARCH_KEYS as readonly string[]).includes(key);
}

/** Midnight UTC of a YYYY-MM-DD day, as the stored times are written; undefined when it is no such day. */
function dayStart(value: string): Date | undefined {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (!match) return undefined;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const date = new Date(Date.UTC(year, month - 1, day));
  // Date.UTC rolls 2024-02-30 over into March: only a day that exists comes back as written.
  if (date.getUTCFullYear() !== year || date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) return undefined;
  return date;
}

export function parseAuditSearch(query: string): AuditSearchResult {
  const search: AuditSearch = {};
  const problems: string[] = [];
  const seen = new Set<SearchKey>();
  let from: Date | undefined;
  let to: Date | undefined;
  for (const term of query.split(/\s+/).filter((t) => t !== "")) {
    const colon = term.indexOf(":");
    if (colon <= 0) {
      problems.push(AuditMessages.searchNoKey(quoted(term)));
      continue;
    }
    const key = term.slice(0, colon).toLowerCase();
    const value = term.slice(colon + 1);
    if (!isSearchKey(key)) {
      problems.push(AuditMessages.searchUnknownKey(quoted(key)));
      continue;
    }
    if (seen.has(key)) {
      problems.push(AuditMessages.searchTwice(key));
      continue;
    }
    seen.add(key);
    if (value === "") {
      problems.push(AuditMessages.searchNeedsValue(key));
      continue;
    }
    if (value.length > MAX_VALUE[key]) {
      problems.push(AuditMessages.searchTooLong(key, MAX_VALUE[key]));
      continue;
    }
    switch (key) {
      case "action":
        search.action = value.toLowerCase();
        break;
      case "resource_type":
        search.resourceType = value.toLowerCase();
        break;
      case "resource_id":
        search.resourceId = value;
        break;
      case "username":
        search.username = value;
        break;
      case "email":
        search.email = value;
        break;
      case "ip":
        search.ip = value;
        break;
      case "date_from":
      case "date_to": {
        const day = dayStart(value);
        if (!day) problems.push(AuditMessages.searchBadDate(key));
        else if (key === "date_from") from = day;
        else to = day;
        break;
      }
    }
  }
  if (from && to && from > to) problems.push(AuditMessages.searchDatesReversed);
  if (from) search.from = from.toISOString();
  if (to) search.before = new Date(to.getTime() + 86_400_000).toISOString();
  return problems.length > 0 ? { ok: false, problems } : { ok: true, search };
}

/**
 * The search as one condition on `audit_logs`. Each term can use an index (docs/security.md, "The audit log"):
 * `action` and the acting user their own, with `time` after them; the resource its pair; the dates `time`'s.
 * The acting user is found by name among every user, deleted ones included: their history stays searchable.
 */
function auditFilter(db: Database, search: AuditSearch): SQL | undefined {
  const filters: SQL[] = [];
  if (search.action !== undefined) filters.push(eq(auditLogs.action, search.action));
  if (search.resourceType !== undefined) filters.push(eq(auditLogs.resourceType, search.resourceType));
  if (search.resourceId !== undefined) filters.push(eq(auditLogs.resourceId, search.resourceId));
  if (search.ip !== undefined) filters.push(eq(auditLogs.ip, search.ip));
  // lower() on both sides: the same (ASCII) folding for the stored name and the one asked for.
  if (search.username !== undefined) {
    const named = db.select({ id: users.id }).from(users).where(sql`lower(${users.username}) = lower(${search.username})`);
    filters.push(inArray(auditLogs.userId, named));
  }
  if (search.email !== undefined) {
    const named = db.select({ id: users.id }).from(users).where(sql`lower(${users.email}) = lower(${search.email})`);
    filters.push(inArray(auditLogs.userId, named));
  }
  if (search.from !== undefined) filters.push(gte(auditLogs.time, search.from));
  if (search.before !== undefined) filters.push(lt(auditLogs.time, search.before));
  return filters.length > 0 ? and(...filters) : undefined;
}

/** The acting user, and the user an entry is about when its resource is one: two looks at `users`. */
const actor = alias(users, "actor");
const target = alias(users, "target");

/**
 * One page of the search, newest first (time, then id), with the names of its actors and users, and the exact count
 * of its matches: two statements for one D1 batch.
 */
export function auditPage(db: Database, search: AuditSearch, limit: number, offset: number) {
  const where = auditFilter(db, search);
  return [
    db
      // Named apart: both columns are `username`, and a batch's rows come back keyed by column name.
      .select({
        entry: auditLogs,
        actor: sql<string | null>`${actor.username}`.as("actor_username"),
        target: sql<string | null>`${target.username}`.as("target_username"),
      })
      .from(auditLogs)
      .leftJoin(actor, eq(actor.id, auditLogs.userId))
      .leftJoin(target, and(eq(auditLogs.resourceType, "user"), eq(target.id, auditLogs.resourceId)))
      .where(where)
      .orderBy(desc(auditLogs.time), desc(auditLogs.id))
      .limit(limit)
      .offset(offset),
    db.select({ n: count() }).from(auditLogs).where(where),
  ] as const;
}
