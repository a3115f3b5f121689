import { and, eq, inArray, sql } from "drizzle-orm";
import type { Database } from "../db/client";
import { apiKeys, organizations, users } from "../db/schema";
import { inSlices } from "../db/slices";
import type { Env } from "../env";
import { userInbox } from "../inbox/address";
import type { ResourceType } from "./catalog";

/** Where a stored object sits for authorization: its owner and organization. */
export interface ObjectPlacement {
  ownerId?: string;
  orgId?: string;
}

/** What a lookup may use: D1, the bindings, and who is asking. */
export interface LookupContext {
  db: Database;
  env: Env;
  callerId: string;
}

/**
 * `POST /authcheck` `resource_id` lookups for types stored in D1: one SELECT per type yielding (id, owner, org), all of them sent
 * in a single D1 batch — one round trip however many checks a request holds. Computed columns carry aliases: D1
 * returns rows as objects, so two columns of one name would collide.
 */
const D1_LOOKUPS = {
  user: (db: Database, ids: string[]) =>
    db
      .select({ id: users.id, ownerId: sql<string | null>`${users.id}`.as("owner_id"), orgId: sql<string | null>`NULL`.as("org_id") })
      .from(users)
      .where(and(inArray(users.id, ids), eq(users.deleted, false))),
  api_key: (db: Database, ids: string[]) =>
    db
      .select({ id: apiKeys.id, ownerId: apiKeys.userId, orgId: sql<string | null>`NULL`.as("org_id") })
      .from(apiKeys)
      .where(inArray(apiKeys.id, ids)),
  organization: (db: Database, ids: string[]) =>
    db
      .select({ id: organizations.id, ownerId: sql<string | null>`NULL`.as("owner_id"), orgId: sql<string | null>`${organizations.id}`.as("org_id") })
      .from(organizations)
      .where(inArray(organizations.id, ids)),
} as const;

type D1Type = keyof typeof D1_LOOKUPS;
const isD1Type = (type: ResourceType): type is D1Type => Object.hasOwn(D1_LOOKUPS, type);

/**
 * Notifications live in their owner's inbox object, which only a user id finds; so a lookup can find the caller's
 * own notifications (anyone else's answer false, as an unknown id does).
 */
async function inboxPlacements({ env, callerId }: LookupContext, ids: string[]): Promise<[string, ObjectPlacement][]> {
  const found = await userInbox(env, callerId).existing(ids);
  return found.map((id) => [`inbox_notification:${id}`, { ownerId: callerId }]);
}

/** Loads placements for every (type, id) asked about; keys of the result are `<type>:<id>`. */
export async function loadPlacements(ctx: LookupContext, wanted: { type: ResourceType; id: string }[]): Promise<Map<string, ObjectPlacement>> {
  const byType = new Map<ResourceType, string[]>();
  for (const { type, id } of wanted) byType.set(type, [...(byType.get(type) ?? []), id]);

  // One query per type and slice of ids (a statement binds at most 100 parameters), all in one batch.
  const lookups = [...byType.keys()].filter(isD1Type).flatMap((type) => inSlices([...new Set(byType.get(type))]).map((ids) => ({ type, ids })));
  const d1Types = lookups.map((l) => l.type);
  const queries = lookups.map(({ type, ids }) => D1_LOOKUPS[type](ctx.db, ids));
  const inboxIds = byType.get("inbox_notification");
  const [d1Results, inbox] = await Promise.all([
    queries.length > 0 ? ctx.db.batch(queries as [(typeof queries)[number], ...(typeof queries)[number][]]) : Promise.resolve([]),
    inboxIds ? inboxPlacements(ctx, [...new Set(inboxIds)]) : Promise.resolve([]),
  ]);

  const found = new Map<string, ObjectPlacement>(inbox);
  d1Results.forEach((rows, i) => {
    for (const row of rows) {
      found.set(`${d1Types[i]}:${row.id}`, { ...(row.ownerId ? { ownerId: row.ownerId } : {}), ...(row.orgId ? { orgId: row.orgId } : {}) });
    }
  });
  return found;
}
