import { and, asc, count, eq, type SQL, sql } from "drizzle-orm";
import { type Context, Hono } from "hono";
import { auditInsert } from "../audit/log";
import { commitAccountChanges, deleteAccount, setPassword, setRoles, setStatus } from "../auth/account-changes";
import { AuthMessages } from "../auth/messages";
import { assertSecondFactorPolicy } from "../auth/mfa/policy";
import { hashPassword, verifyPassword } from "../auth/passwords/hash";
import { limitSensitive } from "../auth/rate-limit";
import { refuseCrossSite, requireAuth, requireAuthToEnrol } from "../auth/session";
import { requireRecentAuth } from "../auth/step-up";
import { assertCan, assertScope, can } from "../authz/guard";
import type { Database } from "../db/client";
import { organizationMembers, organizations, type UserRow, users } from "../db/schema";
import { dbFor, readFresh } from "../db/session";
import { ApiError, badRequest, conflict, forbidden, Messages } from "../http/errors";
import { ResponseBody } from "../http/schemas";
import type { AppEnv } from "../http/types";
import { jsonBody, queryParams } from "../http/validate";
import { nowIso } from "../lib/crypto";
import { describeRoute, type Errors, errors, NO_BODY, noPermission, PASSWORD_CHECK_UNAVAILABLE, RATE, USER_404 } from "../openapi/describe";
import { runErasure } from "../privacy/erasure";
import { sendSecurityNotice } from "../security/notices";
import { notifyAccountEvent } from "./events";
import { UserMessages } from "./messages";
import { resolveUser } from "./resolve";
import {
  CreateFirstUserResponse,
  changePasswordBody,
  createFirstUserBody,
  createUserBody,
  GetUsersResponse,
  listUsersQuery,
  User,
  updateRolesBody,
  userPath,
} from "./schemas";
import { parseUserSearch, searchFilters, searchKeys } from "./search";
import {
  assertPasswordPolicy,
  assertUnique,
  DEFAULT_ORG_NAME,
  defaultOrganizationId,
  isUniqueViolation,
  organizationIdsOf,
  toUserResponse,
  userResponse,
} from "./service";

const OWNER_GUARD: Errors = { 403: "Only an owner may manage another owner." };
const INVALID_PASSWORD: Errors = { 400: `The password fails the policy: \`${AuthMessages.invalidPassword}\` with a \`password\` validation.` };

/** Only owners act on owners: a user-admin must not take over an owner's account by suspending or re-keying it. */
function assertMayManage(c: Context<AppEnv>, target: UserRow) {
  if (target.roles.includes("owner") && !c.get("auth").subject.siteRoles.includes("owner")) {
    throw forbidden(Messages.forbidden, UserMessages.ownerManagesOwner);
  }
}

async function firstUser(db: Database): Promise<{ id: string } | undefined> {
  return (await db.select({ id: users.id }).from(users).limit(1))[0];
}

/** Accounts (docs/api.md, Sign-in, accounts and authorization): bootstrap, create/list/get/delete, roles, status and password. */
export const userRoutes = new Hono<AppEnv>()
  .get(
    "/users/first",
    describeRoute({
      operationId: "checkFirstUser",
      summary: "Whether the first user (the initial owner) exists",
      tags: ["Users"],
      responses: [{ status: 200, description: `\`${UserMessages.firstUserExists}\``, schema: ResponseBody }],
      errors: { 404: `No user exists yet: \`${UserMessages.firstUserMissing}\`` },
    }),
    async (c) => {
      // The first user, just created, is found even where a replica has not seen it yet (docs/consistency.md).
      if (await readFresh(c, firstUser)) return c.json({ message: UserMessages.firstUserExists }, 200);
      throw new ApiError(404, UserMessages.firstUserMissing);
    },
  )
  .post(
    "/users/first",
    describeRoute({
      operationId: "createFirstUser",
      summary: "Bootstrap the first owner and the default organization",
      tags: ["Users"],
      responses: [{ status: 201, description: "Created.", schema: CreateFirstUserResponse }],
      errors: errors(INVALID_PASSWORD, PASSWORD_CHECK_UNAVAILABLE, { 409: UserMessages.firstUserConflict }),
    }),
    refuseCrossSite,
    jsonBody(createFirstUserBody),
    async (c) => {
      const body = c.req.valid("json");
      const db = dbFor(c, "write");
      if (await firstUser(db)) throw conflict(UserMessages.firstUserConflict);
      await assertPasswordPolicy(c.env.ASSETS, body.password, body);
      const now = nowIso();
      const userId = crypto.randomUUID();
      const organizationId = crypto.randomUUID();
      const hashedPassword = await hashPassword(body.password);
      try {
        // The whole bootstrap commits at once. The default organization's unique name makes a racing second
        // bootstrap fail as a whole, so there is never a second first owner.
        await db.batch([
          db.insert(users).values({
            id: userId,
            email: body.email,
            username: body.username,
            name: body.name ?? "",
            ...searchKeys({ name: body.name ?? "", email: body.email }),
            hashedPassword,
            loginType: "password",
            roles: ["owner"],
            createdAt: now,
            updatedAt: now,
          }),
          db.insert(organizations).values({
            id: organizationId,
            name: DEFAULT_ORG_NAME,
            displayName: "Default",
            isDefault: true,
            createdAt: now,
            updatedAt: now,
          }),
          db.insert(organizationMembers).values({ userId, organizationId, roles: [], createdAt: now, updatedAt: now }),
          auditInsert(db, c, { userId, action: "create_first_user", resourceType: "user", resourceId: userId, diff: { username: body.username } }),
        ]);
      } catch (error) {
        if (isUniqueViolation(error)) {
          throw conflict(UserMessages.firstUserConflict);
        }
        throw error;
      }
      return c.json({ user_id: userId, organization_id: organizationId }, 201);
    },
  )
  .post(
    "/users",
    describeRoute({
      operationId: "createUser",
      summary: "Create a user (or a service account)",
      tags: ["Users"],
      access: "user-admin",
      scope: "user:create",
      responses: [{ status: 201, description: "The new user.", schema: User }],
      errors: errors(INVALID_PASSWORD, PASSWORD_CHECK_UNAVAILABLE, noPermission("create users"), {
        409: "A user with that e-mail or username already exists.",
      }),
    }),
    requireAuth,
    jsonBody(createUserBody),
    async (c) => {
      const body = c.req.valid("json");
      assertCan(c, "create", { type: "user" });
      const serviceAccount = body.service_account ?? false;
      const loginType = body.login_type ?? (serviceAccount ? "none" : "password");
      const email = body.email ?? "";
      if (body.password) await assertPasswordPolicy(c.env.ASSETS, body.password, { email, username: body.username, name: body.name ?? "" });
      const db = dbFor(c, "write");
      await assertUnique(db, email, body.username);
      const now = nowIso();
      const row: UserRow = {
        id: crypto.randomUUID(),
        email,
        username: body.username,
        name: body.name ?? "",
        ...searchKeys({ name: body.name ?? "", email }),
        hashedPassword: body.password ? await hashPassword(body.password) : null,
        loginType,
        status: body.user_status ?? "active",
        roles: [],
        isSystem: serviceAccount,
        passwordResetRequired: false,
        deleted: false,
        createdAt: now,
        updatedAt: now,
        lastSeenAt: null,
      };
      const organizationId = await defaultOrganizationId(db);
      try {
        await db.batch([
          db.insert(users).values(row),
          db.insert(organizationMembers).values({ userId: row.id, organizationId, roles: [], createdAt: now, updatedAt: now }),
          auditInsert(db, c, {
            action: "create",
            resourceType: "user",
            resourceId: row.id,
            diff: { username: row.username, email: row.email, login_type: loginType, service_account: serviceAccount },
          }),
        ]);
      } catch (error) {
        if (isUniqueViolation(error)) throw conflict(UserMessages.emailOrUsernameTaken);
        throw error;
      }
      notifyAccountEvent(c, "created", row);
      return c.json(toUserResponse(row, [organizationId]), 201);
    },
  )
  .get(
    "/users",
    describeRoute({
      operationId: "listUsers",
      summary: "List users, by username, searchable",
      description: "A caller without site-wide read on users sees only itself.",
      tags: ["Users"],
      access: "anyone",
      scope: "user:read",
      paramDocs: {
        q: `Coder's search syntax: space-separated \`status:active\`, \`role:owner\`, \`login_type:oidc\` (commas list several values) and free text (or \`search:"…"\`), matched case-insensitively in the username, name or e-mail. An unknown key or value → 400 \`${UserMessages.invalidSearch}\``,
      },
      responses: [{ status: 200, description: "One page and the total count.", schema: GetUsersResponse }],
    }),
    requireAuth,
    queryParams(listUsersQuery),
    async (c) => {
      const { q, status, limit, offset } = c.req.valid("query");
      // Even a member's list of itself is a read of users: a narrowed token needs the scope.
      assertScope(c, "user", "read");
      const db = dbFor(c, "read");
      const filters: SQL[] = [eq(users.deleted, false)];
      // Without site-wide read a caller lists only what it may read: itself.
      if (!can(c, "read", { type: "user" })) filters.push(eq(users.id, c.get("auth").user.id));
      if (status) filters.push(eq(users.status, status));
      if (q) {
        const parsed = parseUserSearch(q);
        if (!parsed.ok) throw badRequest(UserMessages.invalidSearch, { validations: parsed.problems.map((detail) => ({ field: "q", detail })) });
        filters.push(...searchFilters(parsed.search));
      }
      const where = and(...filters);
      const [page, total] = await db.batch([
        db
          .select()
          .from(users)
          .where(where)
          .orderBy(asc(sql`lower(${users.username})`))
          .limit(limit)
          .offset(offset),
        db.select({ n: count() }).from(users).where(where),
      ]);
      const orgs = await organizationIdsOf(
        db,
        page.map((u) => u.id),
      );
      return c.json({ users: page.map((u) => toUserResponse(u, orgs.get(u.id) ?? [])), count: total[0]?.n ?? 0 }, 200);
    },
  )
  .get(
    "/users/:user",
    describeRoute({
      operationId: "getUser",
      summary: "Get a user",
      tags: ["Users"],
      access: "anyone",
      scope: "user:read",
      pathParams: userPath,
      responses: [{ status: 200, description: "The user.", schema: User }],
      errors: errors(noPermission("read this user"), USER_404),
    }),
    requireAuthToEnrol,
    async (c) => {
      const auth = c.get("auth");
      if (c.req.param("user") === "me") {
        // The hot path of every dashboard: answered from what authentication already loaded, no D1 query.
        assertCan(c, "read", { type: "user", ownerId: auth.user.id });
        return c.json(toUserResponse(auth.user, Object.keys(auth.orgRoles)), 200);
      }
      const user = await resolveUser(c, c.req.param("user"));
      // Reading oneself is what MFA_REQUIRED_ROLES leaves open (docs/second-factor.md); reading others is not.
      if (user.id !== auth.user.id) await assertSecondFactorPolicy(c);
      assertCan(c, "read", { type: "user", ownerId: user.id });
      return c.json(await userResponse(dbFor(c, "read"), user), 200);
    },
  )
  .delete(
    "/users/:user",
    describeRoute({
      operationId: "deleteUser",
      summary: "Delete a user: every credential ends at once, and everything Herald holds about them is erased",
      tags: ["Users"],
      access: "user-admin",
      scope: "user:delete",
      pathParams: userPath,
      responses: [{ status: 200, description: `\`${UserMessages.deleted}\``, schema: ResponseBody }],
      errors: errors(noPermission("delete this user"), { 403: `\`${UserMessages.cannotDeleteSelf}\`` }, OWNER_GUARD, USER_404),
    }),
    requireAuth,
    requireRecentAuth,
    async (c) => {
      const user = await resolveUser(c, c.req.param("user"));
      assertCan(c, "delete", { type: "user", ownerId: user.id });
      if (user.id === c.get("auth").user.id) throw forbidden(UserMessages.cannotDeleteSelf);
      assertMayManage(c, user);
      const db = dbFor(c, "write");
      // The entry names the account by its id only: its name is erased with it (docs/privacy.md, "Erasure").
      await commitAccountChanges(
        c,
        db,
        [deleteAccount(db, user.id)],
        [auditInsert(db, c, { action: "delete", resourceType: "user", resourceId: user.id })],
      );
      notifyAccountEvent(c, "deleted", user);
      // The rest of the erasure before the answer, so that a 200 means it is done but for its last step, which waits
      // for what may still be on its way (docs/privacy.md, "The steps"). A step that fails is left to the cron: the
      // deletion itself has happened, and is answered as such.
      await runErasure(c.env, user.id).catch(() => undefined);
      return c.json({ message: UserMessages.deleted }, 200);
    },
  )
  .put(
    "/users/:user/roles",
    describeRoute({
      operationId: "updateUserRoles",
      summary: "Replace a user's site roles",
      description:
        "Needs the permission to assign roles (owners and user-admins); only an owner grants or removes site roles other than member, so a user-admin's request succeeds only when it changes nothing.",
      tags: ["Users"],
      access: "user-admin",
      scope: "assign_role:assign",
      pathParams: userPath,
      responses: [{ status: 200, description: "The user with its new roles.", schema: User }],
      errors: errors(
        { 400: `\`${UserMessages.cannotChangeOwnRoles}\`` },
        { 403: "The caller may not assign or unassign a role, or is not an owner granting site roles." },
        USER_404,
      ),
    }),
    requireAuth,
    requireRecentAuth,
    jsonBody(updateRolesBody),
    async (c) => {
      const { roles } = c.req.valid("json");
      const user = await resolveUser(c, c.req.param("user"));
      if (user.id === c.get("auth").user.id) throw badRequest(UserMessages.cannotChangeOwnRoles);
      // Checked before looking at what changes: a request that changes nothing is still a role change the caller must
      // be allowed to make (docs/authorization.md), and then it writes nothing.
      assertCan(c, "assign", { type: "assign_role" }, UserMessages.cannotChangeRoles);
      if (user.roles.includes("owner") && !c.get("auth").subject.siteRoles.includes("owner")) {
        throw forbidden(Messages.forbidden, UserMessages.ownerChangesOwnerRoles);
      }
      const wanted = [...new Set(roles)].sort();
      const added = wanted.filter((r) => !user.roles.includes(r));
      const removed = user.roles.filter((r) => !wanted.includes(r));
      const db = dbFor(c, "write");
      if (added.length === 0 && removed.length === 0) return c.json(await userResponse(db, user), 200);
      for (const role of added) assertCan(c, "assign", { type: "assign_role" }, UserMessages.cannotAssignRole(role));
      for (const role of removed) assertCan(c, "unassign", { type: "assign_role" }, UserMessages.cannotUnassignRole(role));
      // docs/authorization.md: only an owner grants (or takes away) site roles other than member.
      if ((added.length > 0 || removed.length > 0) && !c.get("auth").subject.siteRoles.includes("owner")) {
        throw forbidden(Messages.forbidden, UserMessages.ownerGrantsSiteRoles);
      }
      const updatedAt = nowIso();
      await commitAccountChanges(
        c,
        db,
        [setRoles(db, user.id, wanted, updatedAt)],
        [
          auditInsert(db, c, {
            action: "update_roles",
            resourceType: "user",
            resourceId: user.id,
            diff: { roles: { old: user.roles, new: wanted } },
          }),
        ],
      );
      const roleList = (list: readonly string[]) => (list.length > 0 ? list.join(", ") : "member only");
      sendSecurityNotice(c, {
        userId: user.id,
        event: "site_roles_changed",
        labels: { initiator: c.get("auth").user.username, old_roles: roleList(user.roles), new_roles: roleList(wanted) },
      });
      return c.json(await userResponse(db, { ...user, roles: wanted, updatedAt }), 200);
    },
  )
  .put(
    "/users/:user/status/:status{suspend|activate}",
    describeRoute({
      operationId: "updateUserStatus",
      summary: "Suspend or activate a user",
      alternatives: {
        suspend: { operationId: "suspendUser", summary: "Suspend a user" },
        activate: { operationId: "activateUser", summary: "Activate a suspended user" },
      },
      description:
        "One route, `PUT /users/{user}/status/{suspend|activate}`, documented as its two literal paths. Suspending ends the user's sign-ins (its keys answer 401).",
      tags: ["Users"],
      access: "user-admin",
      scope: "user:update",
      pathParams: userPath,
      responses: [{ status: 200, description: "The user after the change.", schema: User }],
      errors: errors({ 400: "The caller tried to change its own status." }, noPermission("update this user"), OWNER_GUARD, USER_404),
    }),
    requireAuth,
    async (c) => {
      const action = c.req.param("status");
      const user = await resolveUser(c, c.req.param("user"));
      assertCan(c, "update", { type: "user", ownerId: user.id });
      if (user.id === c.get("auth").user.id) throw badRequest(UserMessages.cannotChangeOwnStatus(action));
      assertMayManage(c, user);
      const status = action === "suspend" ? "suspended" : "active";
      const db = dbFor(c, "write");
      const updatedAt = nowIso();
      await commitAccountChanges(
        c,
        db,
        [setStatus(db, user.id, status, updatedAt)],
        [auditInsert(db, c, { action, resourceType: "user", resourceId: user.id, diff: { status: { old: user.status, new: status } } })],
      );
      if (user.status !== status) notifyAccountEvent(c, action === "suspend" ? "suspended" : "activated", user);
      return c.json(await userResponse(db, { ...user, status, updatedAt }), 200);
    },
  )
  .put(
    "/users/:user/password",
    describeRoute({
      operationId: "updateUserPassword",
      summary: "Change a user's password",
      description:
        "Your own password needs `old_password`; an administrator resetting someone else's does not. Every other session of the user is revoked.",
      tags: ["Users"],
      access: "anyone",
      scope: "user:update_personal",
      pathParams: userPath,
      responses: [{ status: 204, description: NO_BODY }],
      errors: errors(
        {
          400: `\`${UserMessages.passwordUsersOnly}\`, \`${UserMessages.oldPasswordIncorrect}\`, \`${AuthMessages.invalidPassword}\` (policy), or \`${AuthMessages.samePassword}\``,
        },
        noPermission("update this user's password"),
        OWNER_GUARD,
        USER_404,
        RATE,
        PASSWORD_CHECK_UNAVAILABLE,
      ),
    }),
    requireAuth,
    jsonBody(changePasswordBody),
    async (c) => {
      const body = c.req.valid("json");
      const user = await resolveUser(c, c.req.param("user"));
      const self = user.id === c.get("auth").user.id;
      if (self) assertCan(c, "update_personal", { type: "user", ownerId: user.id });
      else {
        assertCan(c, "update", { type: "user", ownerId: user.id });
        assertMayManage(c, user);
        // Setting someone's password is taking over their account: a user-admin may do it for members only, never
        // for another admin or an auditor, whose roles it could then use.
        if (user.roles.length > 0 && !c.get("auth").subject.siteRoles.includes("owner")) {
          throw forbidden(Messages.forbidden, UserMessages.ownerSetsRolePassword);
        }
      }
      if (user.loginType !== "password") throw badRequest(UserMessages.passwordUsersOnly);
      // Your own password needs the old one; an administrator resetting someone else's does not (Coder's rule). The
      // old password is a password check: limited, or a stolen session could guess it without end.
      if (self) {
        const incorrect = () =>
          badRequest(UserMessages.oldPasswordIncorrect, {
            validations: [{ field: "old_password", detail: UserMessages.oldPasswordIncorrect }],
            event: "authentication_failed",
          });
        // No old password means nothing to check: answered before the limit, which guards the hash work.
        if (!body.old_password) throw incorrect();
        await limitSensitive(c, "password-change");
        if (!(await verifyPassword(user.hashedPassword, body.old_password)).valid) throw incorrect();
      }
      await assertPasswordPolicy(c.env.ASSETS, body.password, user);
      if ((await verifyPassword(user.hashedPassword, body.password)).valid) {
        throw badRequest(AuthMessages.samePassword);
      }
      const db = dbFor(c, "write");
      const hashedPassword = await hashPassword(body.password);
      // Other sessions end with the old password; the caller's own session (if self) survives.
      const change = setPassword(db, user.id, hashedPassword, self ? { keep: c.get("auth").key.id } : {});
      await commitAccountChanges(c, db, [change], [auditInsert(db, c, { action: "change_password", resourceType: "user", resourceId: user.id })]);
      sendSecurityNotice(c, { userId: user.id, event: "password_changed" });
      return c.body(null, 204);
    },
  );
