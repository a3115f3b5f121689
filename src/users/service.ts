import { and, eq, inArray, notInArray, sql } from "drizzle-orm";
import type * as z from "zod";
import { AuthMessages } from "../auth/messages";
import type { AssetReader } from "../auth/passwords/common-list";
import { checkPasswordPolicy } from "../auth/passwords/policy";
import { isSiteRole, SITE_ROLES } from "../authz/roles";
import type { Database } from "../db/client";
import { organizationMembers, organizations, type UserRow, users } from "../db/schema";
import { inSlices } from "../db/slices";
import { ApiError, badRequest, conflict } from "../http/errors";
import { UserMessages } from "./messages";
import type { User } from "./schemas";

export const DEFAULT_ORG_NAME = "default";

/** The public shape of a user (Coder's `User`), as documented (src/users/schemas.ts); never carries the password hash. */
export type UserResponse = z.infer<typeof User>;

export function toUserResponse(user: Omit<UserRow, "hashedPassword">, organizationIds: string[]): UserResponse {
  return {
    id: user.id,
    username: user.username,
    name: user.name,
    email: user.email,
    avatar_url: "",
    created_at: user.createdAt,
    updated_at: user.updatedAt,
    last_seen_at: user.lastSeenAt,
    status: user.status,
    login_type: user.loginType,
    service_account: user.isSystem,
    // Coder's clients read `is_service_account`; `service_account` stays for Herald's (docs/authorization.md, "Fields (ASVS 8.1.2)").
    is_service_account: user.isSystem,
    organization_ids: organizationIds,
    roles: user.roles.filter(isSiteRole).map((name) => ({ name, display_name: SITE_ROLES[name].displayName })),
  };
}

/** Organization ids per user, for a page of users (one query per slice of 90 ids). */
export async function organizationIdsOf(db: Database, userIds: string[]): Promise<Map<string, string[]>> {
  const result = new Map<string, string[]>(userIds.map((id) => [id, []]));
  const slices = await Promise.all(
    inSlices(userIds).map((slice) =>
      db
        .select({ userId: organizationMembers.userId, organizationId: organizationMembers.organizationId })
        .from(organizationMembers)
        .where(inArray(organizationMembers.userId, slice)),
    ),
  );
  for (const row of slices.flat()) result.get(row.userId)?.push(row.organizationId);
  return result;
}

export async function userResponse(db: Database, user: Omit<UserRow, "hashedPassword">): Promise<UserResponse> {
  return toUserResponse(user, (await organizationIdsOf(db, [user.id])).get(user.id) ?? []);
}

/**
 * The ids of live users holding one of these site roles, leaving out `except` (the actor, the account concerned): who
 * hears of account events and reported compromises (docs/api.md, "Account events").
 */
export async function liveUsersWithRoles(db: Database, roles: readonly string[], except: readonly string[]): Promise<string[]> {
  const rows = await db
    .select({ id: users.id })
    .from(users)
    .where(
      and(
        eq(users.deleted, false),
        except.length > 0 ? notInArray(users.id, [...except]) : undefined,
        sql`EXISTS (SELECT 1 FROM json_each(${users.roles}) WHERE value IN (${sql.join(
          roles.map((role) => sql`${role}`),
          sql`, `,
        )}))`,
      ),
    );
  return rows.map((row) => row.id);
}

/**
 * The password policy (docs/security.md, "Password policy"), as a 400 on every path that sets a password; a 503 while
 * its common-password list cannot be read from `assets` (the ASSETS binding).
 */
export async function assertPasswordPolicy(
  assets: AssetReader,
  password: string,
  context: { email?: string; username?: string; name?: string },
): Promise<void> {
  const { valid, details } = await checkPasswordPolicy(assets, password, context);
  if (!valid) throw badRequest(AuthMessages.invalidPassword, { validations: [{ field: "password", detail: details }] });
}

export async function findLiveUserByEmail(db: Database, email: string): Promise<UserRow | undefined> {
  const rows = await db
    .select()
    .from(users)
    .where(and(sql`lower(${users.email}) = ${email.toLowerCase()}`, eq(users.deleted, false)))
    .limit(1);
  return rows[0];
}

/** 409s that name the clashing field; only callers allowed to create users ever see them. */
export async function assertUnique(db: Database, email: string | undefined, username: string): Promise<void> {
  if (email && (await findLiveUserByEmail(db, email))) throw conflict(UserMessages.emailTaken);
  const byName = await db
    .select({ id: users.id })
    .from(users)
    .where(and(sql`lower(${users.username}) = ${username.toLowerCase()}`, eq(users.deleted, false)))
    .limit(1);
  if (byName.length > 0) throw conflict(UserMessages.usernameTaken);
}

export async function defaultOrganizationId(db: Database): Promise<string> {
  const rows = await db.select({ id: organizations.id }).from(organizations).where(eq(organizations.isDefault, true)).limit(1);
  const id = rows[0]?.id;
  if (!id) throw new ApiError(500, UserMessages.defaultOrganizationMissing);
  return id;
}

/** Unique-index races (two creates at once) surface as a constraint error: answer 409, never 500. */
export function isUniqueViolation(error: unknown): boolean {
  const text = (e: unknown): string => (e instanceof Error ? `${e.message} ${text(e.cause)}` : "");
  return /UNIQUE constraint failed/i.test(text(error));
}
