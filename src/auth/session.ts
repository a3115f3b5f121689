import { eq, inArray } from "drizzle-orm";
import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import type { Subject } from "../authz/evaluate";
import type { Config } from "../config/config";
import { type Database, database } from "../db/client";
import { type ApiKeyRow, apiKeys, organizationMembers, type UserRow, users } from "../db/schema";
import { dbFor, readFresh } from "../db/session";
import { forbidden, Messages, unauthorized } from "../http/errors";
import type { AppEnv } from "../http/types";
import { nowIso, timingSafeEqualShort, timingSafeEqualText } from "../lib/crypto";
import { readSessionCookie } from "./cookies";
import { EMBED_SCOPES, type EmbedClaims, isEmbedToken, verifyEmbedToken } from "./embed-token";
import { type AuthMemo, type CachedKey, cachedKey, rememberKey } from "./key-cache";
import { AuthMessages } from "./messages";
import { assertSecondFactorPolicy } from "./mfa/policy";
import { hashTokenSecret, type ParsedToken, parseToken } from "./tokens";

const SESSION_HEADER = "Service-Session-Token";
/** `last_used` (and a session's sliding expiry) is written at most this often per key: no D1 write per request. */
const LAST_USED_INTERVAL_MS = 60 * 60 * 1000;

type CredentialSource = "header" | "bearer" | "protocol" | "cookie";

type AuthUser = Omit<UserRow, "hashedPassword">;

export interface AuthContext {
  user: AuthUser;
  /**
   * The key presented. A signed embed token has no row in D1: it stands for one here (id `embed.<key id>`), with the
   * two inbox scopes and the token's expiry ({@link authenticateEmbed}).
   */
  key: ApiKeyRow;
  /** Organization id → stored organization roles. */
  orgRoles: Record<string, string[]>;
  subject: Subject;
  source: CredentialSource;
  /** Kept with the cached key: what routes work out about the user once (src/auth/key-cache.ts). */
  memo: AuthMemo;
}

interface Credential {
  token: string;
  source: CredentialSource;
}

/**
 * Browsers cannot set headers on a WebSocket, and a token in the URL ends up in logs, so a watch may offer its token
 * as a subprotocol `herald.token.<token>` next to `herald.v1`; only `herald.v1` is echoed back.
 */
export const WATCH_PROTOCOL = "herald.v1";
const TOKEN_PROTOCOL_PREFIX = "herald.token.";

export function offeredProtocols(c: Context): string[] {
  return (c.req.header("Sec-WebSocket-Protocol") ?? "")
    .split(",")
    .map((p) => p.trim())
    .filter((p) => p !== "");
}

/**
 * The lookup order (docs/api.md, Conventions): the header, then a bearer Authorization header, then (WebSocket upgrades only) the token
 * subprotocol, then the browser cookie. An explicit token wins over the ambient cookie.
 */
function extractCredential(c: Context, config: Config): Credential | undefined {
  const header = c.req.header(SESSION_HEADER);
  if (header) return { token: header.trim(), source: "header" };
  const authorization = c.req.header("Authorization");
  const bearer = authorization && /^Bearer\s+(.+)$/i.exec(authorization)?.[1];
  if (bearer) return { token: bearer.trim(), source: "bearer" };
  if (c.req.header("Upgrade")?.toLowerCase() === "websocket") {
    const offered = offeredProtocols(c).find((p) => p.startsWith(TOKEN_PROTOCOL_PREFIX));
    if (offered) return { token: offered.slice(TOKEN_PROTOCOL_PREFIX.length), source: "protocol" };
  }
  const cookie = readSessionCookie(c, config);
  if (cookie) return { token: cookie, source: "cookie" };
  return undefined;
}

async function loadKey(db: Database, keyId: string) {
  // Three statements, one round trip. (Separate selects rather than a join: D1 returns rows as objects, so the
  // two tables' same-named columns would collide.)
  const ownerId = db.select({ userId: apiKeys.userId }).from(apiKeys).where(eq(apiKeys.id, keyId));
  const [keys, owners, memberships] = await db.batch([
    db.select().from(apiKeys).where(eq(apiKeys.id, keyId)),
    db.select().from(users).where(inArray(users.id, ownerId)),
    db
      .select({ organizationId: organizationMembers.organizationId, roles: organizationMembers.roles })
      .from(organizationMembers)
      .where(inArray(organizationMembers.userId, ownerId)),
  ]);
  const key = keys[0];
  const user = owners[0];
  if (!key || !user) return undefined;
  const orgRoles: Record<string, string[]> = {};
  for (const m of memberships) orgRoles[m.organizationId] = m.roles;
  return { key, user, orgRoles };
}

/**
 * `loadKey` on the request's D1 session (docs/consistency.md). A replica may answer, unless `fromPrimary`: a watch
 * upgrade (its socket outlives the request, see `authenticate`), or AUTH_CACHE_TTL `0s`, which asks that a revocation
 * take effect at once everywhere (docs/configuration.md) and so cannot wait for a replica either.
 *
 * A replica's answer that would refuse the credential is checked on the primary before it is believed: no such key
 * yet (a token just issued by sign-in or token creation), a renewal or an activation it has not seen. So a client
 * without a bookmark is never refused for a replica's lag, and a valid credential costs no second read. Every refusal
 * takes that second read, a wrong secret too, so its timing does not tell an unknown key id from a known one
 * (docs/api.md, Decisions, "One 401 detail"); `digest` is the secret's hash, computed once by `authenticate`.
 */
function loadFresh(c: Context<AppEnv>, token: ParsedToken, digest: string, fromPrimary: boolean, now: number) {
  if (fromPrimary) return loadKey(dbFor(c, "write"), token.id);
  return readFresh(
    c,
    (db) => loadKey(db, token.id),
    ({ key, user }) =>
      !user.deleted && user.status !== "suspended" && Date.parse(key.expiresAt) > now && timingSafeEqualText(digest, key.hashedSecret),
  );
}

async function loadUser(db: Database, userId: string) {
  const [found, memberships] = await db.batch([
    db.select().from(users).where(eq(users.id, userId)),
    db
      .select({ organizationId: organizationMembers.organizationId, roles: organizationMembers.roles })
      .from(organizationMembers)
      .where(eq(organizationMembers.userId, userId)),
  ]);
  const user = found[0];
  if (!user) return undefined;
  const orgRoles: Record<string, string[]> = {};
  for (const m of memberships) orgRoles[m.organizationId] = m.roles;
  return { user, orgRoles };
}

/**
 * A signed embed token (docs/embed.md, "Signed embed tokens"): checked against EMBED_SIGNING_KEYS, then its user is
 * read as a key's would be (a replica's refusal confirmed on the primary; an upgrade reads the primary), and must be
 * neither deleted nor suspended. It grants the two inbox scopes only, and nothing is written: no row, no `last_used`.
 */
async function authenticateEmbed(c: Context<AppEnv>, credential: Credential, now: number): Promise<AuthContext> {
  const config = c.get("config");
  // Herald never sets an embed token as its cookie: one found there was put there by someone else.
  const claims: EmbedClaims | undefined =
    credential.source === "cookie" ? undefined : await verifyEmbedToken(credential.token, config.EMBED_SIGNING_KEYS, now);
  if (!claims) throw unauthorized(AuthMessages.badCredential);
  const standing = ({ user }: { user: UserRow }) => !user.deleted && user.status !== "suspended";
  const upgrading = c.req.header("Upgrade")?.toLowerCase() === "websocket";
  const loaded =
    upgrading || config.AUTH_CACHE_TTL === 0
      ? await loadUser(dbFor(c, "write"), claims.userId)
      : await readFresh(c, (db) => loadUser(db, claims.userId), standing);
  if (!loaded || !standing(loaded)) throw unauthorized(AuthMessages.badCredential);
  const { hashedPassword: _omit, ...user } = loaded.user;
  const issued = nowIso(now);
  const key: ApiKeyRow = {
    id: `embed.${claims.keyId}`,
    hashedSecret: "",
    userId: user.id,
    loginType: "token",
    tokenName: null,
    scopes: [...EMBED_SCOPES],
    lifetimeSeconds: Math.ceil((claims.expiresAt - now) / 1000),
    expiresAt: nowIso(claims.expiresAt),
    createdAt: issued,
    updatedAt: issued,
    lastUsed: issued,
    authTime: null,
    authMethods: [],
    userAgent: null,
    device: null,
    ipPrefix: null,
    country: null,
    city: null,
  };
  return { user, key, orgRoles: loaded.orgRoles, subject: subjectFor(user, loaded.orgRoles, key.scopes), source: credential.source, memo: {} };
}

function subjectFor(user: AuthUser, orgRoles: Record<string, string[]>, scopes: readonly string[]): Subject {
  return { id: user.id, siteRoles: user.roles, orgRoles, scopes, isSystem: user.isSystem };
}

/**
 * Resolves a credential to its key and user (docs/architecture.md, How each hot path scales). One D1 round trip (a batch); the hourly `last_used` /
 * sliding-expiry write happens after the response through `waitUntil`.
 */
async function authenticate(c: Context<AppEnv>): Promise<AuthContext> {
  const config = c.get("config");
  const credential = extractCredential(c, config);
  // A missing credential has its own detail (it says nothing about the server); every other failure is AuthMessages.badCredential.
  if (!credential) throw unauthorized(AuthMessages.noCredential(SESSION_HEADER));
  if (isEmbedToken(credential.token)) return authenticateEmbed(c, credential, Date.now());
  const parsed = parseToken(credential.token);
  if (!parsed) throw unauthorized(AuthMessages.badCredential);

  const db = database(c.env.DB);
  const now = Date.now();
  const ttl = config.AUTH_CACHE_TTL;
  // A watch socket outlives its upgrade request and is only closed by a revocation it was there to see: so an
  // upgrade always checks D1, never an isolate's possibly older copy.
  const upgrading = c.req.header("Upgrade")?.toLowerCase() === "websocket";
  const cached = upgrading ? undefined : cachedKey(parsed.id, ttl, now);
  // A cache miss hashes the secret once, for the replica's check in loadFresh and for the one below.
  const digest = cached ? undefined : await hashTokenSecret(parsed.secret);
  const loaded = digest === undefined ? undefined : await loadFresh(c, parsed, digest, upgrading || ttl === 0, now);
  const found: CachedKey | undefined = cached ?? (loaded && { ...loaded, loadedAt: now, memo: {} });
  if (!found || found.user.deleted) throw unauthorized(AuthMessages.badCredential);
  const { key, user: userRow, orgRoles, memo } = found;
  // The secret this isolate already verified for this key, compared in constant time; otherwise its hash, once.
  const verified = found.verifiedSecret !== undefined && timingSafeEqualShort(found.verifiedSecret, parsed.secret);
  if (!verified) {
    if (!timingSafeEqualText(digest ?? (await hashTokenSecret(parsed.secret)), key.hashedSecret)) throw unauthorized(AuthMessages.badCredential);
    found.verifiedSecret = parsed.secret;
  }
  if (!cached) rememberKey(parsed.id, found, ttl);
  const absoluteEnd = key.loginType === "token" ? Number.POSITIVE_INFINITY : Date.parse(key.createdAt) + config.SESSION_MAX_LIFETIME;
  if (Date.parse(key.expiresAt) <= now || now >= absoluteEnd || userRow.status === "suspended") throw unauthorized(AuthMessages.badCredential);

  if (now - Date.parse(key.lastUsed) >= LAST_USED_INTERVAL_MS) {
    const update: Partial<ApiKeyRow> = { lastUsed: nowIso(now) };
    // Login sessions slide forward on use, never past their absolute end; named API tokens keep their fixed lifetime.
    if (key.loginType !== "token") update.expiresAt = nowIso(Math.min(now + config.SESSION_DURATION, absoluteEnd));
    Object.assign(key, update);
    c.executionCtx.waitUntil(
      db.batch([
        db.update(apiKeys).set(update).where(eq(apiKeys.id, key.id)),
        db
          .update(users)
          .set({ lastSeenAt: nowIso(now) })
          .where(eq(users.id, userRow.id)),
      ]),
    );
  }

  const { hashedPassword: _omit, ...user } = userRow;
  return { user, key, orgRoles, subject: subjectFor(user, orgRoles, key.scopes), source: credential.source, memo };
}

/** A login session the browser signed in with before, as found by {@link presentedSession}. */
export interface PresentedSession {
  id: string;
  userId: string;
}

/**
 * The login session a sign-in request arrives with in its cookie, when its secret is right (docs/security.md, 7.2.4).
 * A sign-in replaces that session instead of adding one beside it, so callers delete it in the sign-in's own batch.
 * API tokens are never ended this way; an expired or unknown cookie is ignored.
 */
export async function presentedSession(c: Context<AppEnv>, db: Database): Promise<PresentedSession | undefined> {
  const cookie = readSessionCookie(c, c.get("config"));
  const parsed = cookie ? parseToken(cookie) : undefined;
  if (!parsed) return undefined;
  const [row] = await db
    .select({ userId: apiKeys.userId, hashedSecret: apiKeys.hashedSecret, loginType: apiKeys.loginType })
    .from(apiKeys)
    .where(eq(apiKeys.id, parsed.id))
    .limit(1);
  if (!row || row.loginType === "token") return undefined;
  if (!timingSafeEqualText(await hashTokenSecret(parsed.secret), row.hashedSecret)) return undefined;
  return { id: parsed.id, userId: row.userId };
}

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/** Origins a cookie-authenticated state change may come from: the service itself plus CORS_ALLOWED_ORIGINS. */
function isAllowedOrigin(c: Context<AppEnv>, origin: string): boolean {
  const config = c.get("config");
  return origin === config.origin || origin === new URL(c.req.url).origin || config.CORS_ALLOWED_ORIGINS.includes(origin);
}

/**
 * Sign-in without a credential (password sign-in, passcode reset, the first user) must not be driven by another site: a browser always sends
 * `Origin` on a cross-site POST, and a `text/plain` form can carry a JSON-looking body, so an `Origin` that is present
 * must be an allowed one. Clients that are not browsers send none and are unaffected.
 */
export const refuseCrossSite = createMiddleware<AppEnv>(async (c, next) => {
  const origin = c.req.header("Origin");
  if (origin !== undefined && !isAllowedOrigin(c, origin)) {
    throw forbidden(Messages.forbidden, AuthMessages.crossSiteSignIn);
  }
  await next();
});

/**
 * A valid credential. A cookie is sent by the browser on its own, so a cookie-authenticated request that changes state
 * (or upgrades to a WebSocket) must also prove where it comes from: an allowed `Origin` (docs/api.md, Conventions).
 * With `policy`, a user whom MFA_REQUIRED_ROLES asks for a second factor and who has none is refused too.
 */
function authMiddleware(policy: boolean) {
  return createMiddleware<AppEnv>(async (c, next) => {
    const auth = await authenticate(c);
    const upgrading = c.req.header("Upgrade")?.toLowerCase() === "websocket";
    if (auth.source === "cookie" && (!SAFE_METHODS.has(c.req.method) || upgrading)) {
      const origin = c.req.header("Origin");
      if (!origin || !isAllowedOrigin(c, origin)) {
        throw forbidden(Messages.forbidden, AuthMessages.cookieNeedsOrigin);
      }
    }
    c.set("auth", auth);
    if (policy) await assertSecondFactorPolicy(c);
    await next();
  });
}

/** Requires a valid credential, and a second factor where MFA_REQUIRED_ROLES asks for one: every authenticated route but the few below. */
export const requireAuth = authMiddleware(true);

/**
 * Requires a valid credential only: the routes a user must still reach to meet MFA_REQUIRED_ROLES — reading
 * themself, their second factors, enrolling one, stepping up to enrol, signing out (docs/second-factor.md, "Requiring
 * a second factor"). A route that also acts on other users calls `assertSecondFactorPolicy` for them itself.
 */
export const requireAuthToEnrol = authMiddleware(false);
