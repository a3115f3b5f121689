import { and, desc, eq } from "drizzle-orm";
import { type Context, Hono } from "hono";
import * as z from "zod";
import { auditInsert } from "../audit/log";
import { changeFactors, commitAccountChanges } from "../auth/account-changes";
import { AuthMessages } from "../auth/messages";
import { factorsOf, removeFactorLeftovers } from "../auth/mfa/factors";
import { limitPerIp, limitSensitive } from "../auth/rate-limit";
import { refuseCrossSite, requireAuth, requireAuthToEnrol } from "../auth/session";
import { startSession } from "../auth/sign-in";
import { requireRecentAuth } from "../auth/step-up";
import { assertCan } from "../authz/guard";
import { type PasskeyRow, passkeys, type UserRow, users } from "../db/schema";
import { dbFor } from "../db/session";
import { ApiError, forbidden, Messages, notFound } from "../http/errors";
import { canonicalId, isUuidShaped } from "../http/ids";
import type { AppEnv } from "../http/types";
import { jsonBody } from "../http/validate";
import { describeRoute, errors, NO_BODY, noPermission, RATE, SET_SESSION_COOKIE, USER_404 } from "../openapi/describe";
import { sendSecurityNotice } from "../security/notices";
import { resolveUser } from "../users/resolve";
import { userPath } from "../users/schemas";
import { PasskeyRefused, passkeyRequestOptions, verifyPasskeyAssertion } from "./assertion";
import { PasskeyMessages } from "./messages";
import { registerPasskey, registrationOptions } from "./registration";
import {
  addPasskeyBody,
  LoginWithPasskeyResponse,
  Passkey,
  PublicKeyCredentialCreationOptions,
  PublicKeyCredentialRequestOptions,
  passkeyLoginBody,
  userPasskeyPath,
} from "./schemas";

/** The public shape of a passkey: never its credential id or public key. */
function toPasskeyResponse(row: PasskeyRow): z.input<typeof Passkey> {
  return { id: row.id, name: row.name, created_at: row.createdAt, last_used_at: row.lastUsedAt, suspect_at: row.suspectAt };
}

/**
 * Only the user themself adds a passkey, with a credential that may create keys for them and holds every scope: a
 * passkey signs in with all of them, so a narrowed token must not be able to mint one (docs/passkeys.md, "Who may
 * do what").
 */
async function enrollingUser(c: Context<AppEnv>) {
  const user = await resolveUser(c, c.req.param("user") ?? "");
  const { user: caller, key } = c.get("auth");
  if (user.id !== caller.id) throw forbidden(Messages.forbidden, PasskeyMessages.onlySelf);
  assertCan(c, "create", { type: "api_key", ownerId: user.id });
  if (!key.scopes.includes("all")) throw forbidden(Messages.forbidden, PasskeyMessages.needsFullScope);
  return user;
}

const ENROL_403 = errors(noPermission("create API keys for this user"), {
  403: `Another user (\`${PasskeyMessages.onlySelf}\`), or a credential without the \`all\` scope (\`${PasskeyMessages.needsFullScope}\`).`,
});

/** One 401 for every refused assertion (docs/passkeys.md, "Signing in with a passkey"): it never says which check failed. */
function incorrectPasskey(refusal: PasskeyRefused): ApiError {
  return new ApiError(401, PasskeyMessages.incorrectPasskey, refusal.reason === "challenge" ? { detail: PasskeyMessages.challengeUnusable } : {});
}

/** Passkeys: adding, listing and removing a user's, and passwordless sign-in with one (docs/api.md, "Passkeys"). */
export const passkeyRoutes = new Hono<AppEnv>()
  .post(
    "/users/login/passkey/options",
    describeRoute({
      operationId: "passkeyLoginOptions",
      summary: "Start a passwordless sign-in: request options for a discoverable passkey",
      description: "No credential. Empty `allowCredentials`, user verification required; the challenge is single use and lives 5 minutes.",
      tags: ["Passkeys"],
      responses: [{ status: 200, description: "The options for `navigator.credentials.get()`.", schema: PublicKeyCredentialRequestOptions }],
      errors: RATE,
    }),
    refuseCrossSite,
    async (c) => {
      await limitPerIp(c, "passkey-login-options");
      return c.json(await passkeyRequestOptions(c, { purpose: "login" }), 200);
    },
  )
  .post(
    "/users/login/passkey",
    describeRoute({
      operationId: "loginWithPasskey",
      summary: "Sign in with a passkey",
      description:
        "The browser's answer to the options of `POST /users/login/passkey/options`. As `POST /users/login`: a session and its cookie, the browser's previous session replaced.",
      tags: ["Passkeys"],
      responses: [
        {
          status: 201,
          description: "Signed in: the session token, also set as the session cookie.",
          schema: LoginWithPasskeyResponse,
          headers: SET_SESSION_COOKIE,
        },
      ],
      errors: errors(
        {
          401: `\`${PasskeyMessages.incorrectPasskey}\` for every refused assertion (unknown passkey, bad signature, origin, RP id hash or challenge, no user verification, a suspect passkey or a counter that went backwards), or the account is suspended.`,
          403: "The user's login type is not `password`.",
        },
        RATE,
      ),
    }),
    refuseCrossSite,
    jsonBody(passkeyLoginBody),
    async (c) => {
      await limitPerIp(c, "passkey-login");
      const { response } = c.req.valid("json");
      const db = dbFor(c, "write");
      let user: UserRow | undefined;
      // As A3 after a correct password: the login type, then suspension (docs/api.md, "Signing in with a password");
      // checked before the passkey's use is recorded, so a refused sign-in changes nothing.
      const admit = async (passkey: PasskeyRow) => {
        [user] = await db
          .select()
          .from(users)
          .where(and(eq(users.id, passkey.userId), eq(users.deleted, false)))
          .limit(1);
        if (!user) throw incorrectPasskey(new PasskeyRefused("unknown-credential"));
        if (user.loginType !== "password") throw forbidden(AuthMessages.wrongLoginType("passkey", user.loginType));
        if (user.status === "suspended") throw new ApiError(401, AuthMessages.suspended);
      };
      const passkey = await verifyPasskeyAssertion(c, { purpose: "login" }, response, admit).catch((error: unknown) => {
        throw error instanceof PasskeyRefused ? incorrectPasskey(error) : error;
      });
      if (!user) throw incorrectPasskey(new PasskeyRefused("unknown-credential"));
      return c.json(
        {
          session_token: await startSession(c, db, {
            userId: user.id,
            loginType: "password",
            methods: ["passkey"],
            diff: { method: "passkey", passkey: passkey.id },
          }),
        },
        201,
      );
    },
  )
  .post(
    "/users/:user/passkeys/options",
    describeRoute({
      operationId: "passkeyCreationOptions",
      summary: "Start adding a passkey: creation options",
      description:
        "The user themself. A discoverable credential with user verification required, attestation `none`, ES256 or RS256; `excludeCredentials` lists the user's passkeys. The challenge is single use and lives 5 minutes.",
      tags: ["Passkeys"],
      access: "anyone",
      scope: "api_key:create",
      pathParams: userPath,
      responses: [{ status: 200, description: "The options for `navigator.credentials.create()`.", schema: PublicKeyCredentialCreationOptions }],
      errors: errors(ENROL_403, USER_404, RATE),
    }),
    requireAuthToEnrol,
    requireRecentAuth,
    async (c) => {
      const user = await enrollingUser(c);
      await limitSensitive(c, "passkey-options", user.id);
      return c.json(await registrationOptions(c, user), 200);
    },
  )
  .post(
    "/users/:user/passkeys",
    describeRoute({
      operationId: "addPasskey",
      summary: "Add a passkey",
      description: "The user themself, with the browser's answer to the options of `POST /users/{user}/passkeys/options`.",
      tags: ["Passkeys"],
      access: "anyone",
      scope: "api_key:create",
      pathParams: userPath,
      responses: [{ status: 201, description: "The passkey.", schema: Passkey }],
      errors: errors(
        {
          400: `\`${PasskeyMessages.registrationRefused}\` (a bad signature, origin, RP id hash or challenge, or no user verification; \`detail\` says which), or \`${PasskeyMessages.tooManyPasskeys}\`.`,
        },
        ENROL_403,
        USER_404,
        { 409: `\`${PasskeyMessages.alreadyRegistered}\`` },
        RATE,
      ),
    }),
    requireAuthToEnrol,
    requireRecentAuth,
    jsonBody(addPasskeyBody),
    async (c) => {
      const body = c.req.valid("json");
      const user = await enrollingUser(c);
      await limitSensitive(c, "passkey-register", user.id);
      return c.json(toPasskeyResponse(await registerPasskey(c, user, body)), 201);
    },
  )
  .get(
    "/users/:user/passkeys",
    describeRoute({
      operationId: "listPasskeys",
      summary: "List a user's passkeys, newest first",
      description: "The user themself, or an owner.",
      tags: ["Passkeys"],
      access: "anyone",
      scope: "api_key:read",
      pathParams: userPath,
      responses: [{ status: 200, description: "The passkeys.", schema: z.array(Passkey) }],
      errors: errors(noPermission("read this user's API keys"), USER_404),
    }),
    requireAuth,
    async (c) => {
      const user = await resolveUser(c, c.req.param("user"));
      assertCan(c, "read", { type: "api_key", ownerId: user.id });
      const rows = await dbFor(c, "read")
        .select()
        .from(passkeys)
        .where(eq(passkeys.userId, user.id))
        .orderBy(desc(passkeys.createdAt), desc(passkeys.id));
      return c.json(rows.map(toPasskeyResponse), 200);
    },
  )
  .delete(
    "/users/:user/passkeys/:id",
    describeRoute({
      operationId: "deletePasskey",
      summary: "Remove a passkey",
      description: "The user themself, or an owner. The passkey can no longer sign in or confirm anything.",
      tags: ["Passkeys"],
      access: "anyone",
      scope: "api_key:delete",
      pathParams: userPasskeyPath,
      responses: [{ status: 204, description: NO_BODY }],
      errors: errors(noPermission("delete this user's API keys"), USER_404, { 404: "The passkey is not one of this user's." }),
    }),
    requireAuth,
    requireRecentAuth,
    async (c) => {
      const user = await resolveUser(c, c.req.param("user"));
      assertCan(c, "delete", { type: "api_key", ownerId: user.id });
      const id = c.req.param("id");
      if (!isUuidShaped(id)) throw notFound();
      const db = dbFor(c, "write");
      const which = and(eq(passkeys.id, canonicalId(id)), eq(passkeys.userId, user.id));
      const [[found], factors] = await Promise.all([
        db.select({ id: passkeys.id, name: passkeys.name, suspectAt: passkeys.suspectAt }).from(passkeys).where(which).limit(1),
        factorsOf(db, user.id),
      ]);
      if (!found) throw notFound();
      // The last usable factor going: the recovery codes go with it, as when the authenticator app is removed.
      const lastFactor = !factors.totp && factors.passkeys === (found.suspectAt === null ? 1 : 0);
      await commitAccountChanges(
        c,
        db,
        [changeFactors(user.id, [db.delete(passkeys).where(which), ...(lastFactor ? removeFactorLeftovers(db, user.id) : [])])],
        [auditInsert(db, c, { action: "delete", resourceType: "passkey", resourceId: found.id, diff: { owner: user.id, name: found.name } })],
      );
      sendSecurityNotice(c, { userId: user.id, event: "factor_removed", labels: { factor: `The passkey "${found.name}"` } });
      return c.body(null, 204);
    },
  );
