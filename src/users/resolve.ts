import { and, eq, sql } from "drizzle-orm";
import type { Context } from "hono";
import { can } from "../authz/guard";
import { database } from "../db/client";
import { users, type UserRow } from "../db/schema";
import { notFound } from "../http/errors";
import { canonicalId, isUuidShaped } from "../http/ids";
import type { AppEnv } from "../http/types";

/**
 * docs/api.md (Conventions) `{user}`: `me`, a UUID or a username (case-insensitive). Missing, deleted, or not readable by the caller
 * all answer the same 404, so the endpoint does not reveal which users exist.
 */
export async function resolveUser(c: Context<AppEnv>, param: string): Promise<UserRow> {
  const db = database(c.env.DB);
  const auth = c.var.auth;
  const target = param === "me" ? auth.user.id : param;
  const where = isUuidShaped(target)
    ? eq(users.id, canonicalId(target))
    : sql`lower(${users.username}) = ${target.toLowerCase()}`;
  const rows = await db.select().from(users).where(and(where, eq(users.deleted, false))).limit(1);
  const user = rows[0];
  // The caller always resolves itself (that discloses nothing); what it may then do is each endpoint's check.
  if (!user || (user.id !== auth.user.id && !can(c, "read", { type: "user", ownerId: user.id }))) throw notFound();
  return user;
}
