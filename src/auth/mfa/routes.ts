import { ne } from "drizzle-orm";
import { type Context, Hono } from "hono";
import { auditInsert } from "../../audit/log";
import { assertCan, assertScope } from "../../authz/guard";
import { apiKeys, type UserRow } from "../../db/schema";
import { dbFor, readFresh } from "../../db/session";
import { ApiError, badRequest, conflict, forbidden, Messages } from "../../http/errors";
import type { AppEnv } from "../../http/types";
import { jsonBody } from "../../http/validate";
import { describeRoute, errors, NO_BODY, noPermission, RATE, SET_SESSION_COOKIE, USER_404 } from "../../openapi/describe";
import { PasskeyRefused, passkeyRequestOptions } from "../../passkeys/assertion";
import { PasskeyMessages } from "../../passkeys/messages";
import { PublicKeyCredentialRequestOptions } from "../../passkeys/schemas";
import { noticeRecoveryCodeUsed, sendSecurityNotice } from "../../security/notices";
import { resolveUser } from "../../users/resolve";
import { userPath } from "../../users/schemas";
import { changeFactors, commitAccountChanges, endKeys } from "../account-changes";
import { AuthMessages } from "../messages";
import { limitPerAccount, limitPerIp, limitSensitive } from "../rate-limit";
import { refuseCrossSite, requireAuth, requireAuthToEnrol } from "../session";
import { startSession } from "../sign-in";
import { checkStepUp, recordStepUp, requireRecentAuth } from "../step-up";
import { acceptableStep, acceptStep, beginTotp, removeTotp, totpOf } from "./authenticator";
import { consumeChallenge, findChallenge, spendChallengeTry } from "./challenge";
import { factorsOf, hasSecondFactor, removeAllFactors, removeFactorLeftovers } from "./factors";
import { MfaMessages } from "./messages";
import { assertSecondFactorPolicy, secondFactorRequired } from "./policy";
import { newRecoveryCodes } from "./recovery-codes";
import {
  confirmTotpBody,
  LoginWithSecondFactorResponse,
  loginMfaBody,
  MfaStatus,
  mfaPasskeyOptionsBody,
  RecoveryCodesResponse,
  stepUpBody,
  TotpEnrolment,
} from "./schemas";
import { checkSecondFactor } from "./verify";

const SELF_ONLY = { 403: `\`{user}\` is not the caller: \`${MfaMessages.selfOnly}\`` };
const INCORRECT_CODE = `\`${MfaMessages.incorrectCode}\``;

/**
 * The caller's own account, for the routes that change a user's second factors: only the user themself, with the
 * personal-update permission (a narrowed token needs `user:update_personal`), and only an account that signs in.
 */
async function ownAccount(c: Context<AppEnv>): Promise<UserRow> {
  const user = await resolveUser(c, c.req.param("user") ?? "");
  assertCan(c, "update_personal", { type: "user", ownerId: user.id });
  if (user.id !== c.get("auth").user.id) throw forbidden(Messages.forbidden, MfaMessages.selfOnly);
  if (user.loginType === "none") throw badRequest(MfaMessages.noSignIn);
  return user;
}

/** Request options for a passkey as a second factor; a user without a usable passkey gets a 400 saying so. */
async function passkeyOptionsFor(c: Context<AppEnv>, purpose: "mfa" | "step-up", userId: string) {
  return passkeyRequestOptions(c, { purpose, userId }).catch((error: unknown) => {
    if (error instanceof PasskeyRefused) throw badRequest(MfaMessages.noPasskey);
    throw error;
  });
}

const codeRefused = (message: string) => badRequest(message, { validations: [{ field: "code", detail: message }], event: "authentication_failed" });

/** The second factor (docs/second-factor.md): its sign-in step, step-up, enrolment, recovery codes and an owner's reset. */
export const mfaRoutes = new Hono<AppEnv>()
  .post(
    "/users/login/mfa",
    describeRoute({
      operationId: "loginWithSecondFactor",
      summary: "Finish a sign-in with a second factor",
      description:
        "After `POST /users/login` (or an OpenID Connect or GitHub sign-in) answered `mfa_required`: the `mfa_token` it gave and a code from the authenticator app or a recovery code. Signs in as `POST /users/login` does.",
      tags: ["Sign-in"],
      responses: [
        {
          status: 201,
          description: "Signed in: the session token, also set as the session cookie.",
          schema: LoginWithSecondFactorResponse,
          headers: SET_SESSION_COOKIE,
        },
      ],
      errors: errors(
        {
          401: `A wrong code (${INCORRECT_CODE}; the fifth wrong one ends the \`mfa_token\`), an \`mfa_token\` that is unknown, expired, used or out of tries (\`${MfaMessages.signInExpired}\`), or the account was suspended meanwhile.`,
        },
        RATE,
      ),
    }),
    refuseCrossSite,
    jsonBody(loginMfaBody),
    async (c) => {
      const { mfa_token: mfaToken, code, passkey } = c.req.valid("json");
      // The limits of password sign-in, shared with it: a second step gives no guesses of its own (docs/second-factor.md, "Signing in").
      await limitPerIp(c, "login");
      const db = dbFor(c, "write");
      const challenge = await findChallenge(db, mfaToken);
      if (!challenge) throw new ApiError(401, MfaMessages.signInExpired);
      const { user } = challenge;
      await limitPerAccount(c, "login", user.email || user.id);
      if (!(await spendChallengeTry(db, challenge))) throw new ApiError(401, MfaMessages.signInExpired);
      if (user.status === "suspended") throw new ApiError(401, AuthMessages.suspended);
      if (user.loginType !== challenge.loginType) throw new ApiError(401, MfaMessages.signInExpired);
      const factors = await factorsOf(db, user.id);
      const proof = passkey !== undefined ? { passkey } : { code: code ?? "" };
      const wrong = passkey !== undefined ? PasskeyMessages.incorrectPasskey : MfaMessages.incorrectCode;
      const checked = await checkSecondFactor(c, db, user.id, factors, proof, "mfa");
      if (!checked) {
        await auditInsert(db, c, {
          userId: user.id,
          action: "login_second_factor_failed",
          resourceType: "user",
          resourceId: user.id,
          statusCode: 401,
        });
        throw new ApiError(401, wrong);
      }
      // The challenge and the code are used up together: of two requests racing with them, one signs in.
      const [consumed, used] = await db.batch([consumeChallenge(db, challenge.id), checked.use]);
      if (consumed.length === 0) throw new ApiError(401, MfaMessages.signInExpired);
      if (used.length === 0) throw new ApiError(401, wrong);
      if (checked.method === "recovery_code") noticeRecoveryCodeUsed(c, user.id, factors.recoveryCodes - 1);
      const token = await startSession(c, db, {
        userId: user.id,
        loginType: challenge.loginType,
        methods: [...challenge.methods, checked.amr],
        diff: { login_type: challenge.loginType, second_factor: checked.method },
      });
      return c.json({ session_token: token, ...(challenge.redirect === undefined ? {} : { redirect: challenge.redirect }) }, 201);
    },
  )
  .post(
    "/users/login/mfa/passkey-options",
    describeRoute({
      operationId: "secondFactorPasskeyOptions",
      summary: "Request options for a passkey as the second step of a sign-in",
      description:
        "For an `mfa_token` whose user has a passkey: `allowCredentials` lists their passkeys (none suspect), user verification preferred; the challenge is single use, lives 5 minutes, and serves only this sign-in's user. Asking spends none of the token's tries.",
      tags: ["Sign-in"],
      responses: [{ status: 200, description: "The options for `navigator.credentials.get()`.", schema: PublicKeyCredentialRequestOptions }],
      errors: errors(
        { 400: `The user has no passkey: \`${MfaMessages.noPasskey}\`` },
        { 401: `The \`mfa_token\` is unknown, expired, used or out of tries: \`${MfaMessages.signInExpired}\`` },
        RATE,
      ),
    }),
    refuseCrossSite,
    jsonBody(mfaPasskeyOptionsBody),
    async (c) => {
      const { mfa_token: mfaToken } = c.req.valid("json");
      await limitPerIp(c, "login");
      const challenge = await findChallenge(dbFor(c, "write"), mfaToken);
      if (!challenge) throw new ApiError(401, MfaMessages.signInExpired);
      return c.json(await passkeyOptionsFor(c, "mfa", challenge.user.id), 200);
    },
  )
  .post(
    "/users/me/step-up",
    describeRoute({
      operationId: "stepUp",
      summary: "Confirm it is you: refresh the session's authentication time",
      description:
        'For the actions that need a recent sign-in (docs/second-factor.md, "Step-up"). A user with a second factor confirms with a `code` (authenticator app or recovery code); one without, with their `password`. An external-login user without a second factor signs in again instead.',
      tags: ["Sign-in"],
      access: "anyone",
      scope: "api_key:update",
      responses: [{ status: 204, description: NO_BODY }],
      errors: errors(
        {
          400: `A wrong code (${INCORRECT_CODE}) or password (\`${MfaMessages.incorrectPassword}\`); a password from a user with a second factor (\`${MfaMessages.useSecondFactor}\`) or a code from one without (\`${MfaMessages.usePassword}\`); an external-login user without a factor (\`${MfaMessages.signInAgainToConfirm}\`); or an API token (\`${MfaMessages.sessionsOnly}\`).`,
        },
        RATE,
      ),
    }),
    requireAuthToEnrol,
    jsonBody(stepUpBody),
    async (c) => {
      const body = c.req.valid("json");
      // Step-up rewrites the calling key's authentication time: a narrowed token needs api_key:update for it.
      assertScope(c, "api_key", "update");
      const { key, user } = c.get("auth");
      if (key.loginType === "token") throw badRequest(MfaMessages.sessionsOnly);
      const db = dbFor(c, "write");
      const proof = await checkStepUp(c, db, user, body, limitSensitive(c, "step-up"));
      await db.batch([
        recordStepUp(db, key, proof.amr),
        auditInsert(db, c, { action: "step_up", resourceType: "api_key", resourceId: key.id, diff: { method: proof.method } }),
      ]);
      return c.body(null, 204);
    },
  )
  .post(
    "/users/me/step-up/passkey-options",
    describeRoute({
      operationId: "stepUpPasskeyOptions",
      summary: "Request options for confirming it is you with a passkey",
      description:
        "For `POST /users/me/step-up` with `passkey`: `allowCredentials` lists the caller's passkeys (none suspect), user verification preferred; the challenge is single use, lives 5 minutes, and serves only the caller's step-up.",
      tags: ["Sign-in"],
      access: "anyone",
      scope: "api_key:update",
      responses: [{ status: 200, description: "The options for `navigator.credentials.get()`.", schema: PublicKeyCredentialRequestOptions }],
      errors: errors(
        { 400: `The caller has no passkey (\`${MfaMessages.noPasskey}\`), or is an API token (\`${MfaMessages.sessionsOnly}\`).` },
        RATE,
      ),
    }),
    requireAuthToEnrol,
    async (c) => {
      assertScope(c, "api_key", "update");
      const { key, user } = c.get("auth");
      if (key.loginType === "token") throw badRequest(MfaMessages.sessionsOnly);
      await limitSensitive(c, "step-up");
      return c.json(await passkeyOptionsFor(c, "step-up", user.id), 200);
    },
  )
  .get(
    "/users/:user/mfa",
    describeRoute({
      operationId: "getSecondFactors",
      summary: "A user's second factors",
      description: "The user themself, or whoever may read their personal data (user-admins and owners).",
      tags: ["Users"],
      access: "anyone",
      scope: "user:read_personal",
      pathParams: userPath,
      responses: [{ status: 200, description: "Which factors the user has.", schema: MfaStatus }],
      errors: errors(noPermission("read this user's personal data"), USER_404),
    }),
    requireAuthToEnrol,
    async (c) => {
      const user = await resolveUser(c, c.req.param("user"));
      // Reading oneself is what MFA_REQUIRED_ROLES leaves open; reading others is not.
      if (user.id !== c.get("auth").user.id) await assertSecondFactorPolicy(c);
      assertCan(c, "read_personal", { type: "user", ownerId: user.id });
      // A factor enrolled a moment ago is found even where a replica has not seen it yet (docs/consistency.md).
      const factors = (await readFresh(c, (db) => factorsOf(db, user.id), hasSecondFactor)) ?? { totp: false, passkeys: 0, recoveryCodes: 0 };
      return c.json(
        {
          totp: factors.totp,
          passkeys: factors.passkeys,
          recovery_codes_left: factors.recoveryCodes,
          required: secondFactorRequired(c.get("config"), user),
        },
        200,
      );
    },
  )
  .post(
    "/users/:user/mfa/totp",
    describeRoute({
      operationId: "beginTotp",
      summary: "Start setting up an authenticator app",
      description:
        "A new secret, pending until `POST /users/{user}/mfa/totp/confirm` gives one of its codes; calling again replaces a pending one. Only the user themself.",
      tags: ["Users"],
      access: "anyone",
      scope: "user:update_personal",
      pathParams: userPath,
      responses: [{ status: 200, description: "The secret and its `otpauth://` URL, shown only here.", schema: TotpEnrolment }],
      errors: errors({ 400: `The account does not sign in: \`${MfaMessages.noSignIn}\`` }, SELF_ONLY, USER_404, {
        409: `\`${MfaMessages.totpAlreadyOn}\``,
      }),
    }),
    requireAuthToEnrol,
    requireRecentAuth,
    async (c) => {
      const user = await ownAccount(c);
      const db = dbFor(c, "write");
      if ((await totpOf(db, user.id))?.confirmedAt) throw conflict(MfaMessages.totpAlreadyOn);
      const begun = await beginTotp(db, c.get("config"), user.id, user.email || user.username);
      const [upserted] = await db.batch([begun.upsert, auditInsert(db, c, { action: "begin_totp", resourceType: "user", resourceId: user.id })]);
      // Confirmed by a concurrent request in the meantime: the app that is on stays.
      if (upserted.length === 0) throw conflict(MfaMessages.totpAlreadyOn);
      return c.json({ secret: begun.secret, otpauth_url: begun.otpauthUrl }, 200);
    },
  )
  .post(
    "/users/:user/mfa/totp/confirm",
    describeRoute({
      operationId: "confirmTotp",
      summary: "Turn the authenticator app on with one of its codes",
      description: "Answers the first set of recovery codes, shown only here. Only the user themself.",
      tags: ["Users"],
      access: "anyone",
      scope: "user:update_personal",
      pathParams: userPath,
      responses: [{ status: 200, description: "Ten recovery codes, each usable once.", schema: RecoveryCodesResponse }],
      errors: errors(
        {
          400: `A wrong code (${INCORRECT_CODE}), no app waiting to be confirmed (\`${MfaMessages.totpNotPending}\`), or an account that does not sign in.`,
        },
        SELF_ONLY,
        USER_404,
        { 409: `\`${MfaMessages.totpAlreadyOn}\`` },
        RATE,
      ),
    }),
    requireAuthToEnrol,
    requireRecentAuth,
    jsonBody(confirmTotpBody),
    async (c) => {
      const { code } = c.req.valid("json");
      const user = await ownAccount(c);
      const db = dbFor(c, "write");
      const row = await totpOf(db, user.id);
      if (row?.confirmedAt) throw conflict(MfaMessages.totpAlreadyOn);
      if (!row) throw badRequest(MfaMessages.totpNotPending);
      // Each try costs an HMAC or three: limited like any code check.
      await limitSensitive(c, "totp-confirm");
      const step = await acceptableStep(c.get("config"), row, code.replace(/\s/g, ""));
      if (step === undefined) throw codeRefused(MfaMessages.incorrectCode);
      // Turned on first, on its own: of two confirmations at once one wins, and only the winner's codes are made.
      if ((await acceptStep(db, user.id, step, true)).length === 0) throw conflict(MfaMessages.totpAlreadyOn);
      const codes = await newRecoveryCodes(db, user.id);
      await commitAccountChanges(
        c,
        db,
        [changeFactors(user.id, codes.statements)],
        [auditInsert(db, c, { action: "enable_totp", resourceType: "user", resourceId: user.id })],
      );
      sendSecurityNotice(c, { userId: user.id, event: "factor_added", labels: { factor: "An authenticator app" } });
      return c.json({ recovery_codes: codes.codes }, 200);
    },
  )
  .delete(
    "/users/:user/mfa/totp",
    describeRoute({
      operationId: "removeTotp",
      summary: "Remove the authenticator app (or one still pending)",
      description: "With no other second factor left, the recovery codes go too. Only the user themself.",
      tags: ["Users"],
      access: "anyone",
      scope: "user:update_personal",
      pathParams: userPath,
      responses: [{ status: 204, description: NO_BODY }],
      errors: errors({ 400: `The account does not sign in: \`${MfaMessages.noSignIn}\`` }, SELF_ONLY, USER_404, {
        404: `No authenticator app, on or pending: \`${MfaMessages.totpNotOn}\``,
      }),
    }),
    requireAuth,
    requireRecentAuth,
    async (c) => {
      const user = await ownAccount(c);
      const db = dbFor(c, "write");
      const [row, factors] = await Promise.all([totpOf(db, user.id), factorsOf(db, user.id)]);
      if (!row) throw new ApiError(404, MfaMessages.totpNotOn);
      // Recovery codes stand in for a factor: once the last one is gone, so are they (and any sign-in waiting for one).
      const lastFactor = factors.passkeys === 0;
      await commitAccountChanges(
        c,
        db,
        [changeFactors(user.id, [removeTotp(db, user.id), ...(lastFactor ? removeFactorLeftovers(db, user.id) : [])])],
        [auditInsert(db, c, { action: "disable_totp", resourceType: "user", resourceId: user.id, diff: { was_on: row.confirmedAt !== null } })],
      );
      // A pending app never worked as a factor: removing it changes nothing the account relies on.
      if (row.confirmedAt !== null) sendSecurityNotice(c, { userId: user.id, event: "factor_removed", labels: { factor: "The authenticator app" } });
      return c.body(null, 204);
    },
  )
  .post(
    "/users/:user/mfa/recovery-codes",
    describeRoute({
      operationId: "regenerateRecoveryCodes",
      summary: "Replace the recovery codes with a new set",
      description: "The earlier set stops working. Only the user themself, with a second factor.",
      tags: ["Users"],
      access: "anyone",
      scope: "user:update_personal",
      pathParams: userPath,
      responses: [{ status: 200, description: "Ten new recovery codes, each usable once, shown only here.", schema: RecoveryCodesResponse }],
      errors: errors(
        { 400: `The user has no second factor (\`${MfaMessages.noFactorForCodes}\`), or the account does not sign in.` },
        SELF_ONLY,
        USER_404,
      ),
    }),
    requireAuth,
    requireRecentAuth,
    async (c) => {
      const user = await ownAccount(c);
      const db = dbFor(c, "write");
      if (!hasSecondFactor(await factorsOf(db, user.id))) throw badRequest(MfaMessages.noFactorForCodes);
      const codes = await newRecoveryCodes(db, user.id);
      await commitAccountChanges(
        c,
        db,
        [changeFactors(user.id, codes.statements)],
        [auditInsert(db, c, { action: "regenerate_recovery_codes", resourceType: "user", resourceId: user.id })],
      );
      sendSecurityNotice(c, { userId: user.id, event: "recovery_codes_regenerated" });
      return c.json({ recovery_codes: codes.codes }, 200);
    },
  )
  .delete(
    "/users/:user/mfa",
    describeRoute({
      operationId: "resetSecondFactors",
      summary: "Remove every second factor of another user (an owner's reset)",
      description:
        "For a user who lost their authenticator app and their recovery codes: every factor and recovery code goes, and every login session of the user ends (their watch sockets close); API tokens are kept. Owners only, on another user.",
      tags: ["Users"],
      access: "owner",
      scope: "user:update",
      pathParams: userPath,
      responses: [{ status: 204, description: NO_BODY }],
      errors: errors(
        noPermission("update this user"),
        { 403: `The caller is not an owner (\`${MfaMessages.ownerOnly}\`), or is the user (\`${MfaMessages.notOnYourself}\`).` },
        USER_404,
        { 404: `The user has no second factor: \`${MfaMessages.noFactors}\`` },
      ),
    }),
    requireAuth,
    requireRecentAuth,
    async (c) => {
      const user = await resolveUser(c, c.req.param("user"));
      assertCan(c, "update", { type: "user", ownerId: user.id });
      const caller = c.get("auth");
      if (!caller.subject.siteRoles.includes("owner")) throw forbidden(Messages.forbidden, MfaMessages.ownerOnly);
      if (user.id === caller.user.id) throw forbidden(Messages.forbidden, MfaMessages.notOnYourself);
      const db = dbFor(c, "write");
      const [row, factors] = await Promise.all([totpOf(db, user.id), factorsOf(db, user.id)]);
      if (!row && !hasSecondFactor(factors)) throw new ApiError(404, MfaMessages.noFactors);
      await commitAccountChanges(
        c,
        db,
        [changeFactors(user.id, removeAllFactors(db, user.id)), endKeys(db, user.id, ne(apiKeys.loginType, "token"))],
        [
          auditInsert(db, c, {
            action: "reset_mfa",
            resourceType: "user",
            resourceId: user.id,
            diff: { totp: factors.totp, passkeys: factors.passkeys },
          }),
        ],
      );
      sendSecurityNotice(c, {
        userId: user.id,
        event: "factor_removed",
        labels: { factor: `Every second factor (reset by ${caller.user.username})` },
      });
      return c.body(null, 204);
    },
  );
