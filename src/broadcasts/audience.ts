import { type SQL, sql } from "drizzle-orm";
import type { BroadcastAudience } from "../db/schema";

/**
 * Who a broadcast reaches (docs/broadcasts.md, "Audience"), as a condition on `users`: active, not deleted, created
 * no later than the broadcast (someone who signs up while it fans out is not in it), and then what the audience
 * names. System users (service accounts) are in it only when listed by id. Id lists travel as one JSON parameter
 * read with json_each, so a list of 1,000 ids is one bound parameter, not 1,000 (D1 binds at most 100).
 */
export function audienceCondition(audience: BroadcastAudience, createdAt: string): SQL {
  const live = sql`users.status = 'active' AND users.deleted = 0 AND users.created_at <= ${createdAt}`;
  if ("user_ids" in audience) {
    return sql`${live} AND users.id IN (SELECT value FROM json_each(${JSON.stringify(audience.user_ids)}))`;
  }
  const people = sql`${live} AND users.is_system = 0`;
  if ("organization_id" in audience) {
    return sql`${people} AND users.id IN (SELECT user_id FROM organization_members WHERE organization_id = ${audience.organization_id})`;
  }
  if ("roles" in audience && !audience.roles.includes("member")) {
    return sql`${people} AND EXISTS (SELECT 1 FROM json_each(users.roles) WHERE value IN (SELECT value FROM json_each(${JSON.stringify(audience.roles)})))`;
  }
  // `{"all": true}`, or roles that include `member`: every user holds it.
  return people;
}

/** Shards of the audience: user ids are random (v4), so ranges of the first hex digit hold equal shares. */
const SHARDS = 16;
const HEX = "0123456789abcdef";

/** A listed audience (≤ 1,000 ids) is one page; any other is read as 16 chains in parallel (docs/broadcasts-at-scale.md). */
export function shardCount(audience: BroadcastAudience): number {
  return "user_ids" in audience ? 1 : SHARDS;
}

/** The user-id range of shard `shard` of `of`: `[low, high)`, compared as text ("g" sorts after every hex digit). */
export function shardRange(shard: number, of: number): { low: string; high: string } {
  const step = HEX.length / of;
  return { low: HEX[shard * step] ?? "", high: HEX[(shard + 1) * step] ?? "g" };
}
