import { and, count, desc, eq, ne } from "drizzle-orm";
import { type Context, Hono } from "hono";
import * as z from "zod";
import { auditInsert } from "../audit/log";
import { commitAccountChanges, endKeys } from "../auth/account-changes";
import { clearSessionCookie } from "../auth/cookies";
import { issueKey } from "../auth/keys";
import { limitSensitive } from "../auth/rate-limit";
import type { Revocation } from "../auth/revocation";
import { requireAuth } from "../auth/session";
import { requireRecentAuth } from "../auth/step-up";
import { isKnownScope } from "../authz/catalog";
import { assertCan } from "../authz/guard";
import { type ApiKeyRow, apiKeys } from "../db/schema";
import { dbFor } from "../db/session";
import { badRequest, conflict, forbidden, Messages, notFound } from "../http/errors";
import type { AppEnv } from "../http/types";
import { jsonBody, queryParams } from "../http/validate";
import { describeRoute, errors, NO_BODY, noPermission, RATE, USER_404 } from "../openapi/describe";
import { sendSecurityNotice } from "../security/notices";
import { UserMessages } from "./messages";
import { resolveUser } from "./resolve";
import { APIKey, APISession, createTokenBody, endSessionsQuery, GenerateAPIKeyResponse, userKeyPath, userPath } from "./schemas";
import { isUniqueViolation } from "./service";

const DEFAULT_TOKEN_LIFETIME_MS = 7 * 24 * 60 * 60 * 1000;

/** Coder's `APIKey` shape; the secret and its hash never leave the database. */
function toApiKeyResponse(key: ApiKeyRow) {
  return {
    id: key.id,
    user_id: key.userId,
    token_name: key.tokenName ?? "",
    login_type: key.loginType,
    scopes: key.scopes,
    lifetime_seconds: key.lifetimeSeconds,
    expires_at: key.expiresAt,
    created_at: key.createdAt,
    updated_at: key.updatedAt,
    last_used: key.lastUsed,
  };
}

/**
 * Someone else ending a user's login sessions tells the user (docs/security.md, "Security notices"); ending your own
 * is no news to you.
 */
function noticeSessionsEnded(c: Context<AppEnv>, userId: string, revocations: readonly Revocation[]): void {
  const initiator = c.get("auth").user;
  if (initiator.id === userId) return;
  const ended = revocations.reduce((n, r) => n + (r.kind === "credentials-ended" && r.keyIds !== "all" ? r.keyIds.length : 0), 0);
  if (ended === 0) return;
  sendSecurityNotice(c, { userId, event: "sessions_ended", labels: { initiator: initiator.username, count: String(ended) } });
}

/** A scoped credential can only mint tokens within its own scopes, never widen them. */
function withinScopes(callerScopes: readonly string[], requested: readonly string[]): boolean {
  if (callerScopes.includes("all")) return true;
  return requested.every((scope) => {
    if (callerScopes.includes(scope)) return true;
    const type = scope.split(":")[0];
    return scope !== "all" && callerScopes.includes(`${type}:*`);
  });
}

/** Named API tokens (docs/api.md, Sign-in, accounts and authorization) and login sessions. */
export const keyRoutes = new Hono<AppEnv>()
  .post(
    "/users/:user/keys/tokens",
    describeRoute({
      operationId: "createApiToken",
      summary: "Create a named API token",
      description: '`lifetime` in seconds (default 7 days, capped by TOKEN_MAX_LIFETIME); `scopes` default `["all"]`.',
      tags: ["API keys"],
      access: "anyone",
      scope: "api_key:create",
      pathParams: userPath,
      responses: [{ status: 201, description: "The token; its secret is shown only here.", schema: GenerateAPIKeyResponse }],
      errors: errors(
        {
          400: `Unknown scopes (\`${UserMessages.invalidScopes}\`), a lifetime above the maximum, or \`${UserMessages.tooManyTokens}\` (TOKEN_MAX_PER_USER).`,
        },
        noPermission("create API keys for this user"),
        { 403: "The scopes are wider than the creating credential's." },
        USER_404,
        { 409: "A token with that name already exists." },
        RATE,
      ),
    }),
    requireAuth,
    requireRecentAuth,
    jsonBody(createTokenBody),
    async (c) => {
      const body = c.req.valid("json");
      const user = await resolveUser(c, c.req.param("user"));
      assertCan(c, "create", { type: "api_key", ownerId: user.id });
      const scopes = [...new Set(body.scopes ?? ["all"])].sort();
      const unknown = scopes.filter((s) => !isKnownScope(s));
      if (unknown.length > 0) {
        throw badRequest(UserMessages.invalidScopes, {
          validations: unknown.map((s) => ({ field: "scopes", detail: UserMessages.unknownScope(s) })),
        });
      }
      if (!withinScopes(c.get("auth").key.scopes, scopes)) {
        throw forbidden(Messages.forbidden, UserMessages.scopesTooWide);
      }
      const maxMs = c.get("config").TOKEN_MAX_LIFETIME;
      // A token never outlives the API token that creates it: otherwise a token about to expire could mint a fresh
      // 30-day one, and so on forever.
      const creator = c.get("auth").key;
      const notAfter = creator.loginType === "token" ? Date.parse(creator.expiresAt) : undefined;
      const remainingMs = notAfter !== undefined ? notAfter - Date.now() : Number.POSITIVE_INFINITY;
      const lifetimeMs = body.lifetime !== undefined ? body.lifetime * 1000 : Math.min(DEFAULT_TOKEN_LIFETIME_MS, maxMs, remainingMs);
      if (lifetimeMs > maxMs) {
        const seconds = Math.floor(maxMs / 1000);
        throw badRequest(UserMessages.lifetimeTooLong(seconds), {
          validations: [{ field: "lifetime", detail: UserMessages.maxLifetime(seconds) }],
        });
      }
      if (lifetimeMs > remainingMs) {
        const seconds = Math.max(0, Math.floor(remainingMs / 1000));
        throw badRequest(UserMessages.lifetimeTooLong(seconds), {
          validations: [{ field: "lifetime", detail: UserMessages.outlivesCreator(seconds) }],
        });
      }
      // Limited once the request is otherwise acceptable: the limit guards minting, and a refused request mints nothing.
      await limitSensitive(c, "token-create", user.id);
      const db = dbFor(c, "write");
      const cap = c.get("config").TOKEN_MAX_PER_USER;
      const [held] = await db
        .select({ n: count() })
        .from(apiKeys)
        .where(and(eq(apiKeys.userId, user.id), eq(apiKeys.loginType, "token")));
      if ((held?.n ?? 0) >= cap) {
        throw badRequest(UserMessages.tooManyTokens, { detail: UserMessages.tooManyTokensDetail(cap) });
      }
      const key = await issueKey(db, { userId: user.id, loginType: "token", lifetimeMs, notAfter, scopes, tokenName: body.token_name });
      try {
        await db.batch([
          key.insert,
          auditInsert(db, c, {
            action: "create",
            resourceType: "api_key",
            resourceId: key.row.id,
            diff: { token_name: body.token_name, scopes, owner: user.id },
          }),
        ]);
      } catch (error) {
        if (isUniqueViolation(error)) throw conflict(UserMessages.tokenNameTaken(body.token_name));
        throw error;
      }
      sendSecurityNotice(c, { userId: user.id, event: "api_token_created", labels: { token_name: body.token_name, scopes: scopes.join(", ") } });
      return c.json({ key: key.token }, 201);
    },
  )
  .get(
    "/users/:user/keys/tokens",
    describeRoute({
      operationId: "listApiTokens",
      summary: "List a user's named API tokens, newest first",
      tags: ["API keys"],
      access: "anyone",
      scope: "api_key:read",
      pathParams: userPath,
      responses: [{ status: 200, description: "The tokens (never their secrets).", schema: z.array(APIKey) }],
      errors: errors(noPermission("read this user's API keys"), USER_404),
    }),
    requireAuth,
    async (c) => {
      const user = await resolveUser(c, c.req.param("user"));
      assertCan(c, "read", { type: "api_key", ownerId: user.id });
      const db = dbFor(c, "read");
      const rows = await db
        .select()
        .from(apiKeys)
        .where(and(eq(apiKeys.userId, user.id), eq(apiKeys.loginType, "token")))
        .orderBy(desc(apiKeys.createdAt));
      return c.json(rows.map(toApiKeyResponse), 200);
    },
  )
  // Login sessions (one per sign-in, any method): listed and ended apart from named tokens (docs/security.md, 7.4.5
  // and 7.5.2). Registered before `/keys/:id`; a key id is always 10 characters, so "sessions" is never one.
  .get(
    "/users/:user/keys/sessions",
    describeRoute({
      operationId: "listSessions",
      summary: "List a user's login sessions, most recently used first",
      description: "One per sign-in (password, OpenID Connect or GitHub); named API tokens are listed apart. `current` marks the calling session.",
      tags: ["API keys"],
      access: "anyone",
      scope: "api_key:read",
      pathParams: userPath,
      responses: [{ status: 200, description: "The sessions (never their secrets).", schema: z.array(APISession) }],
      errors: errors(noPermission("read this user's API keys"), USER_404),
    }),
    requireAuth,
    async (c) => {
      const user = await resolveUser(c, c.req.param("user"));
      assertCan(c, "read", { type: "api_key", ownerId: user.id });
      const rows = await dbFor(c, "read")
        .select()
        .from(apiKeys)
        .where(and(eq(apiKeys.userId, user.id), ne(apiKeys.loginType, "token")))
        .orderBy(desc(apiKeys.lastUsed), desc(apiKeys.createdAt));
      const current = c.get("auth").key.id;
      return c.json(
        rows.map((row) => ({
          ...toApiKeyResponse(row),
          current: row.id === current,
          user_agent: row.userAgent,
          device: row.device,
          ip_prefix: row.ipPrefix,
          location: row.country ? { country: row.country, city: row.city } : null,
          methods: row.authMethods,
        })),
        200,
      );
    },
  )
  .delete(
    "/users/:user/keys/sessions",
    describeRoute({
      operationId: "endSessions",
      summary: "End all of a user's login sessions",
      description:
        "Signs the user out everywhere (named API tokens are kept) and closes their watch sockets. `except_current=true` keeps the calling session. The user themself, or an owner.",
      tags: ["API keys"],
      access: "anyone",
      scope: "api_key:delete",
      pathParams: userPath,
      responses: [{ status: 204, description: NO_BODY }],
      errors: errors(noPermission("delete this user's API keys"), USER_404),
    }),
    requireAuth,
    requireRecentAuth,
    queryParams(endSessionsQuery),
    async (c) => {
      const { except_current: exceptCurrent } = c.req.valid("query");
      const user = await resolveUser(c, c.req.param("user"));
      assertCan(c, "delete", { type: "api_key", ownerId: user.id });
      const db = dbFor(c, "write");
      const current = c.get("auth").key.id;
      const sessions = and(ne(apiKeys.loginType, "token"), exceptCurrent ? ne(apiKeys.id, current) : undefined);
      const { revocations } = await commitAccountChanges(
        c,
        db,
        [endKeys(db, user.id, sessions)],
        [auditInsert(db, c, { action: "end_sessions", resourceType: "user", resourceId: user.id, diff: { except_current: exceptCurrent } })],
      );
      noticeSessionsEnded(c, user.id, revocations);
      const endedCurrent = revocations.some((r) => r.kind === "credentials-ended" && r.keyIds !== "all" && r.keyIds.includes(current));
      if (endedCurrent && c.get("auth").source === "cookie") clearSessionCookie(c, c.get("config"));
      return c.body(null, 204);
    },
  )
  .delete(
    "/users/:user/keys/:id",
    describeRoute({
      operationId: "deleteApiKey",
      summary: "Delete an API key or session of a user",
      tags: ["API keys"],
      access: "anyone",
      scope: "api_key:delete",
      pathParams: userKeyPath,
      responses: [{ status: 204, description: NO_BODY }],
      errors: errors(noPermission("delete this user's API keys"), USER_404, { 404: "The key is not one of this user's." }),
    }),
    requireAuth,
    requireRecentAuth,
    async (c) => {
      const user = await resolveUser(c, c.req.param("user"));
      const id = c.req.param("id");
      assertCan(c, "delete", { type: "api_key", ownerId: user.id });
      const db = dbFor(c, "write");
      const existing = await db
        .select({ id: apiKeys.id, loginType: apiKeys.loginType })
        .from(apiKeys)
        .where(and(eq(apiKeys.id, id), eq(apiKeys.userId, user.id)))
        .limit(1);
      if (existing.length === 0) throw notFound();
      const { revocations } = await commitAccountChanges(
        c,
        db,
        [endKeys(db, user.id, eq(apiKeys.id, id))],
        [auditInsert(db, c, { action: "delete", resourceType: "api_key", resourceId: id, diff: { owner: user.id } })],
      );
      if (existing[0]?.loginType !== "token") noticeSessionsEnded(c, user.id, revocations);
      return c.body(null, 204);
    },
  );
