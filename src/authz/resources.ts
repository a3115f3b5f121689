import { and, eq, inArray } from "drizzle-orm";
import type { Database } from "../db/client";
import type { Env } from "../env";
import { apiKeys, organizations, users } from "../db/schema";
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

type Loader = (ctx: LookupContext, ids: string[]) => Promise<Map<string, ObjectPlacement>>;

/**
 * A2 `resource_id` lookups: for each resource type the service stores, how to find where the real objects sit.
 * One query per type for a whole request. Types without a loader have nothing stored to look up.
 */
export const PLACEMENT_LOADERS: Partial<Record<ResourceType, Loader>> = {
  user: async ({ db }, ids) => {
    const rows = await db
      .select({ id: users.id })
      .from(users)
      .where(and(inArray(users.id, ids), eq(users.deleted, false)));
    return new Map(rows.map((r) => [r.id, { ownerId: r.id }]));
  },
  api_key: async ({ db }, ids) => {
    const rows = await db.select({ id: apiKeys.id, userId: apiKeys.userId }).from(apiKeys).where(inArray(apiKeys.id, ids));
    return new Map(rows.map((r) => [r.id, { ownerId: r.userId }]));
  },
  organization: async ({ db }, ids) => {
    const rows = await db.select({ id: organizations.id }).from(organizations).where(inArray(organizations.id, ids));
    return new Map(rows.map((r) => [r.id, { orgId: r.id }]));
  },
  // Notifications live in their owner's inbox object, which only a user id finds; so a lookup can find the caller's
  // own notifications (anyone else's answer false, as an unknown id does).
  inbox_notification: async ({ env, callerId }, ids) => {
    const found = await env.USER_INBOX.get(env.USER_INBOX.idFromName(callerId)).existing(ids);
    return new Map(found.map((id) => [id, { ownerId: callerId }]));
  },
};

/** Loads placements for every (type, id) asked about, grouped by type. */
export async function loadPlacements(
  ctx: LookupContext,
  wanted: { type: ResourceType; id: string }[],
): Promise<Map<string, ObjectPlacement>> {
  const byType = new Map<ResourceType, Set<string>>();
  for (const { type, id } of wanted) {
    if (!PLACEMENT_LOADERS[type]) continue;
    const ids = byType.get(type) ?? new Set<string>();
    ids.add(id);
    byType.set(type, ids);
  }
  const found = new Map<string, ObjectPlacement>();
  await Promise.all(
    [...byType].map(async ([type, ids]) => {
      const loader = PLACEMENT_LOADERS[type];
      if (!loader) return;
      for (const [id, placement] of await loader(ctx, [...ids])) found.set(`${type}:${id}`, placement);
    }),
  );
  return found;
}
