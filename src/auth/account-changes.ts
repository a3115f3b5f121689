import { and, eq, ne, type SQL, sql } from "drizzle-orm";
import type { BatchItem, BatchResponse } from "drizzle-orm/batch";
import type { Database } from "../db/client";
import {
  apiKeys,
  notificationTargets,
  notMeUses,
  organizationMembers,
  type UserRow,
  userDevices,
  userErasures,
  userLinks,
  users,
} from "../db/schema";
import type { Env } from "../env";
import type { Background } from "../lib/background";
import { nowIso } from "../lib/crypto";
import { removeAllFactors } from "./mfa/factors";
import { announceRevocation, type Revocation } from "./revocation";

/**
 * Every change to an account's standing or credentials — deletion, roles, status, password, login type, ended keys —
 * is built here, and runs only through `commitAccountChanges`, which announces what it revoked once the batch has
 * committed (docs/architecture.md, "Account changes"). A caller cannot run the statements and forget the revocation:
 * there is no other way to run them.
 */
export interface AccountChange {
  readonly userId: string;
  readonly statements: readonly BatchItem<"sqlite">[];
  /**
   * What stops being true once the statements commit: every credential of the user, the keys whose ids the last
   * statement (a `DELETE … RETURNING id`) returned, or only the cached facts about the user.
   */
  readonly ends: "all-credentials" | "returned-keys" | "user-facts";
}

/** The request pieces a commit needs: the bindings, and somewhere to finish work after the response. */
export interface ChangeContext {
  readonly env: Env;
  readonly executionCtx: Background;
}

/** What an erased account is called from then on: unique, and naming no one. */
export const erasedUsername = (userId: string) => `deleted-${userId}`;

/**
 * The row of a deleted account keeps only what other rows refer to it by (docs/privacy.md, "Erasure"): its id, that
 * it is deleted, and its dates. Its e-mail, username and name are replaced, so nothing names or reaches the person and
 * the e-mail can sign up again; its password hash and roles are dropped.
 */
export function scrubAccount(db: Database, userId: string, updatedAt: string) {
  return db
    .update(users)
    .set({
      deleted: true,
      email: "",
      username: erasedUsername(userId),
      name: "",
      searchName: "",
      searchEmail: "",
      hashedPassword: null,
      loginType: "none",
      roles: [],
      lastSeenAt: null,
      passwordResetRequired: false,
      updatedAt,
    })
    .where(eq(users.id, userId));
}

/**
 * Deletion (docs/privacy.md, "Erasure"): at once, the row is scrubbed (`scrubAccount`) and every key, factor,
 * membership and external link goes with the account; the erasure of everything else is recorded in the same batch,
 * so it is finished even if the request dies right after (src/privacy/erasure.ts runs its steps, and the cron any
 * that did not finish).
 */
export function deleteAccount(db: Database, userId: string, now = nowIso()): AccountChange {
  return {
    userId,
    ends: "all-credentials",
    statements: [
      scrubAccount(db, userId, now),
      db.delete(organizationMembers).where(eq(organizationMembers.userId, userId)),
      // Its external identities are free again: the same person may sign up or be linked anew.
      db.delete(userLinks).where(eq(userLinks.userId, userId)),
      // Its second factors too: an authenticator app's secret is not kept for an account that is gone.
      ...removeAllFactors(db, userId),
      // Its own channels too: a target's URL is a credential to someone's channel (docs/targets.md).
      db.delete(notificationTargets).where(eq(notificationTargets.userId, userId)),
      db.insert(userErasures).values({ userId, step: "inbox", requestedAt: now, updatedAt: now }).onConflictDoNothing(),
      db.delete(apiKeys).where(eq(apiKeys.userId, userId)),
    ],
  };
}

export function setRoles(db: Database, userId: string, roles: string[], updatedAt: string): AccountChange {
  return { userId, ends: "user-facts", statements: [db.update(users).set({ roles, updatedAt }).where(eq(users.id, userId))] };
}

/** Suspension ends every session and token, as deletion does: activating the account later brings none back. */
export function setStatus(db: Database, userId: string, status: UserRow["status"], updatedAt: string): AccountChange {
  const update = db.update(users).set({ status, updatedAt }).where(eq(users.id, userId));
  if (status === "active") return { userId, ends: "user-facts", statements: [update] };
  return { userId, ends: "all-credentials", statements: [update, db.delete(apiKeys).where(eq(apiKeys.userId, userId))] };
}

/**
 * A new password ends every other credential of the user. `keep` spares the caller's own session (changing your own
 * password); `onlyIf` guards every write (a reset: only while its passcode still exists).
 */
export function setPassword(db: Database, userId: string, hashedPassword: string, options: { keep?: string; onlyIf?: SQL } = {}): AccountChange {
  const { keep, onlyIf } = options;
  const update = db
    .update(users)
    // A new password is the reset "This wasn't me" asks for (docs/security.md): password sign-in works again.
    .set({ hashedPassword, passwordResetRequired: false, updatedAt: nowIso() })
    .where(and(eq(users.id, userId), onlyIf));
  if (keep === undefined) {
    return { userId, ends: "all-credentials", statements: [update, db.delete(apiKeys).where(and(eq(apiKeys.userId, userId), onlyIf))] };
  }
  const others = and(eq(apiKeys.userId, userId), onlyIf, ne(apiKeys.id, keep));
  return { userId, ends: "returned-keys", statements: [update, db.delete(apiKeys).where(others).returning({ id: apiKeys.id })] };
}

/** A password user becomes an external one: no password left, and every credential issued under the old one ends. */
export function convertLogin(db: Database, userId: string, loginType: UserRow["loginType"]): AccountChange {
  return {
    userId,
    ends: "all-credentials",
    statements: [
      db.update(users).set({ loginType, hashedPassword: null, updatedAt: nowIso() }).where(eq(users.id, userId)),
      db.delete(apiKeys).where(eq(apiKeys.userId, userId)),
    ],
  };
}

/**
 * A second factor added or removed, or new recovery codes (docs/second-factor.md): credentials live on, but what was
 * cached about the user — whether they have a factor, which MFA_REQUIRED_ROLES asks — is stale.
 */
export function changeFactors(userId: string, statements: readonly BatchItem<"sqlite">[]): AccountChange {
  return { userId, ends: "user-facts", statements };
}

/**
 * "This wasn't me" (docs/security.md): password sign-in refused until a passcode reset, the devices forgotten (so the
 * next sign-in from any of them is announced), every session and token ended (the last statement answers each ended
 * key's id and kind), and the event marked used, last. Every write is guarded by the event not being used yet, so a
 * link used twice changes nothing the second time, even when both arrive at once: the batch is one transaction.
 */
export function reportCompromise(db: Database, userId: string, eventId: string): { change: AccountChange; markUsed: BatchItem<"sqlite"> } {
  const unused = sql`NOT EXISTS (SELECT 1 FROM ${notMeUses} WHERE ${notMeUses.eventId} = ${eventId})`;
  const now = nowIso();
  return {
    change: {
      userId,
      ends: "returned-keys",
      statements: [
        db
          .update(users)
          .set({ passwordResetRequired: true, updatedAt: now })
          .where(and(eq(users.id, userId), unused)),
        db.delete(userDevices).where(and(eq(userDevices.userId, userId), unused)),
        db
          .delete(apiKeys)
          .where(and(eq(apiKeys.userId, userId), unused))
          .returning({ id: apiKeys.id, loginType: apiKeys.loginType }),
      ],
    },
    markUsed: db.insert(notMeUses).values({ eventId, userId, usedAt: now }).onConflictDoNothing().returning({ eventId: notMeUses.eventId }),
  };
}

/** Ends the user's keys that `which` selects (all of them when omitted): logout, key deletion, ending sessions. */
export function endKeys(db: Database, userId: string, which?: SQL): AccountChange {
  return {
    userId,
    ends: "returned-keys",
    statements: [
      db
        .delete(apiKeys)
        .where(and(eq(apiKeys.userId, userId), which))
        .returning({ id: apiKeys.id }),
    ],
  };
}

/**
 * Ends the user's oldest login sessions (by last use) so that `keep` remain, before a sign-in adds one: a person
 * signs in from a handful of browsers, and a script or a stolen password signing in again and again must not pile
 * up sessions without end (SESSIONS_MAX_PER_USER, docs/security.md, "What one user can make Herald hold"). API tokens
 * have their own cap; the sockets of an ended session close with 4401.
 */
export function endOldestSessions(db: Database, userId: string, keep: number): AccountChange {
  return endKeys(
    db,
    userId,
    sql`${apiKeys.loginType} != 'token' AND ${apiKeys.id} NOT IN (
      SELECT id FROM api_keys WHERE user_id = ${userId} AND login_type != 'token' ORDER BY last_used DESC, created_at DESC LIMIT ${keep}
    )`,
  );
}

/**
 * Runs the changes and `also` (the audit row, a consumed passcode, a new session…) in one batch — one transaction —
 * then announces each change's revocation. Answers the results of `also`, in order, the revocations made, and what
 * each change's last statement answered (the keys a `returned-keys` change ended).
 */
export async function commitAccountChanges<T extends readonly BatchItem<"sqlite">[]>(
  c: ChangeContext,
  db: Database,
  changes: readonly AccountChange[],
  also: T,
): Promise<{ results: BatchResponse<T>; revocations: Revocation[]; returned: unknown[] }> {
  const statements = [...changes.flatMap((change) => change.statements), ...also];
  const [first, ...rest] = statements;
  if (!first) return { results: [] as unknown as BatchResponse<T>, revocations: [], returned: [] };
  const all: unknown[] = await db.batch([first, ...rest]);
  const revocations: Revocation[] = [];
  const returned: unknown[] = [];
  let offset = 0;
  for (const change of changes) {
    offset += change.statements.length;
    returned.push(all[offset - 1]);
    revocations.push(revocationOf(change, all[offset - 1]));
  }
  for (const revocation of revocations) announceRevocation(revocation, c.env, c.executionCtx);
  return { results: all.slice(offset) as BatchResponse<T>, revocations, returned };
}

function revocationOf(change: AccountChange, lastResult: unknown): Revocation {
  const { userId } = change;
  switch (change.ends) {
    case "all-credentials":
      return { kind: "credentials-ended", userId, keyIds: "all" };
    case "returned-keys":
      return { kind: "credentials-ended", userId, keyIds: (lastResult as { id: string }[]).map((row) => row.id) };
    case "user-facts":
      return { kind: "user-changed", userId };
  }
}
