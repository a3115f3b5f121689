import { eq } from "drizzle-orm";
import type { Context } from "hono";
import { auditInsert } from "../audit/log";
import type { Database } from "../db/client";
import { apiKeys, type UserRow, users } from "../db/schema";
import type { AppEnv } from "../http/types";
import { commitAccountChanges, endKeys, endOldestSessions } from "./account-changes";
import { setSessionCookie } from "./cookies";
import { issueKey, loginSessionLifetime } from "./keys";
import { presentedSession } from "./session";

/**
 * Signs `user` in once their credential has been checked (a password for A3, a passkey): a new login session, in one
 * batch with ending the session this browser's cookie carried (docs/security.md, 7.2.4), the user's least recently
 * used sessions past SESSIONS_MAX_PER_USER (docs/security.md, "What one user can make Herald hold"), the user's
 * `last_seen_at` and the `login` audit row (`diff` says how, beside the replaced session); then the session cookie.
 * Answers the session token.
 */
export async function startLoginSession(c: Context<AppEnv>, db: Database, user: UserRow, diff: Record<string, unknown> = {}): Promise<string> {
  const config = c.get("config");
  const session = await issueKey(db, { userId: user.id, loginType: "password", lifetimeMs: loginSessionLifetime(config) });
  const replaced = await presentedSession(c, db);
  // Signing in over a session this browser still holds replaces it, in the same transaction.
  const replacing = replaced ? [endKeys(db, replaced.userId, eq(apiKeys.id, replaced.id))] : [];
  const pruning = endOldestSessions(db, user.id, config.SESSIONS_MAX_PER_USER - 1);
  await commitAccountChanges(
    c,
    db,
    [...replacing, pruning],
    [
      session.insert,
      db.update(users).set({ lastSeenAt: session.row.createdAt }).where(eq(users.id, user.id)),
      auditInsert(db, c, {
        userId: user.id,
        action: "login",
        resourceType: "api_key",
        resourceId: session.row.id,
        ...(replaced || Object.keys(diff).length > 0 ? { diff: { ...diff, ...(replaced ? { replaced: replaced.id } : {}) } } : {}),
      }),
    ],
  );
  setSessionCookie(c, config, session.token, new Date(session.row.expiresAt));
  return session.token;
}
