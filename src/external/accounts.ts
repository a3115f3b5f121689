import { and, eq, gt, inArray, isNull } from "drizzle-orm";
import type { Context } from "hono";
import { auditInsert } from "../audit/log";
import { commitAccountChanges, convertLogin } from "../auth/account-changes";
import { AuthMessages } from "../auth/messages";
import type { Database } from "../db/client";
import { loginConversions, organizationMembers, type UserRow, userLinks, users } from "../db/schema";
import { dbFor } from "../db/session";
import { ApiError, conflict, forbidden, Messages } from "../http/errors";
import type { AppEnv } from "../http/types";
import { hmacHex, nowIso, randomAlphanumeric } from "../lib/crypto";
import { sendSecurityNotice } from "../security/notices";
import { isReservedUsername } from "../users/reserved";
import { searchKeys } from "../users/search";
import { defaultOrganizationId, findLiveUserByEmail, isUniqueViolation } from "../users/service";
import { ExternalMessages } from "./messages";
import type { ExternalIdentity, ExternalLoginType } from "./provider";

export function conversionStateHmac(secret: string, state: string): Promise<string> {
  return hmacHex(secret, `herald-convert:${state}`);
}

async function linkedUser(db: Database, identity: ExternalIdentity): Promise<UserRow | undefined> {
  const rows = await db
    .select({ user: users })
    .from(userLinks)
    .innerJoin(users, eq(users.id, userLinks.userId))
    .where(and(eq(userLinks.issuer, identity.issuer), eq(userLinks.subject, identity.subject), eq(users.deleted, false)));
  return rows[0]?.user;
}

/**
 * Drops a link left behind by a deleted user, so the identity signs in like one never seen (docs/api.md, "External
 * sign-in"). linkedUser() ignores such a link, but it still holds the (issuer, subject) key: signUp()'s insert would
 * fail with a 409 for ever, and the e-mail and conversion paths ("do nothing on conflict") would leave the identity
 * pointing at the deleted account. Only links of deleted users are removed, so a concurrent first sign-in's fresh
 * link is never touched.
 */
function staleLinkDelete(db: Database, identity: ExternalIdentity) {
  return db
    .delete(userLinks)
    .where(
      and(
        eq(userLinks.issuer, identity.issuer),
        eq(userLinks.subject, identity.subject),
        inArray(userLinks.userId, db.select({ id: users.id }).from(users).where(eq(users.deleted, true))),
      ),
    );
}

function linkInsert(db: Database, identity: ExternalIdentity, userId: string, type: ExternalLoginType) {
  return db.insert(userLinks).values({
    issuer: identity.issuer,
    subject: identity.subject,
    userId,
    loginType: type,
    email: identity.email,
    createdAt: nowIso(),
  });
}

/** A username for a new account from the provider's handle: Coder's rules, not a reserved name, made unique with a suffix. */
async function freeUsername(db: Database, wanted: string): Promise<string> {
  const base =
    wanted
      .toLowerCase()
      .replace(/[^a-z0-9-]+/g, "-")
      .replace(/^-+|-+$/g, "")
      .replace(/-{2,}/g, "-")
      .slice(0, 24) || "user";
  for (let i = 0; i < 5; i++) {
    const candidate = i === 0 ? base : `${base}-${randomAlphanumeric(5).toLowerCase()}`;
    // A reserved name (`login`, `me`…) is never given: the suffixed ones are not reserved (docs/api.md, Conventions).
    if (isReservedUsername(candidate)) continue;
    const taken = await db
      .select({ id: users.id })
      .from(users)
      .where(and(eq(users.username, candidate), eq(users.deleted, false)))
      .limit(1);
    if (taken.length === 0) return candidate;
  }
  return `user-${randomAlphanumeric(10).toLowerCase()}`;
}

/**
 * Who an external sign-in is: the user linked to (issuer, subject); on a first sign-in, an account an
 * administrator created for this e-mail with this login type (then linked); otherwise a new account when signups
 * are allowed. A password user is never taken over by e-mail: that needs a login conversion.
 */
export async function resolveExternalUser(c: Context<AppEnv>, type: ExternalLoginType, identity: ExternalIdentity): Promise<UserRow> {
  const config = c.get("config");
  const db = dbFor(c, "write");
  let user = await linkedUser(db, identity);
  if (!user) {
    await staleLinkDelete(db, identity);
    const byEmail = await findLiveUserByEmail(db, identity.email);
    if (byEmail) {
      if (byEmail.loginType !== type) throw forbidden(AuthMessages.wrongLoginType(type, byEmail.loginType));
      // The e-mail finds an account only on the identity's first sign-in at this issuer (docs/api.md, "External
      // sign-in"): an account already linked to another subject there (say the address was reassigned at the
      // provider) is not taken over by e-mail.
      const linked = await db
        .select({ subject: userLinks.subject })
        .from(userLinks)
        .where(and(eq(userLinks.userId, byEmail.id), eq(userLinks.issuer, identity.issuer)))
        .limit(1);
      if (linked.length > 0) throw forbidden(Messages.forbidden, ExternalMessages.linkedElsewhere);
      await linkInsert(db, identity, byEmail.id, type).onConflictDoNothing();
      user = byEmail;
    } else {
      if (type !== "oidc" || !config.OIDC_ALLOW_SIGNUPS) {
        throw forbidden(ExternalMessages.signupsDisabled, ExternalMessages.signupsDisabledDetail);
      }
      user = await signUp(c, db, identity);
    }
  }
  if (user.loginType !== type) throw forbidden(AuthMessages.wrongLoginType(type, user.loginType));
  if (user.status === "suspended") throw new ApiError(401, AuthMessages.suspended);
  return user;
}

async function signUp(c: Context<AppEnv>, db: Database, identity: ExternalIdentity): Promise<UserRow> {
  const now = nowIso();
  const name = identity.name.slice(0, 128);
  const row: UserRow = {
    id: crypto.randomUUID(),
    email: identity.email,
    username: await freeUsername(db, identity.username),
    name,
    ...searchKeys({ name, email: identity.email }),
    hashedPassword: null,
    loginType: "oidc",
    status: "active",
    roles: [],
    isSystem: false,
    passwordResetRequired: false,
    deleted: false,
    createdAt: now,
    updatedAt: now,
    lastSeenAt: now,
  };
  const organizationId = await defaultOrganizationId(db);
  try {
    await db.batch([
      db.insert(users).values(row),
      db.insert(organizationMembers).values({ userId: row.id, organizationId, roles: [], createdAt: now, updatedAt: now }),
      linkInsert(db, identity, row.id, "oidc"),
      auditInsert(db, c, {
        userId: row.id,
        action: "signup",
        resourceType: "user",
        resourceId: row.id,
        diff: { login_type: "oidc", issuer: identity.issuer },
      }),
    ]);
  } catch (error) {
    if (isUniqueViolation(error)) throw conflict(ExternalMessages.signupRace);
    throw error;
  }
  return row;
}

/**
 * Completes a login conversion: the state must be this user's, unexpired and unused (it is used up here, whatever follows), the
 * provider's verified e-mail must be the user's, and the identity must not belong to anyone else. Then in one
 * transaction: login type changed, password hash cleared, link stored, every old session and token revoked.
 */
export async function completeConversion(
  c: Context<AppEnv>,
  type: ExternalLoginType,
  identity: ExternalIdentity,
  merge: { state: string; userId: string },
): Promise<UserRow> {
  const config = c.get("config");
  const db = dbFor(c, "write");
  const used = await db
    .update(loginConversions)
    .set({ usedAt: nowIso() })
    .where(
      and(
        eq(loginConversions.stateHmac, await conversionStateHmac(config.SECRET_KEY, merge.state)),
        eq(loginConversions.userId, merge.userId),
        eq(loginConversions.toType, type),
        isNull(loginConversions.usedAt),
        gt(loginConversions.expiresAt, nowIso()),
      ),
    )
    .returning({ userId: loginConversions.userId });
  if (used.length === 0) throw new ApiError(400, ExternalMessages.conversionUsed);

  const user = (
    await db
      .select()
      .from(users)
      .where(and(eq(users.id, merge.userId), eq(users.deleted, false)))
  )[0];
  if (user?.loginType !== "password") throw new ApiError(400, ExternalMessages.passwordLoginRequired);
  // A user suspended after starting a login conversion must not have the login changed and a session issued.
  if (user.status === "suspended") throw new ApiError(401, AuthMessages.suspended);
  if (identity.email.toLowerCase() !== user.email.toLowerCase()) {
    throw forbidden(Messages.forbidden, ExternalMessages.emailMismatch);
  }
  const other = await linkedUser(db, identity);
  if (other && other.id !== user.id) throw conflict(ExternalMessages.identityTaken);

  await commitAccountChanges(
    c,
    db,
    [convertLogin(db, user.id, type)],
    [
      staleLinkDelete(db, identity),
      linkInsert(db, identity, user.id, type).onConflictDoNothing(),
      auditInsert(db, c, {
        userId: user.id,
        action: "convert_login",
        resourceType: "user",
        resourceId: user.id,
        diff: { login_type: { old: "password", new: type }, issuer: identity.issuer },
      }),
    ],
  );
  sendSecurityNotice(c, { userId: user.id, event: "login_method_changed", labels: { old_login_type: "password", new_login_type: type } });
  return { ...user, loginType: type, hashedPassword: null };
}
