import { eq } from "drizzle-orm";
import type { Context } from "hono";
import { auditInsert } from "../audit/log";
import type { Database } from "../db/client";
import { type AuthMethod, apiKeys, users } from "../db/schema";
import type { AppEnv } from "../http/types";
import { requestOrigin } from "../security/device";
import { noticeNewDevice } from "../security/notices";
import { commitAccountChanges, endKeys, endOldestSessions } from "./account-changes";
import { setSessionCookie } from "./cookies";
import { issueKey, loginSessionLifetime } from "./keys";
import { presentedSession } from "./session";

export interface NewSession {
  userId: string;
  loginType: "password" | "oidc" | "github";
  /** What the user proved, recorded on the session with the time (docs/second-factor.md, "Step-up"). */
  methods: AuthMethod[];
  /** Added to the audit entry's diff (the provider, the second factor used). */
  diff?: Record<string, unknown>;
}

/**
 * The end of every sign-in — password, second factor, OpenID Connect, GitHub: a new login session, replacing the one
 * the browser's cookie still holds (docs/security.md, 7.2.4) and pruning the user's oldest past
 * SESSIONS_MAX_PER_USER, committed with its audit entry in one transaction; then the session cookie, and after the
 * response the new-device check (docs/security.md, "Devices"). Answers the token, shown to the client once.
 */
export async function startSession(c: Context<AppEnv>, db: Database, start: NewSession): Promise<string> {
  const config = c.get("config");
  const session = await issueKey(db, {
    userId: start.userId,
    loginType: start.loginType,
    methods: start.methods,
    lifetimeMs: loginSessionLifetime(config),
    origin: requestOrigin(c.req.raw),
  });
  const replaced = await presentedSession(c, db);
  // Signing in over a session this browser still holds replaces it, in the same transaction.
  const replacing = replaced ? [endKeys(db, replaced.userId, eq(apiKeys.id, replaced.id))] : [];
  const pruning = endOldestSessions(db, start.userId, config.SESSIONS_MAX_PER_USER - 1);
  const diff = { ...start.diff, ...(replaced ? { replaced: replaced.id } : {}) };
  await commitAccountChanges(
    c,
    db,
    [...replacing, pruning],
    [
      session.insert,
      db.update(users).set({ lastSeenAt: session.row.createdAt }).where(eq(users.id, start.userId)),
      auditInsert(db, c, { userId: start.userId, action: "login", resourceType: "api_key", resourceId: session.row.id, diff }),
    ],
  );
  setSessionCookie(c, config, session.token, new Date(session.row.expiresAt));
  noticeNewDevice(c, start.userId);
  return session.token;
}
