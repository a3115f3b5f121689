import { and, eq, sql } from "drizzle-orm";
import type { Context } from "hono";
import { can } from "../authz/guard";
import { type UserRow, users } from "../db/schema";
import { readFresh } from "../db/session";
import { notFound } from "../http/errors";
import { canonicalId, isUuidShaped } from "../http/ids";
import type { AppEnv } from "../http/types";
import { SELF } from "./reserved";

/**
 * docs/api.md (Conventions) `{user}`: `me`, a UUID or a username (case-insensitive). Missing, deleted, or not readable by the caller
 * all answer the same 404, so the endpoint does not reveal which users exist.
 */
export async function resolveUser(c: Context<AppEnv>, param: string): Promise<UserRow> {
  const auth = c.get("auth");
  const target = param === SELF ? auth.user.id : param;
  const where = isUuidShaped(target) ? eq(users.id, canonicalId(target)) : sql`lower(${users.username}) = ${target.toLowerCase()}`;
  // The caller always resolves itself (that discloses nothing); what it may then do is each endpoint's check.
  const readable = (user: UserRow) => user.id === auth.user.id || can(c, "read", { type: "user", ownerId: user.id });
  // A user just created is found even where a replica has not seen it yet: a 404 is checked on the primary first
  // (docs/consistency.md), an unreadable user's too, so the two 404s take as long. In a route that writes, the
  // request's session is the primary's already.
  const user = await readFresh(
    c,
    async (db) =>
      (
        await db
          .select()
          .from(users)
          .where(and(where, eq(users.deleted, false)))
          .limit(1)
      )[0],
    readable,
  );
  if (!user || !readable(user)) throw notFound();
  return user;
}
