import { eq } from "drizzle-orm";
import { Hono } from "hono";
import { auditInsert } from "../audit/log";
import { assertScope } from "../authz/guard";
import { apiKeys } from "../db/schema";
import { dbFor } from "../db/session";
import { forbidden } from "../http/errors";
import { ResponseBody } from "../http/schemas";
import type { AppEnv } from "../http/types";
import { jsonBody } from "../http/validate";
import { describeRoute, errors, PASSWORD_CHECK_UNAVAILABLE, RATE, SET_SESSION_COOKIE } from "../openapi/describe";
import { commitAccountChanges, endKeys } from "./account-changes";
import { clearSessionCookie } from "./cookies";
import { verifyLogin } from "./login";
import { AuthMessages } from "./messages";
import { authMethods, passcodeTemplateMethod } from "./methods";
import { issueChallenge } from "./mfa/challenge";
import { factorsOf, hasSecondFactor, secondFactorMethods } from "./mfa/factors";
import { LoginMfaRequiredResponse } from "./mfa/schemas";
import { checkPasswordPolicy } from "./passwords/policy";
import { limitPerAccount, limitPerIp, limitSensitive } from "./rate-limit";
import { AuthMethods, LoginWithPasswordResponse, loginBody, ValidateUserPasswordResponse, validatePasswordBody } from "./schemas";
import { refuseCrossSite, requireAuth, requireAuthToEnrol } from "./session";
import { startSession } from "./sign-in";

/** Sign-in and session endpoints: password sign-in, logout, validate-password, and the public list of sign-in methods. */
export const authRoutes = new Hono<AppEnv>()
  // Public, and mounted before /users/{user}, which would otherwise read "authmethods" as a user name.
  .get(
    "/users/authmethods",
    describeRoute({
      operationId: "getAuthMethods",
      summary: "Which sign-in methods are enabled: password, GitHub, OpenID Connect (with its button text and icon)",
      tags: ["Sign-in"],
      responses: [{ status: 200, description: "The enabled methods.", schema: AuthMethods }],
    }),
    async (c) => c.json(authMethods(c.get("config"), await passcodeTemplateMethod(dbFor(c, "read"))), 200),
  )
  .post(
    "/users/login",
    describeRoute({
      operationId: "loginWithPassword",
      summary: "Log in with e-mail and password",
      tags: ["Sign-in"],
      responses: [
        {
          status: 201,
          description: "Signed in: the session token, also set as the session cookie.",
          schema: LoginWithPasswordResponse,
          headers: SET_SESSION_COOKIE,
        },
        {
          status: 200,
          description: "The password was right and the user has a second factor: no session and no cookie yet. Finish with `POST /users/login/mfa`.",
          schema: LoginMfaRequiredResponse,
        },
      ],
      errors: errors(
        {
          401: `\`${AuthMessages.incorrectLogin}\` (unknown e-mail or wrong password, same timing), or the account is suspended.`,
          403: "Password authentication is disabled, or the user's login type is not `password`.",
        },
        RATE,
      ),
    }),
    refuseCrossSite,
    jsonBody(loginBody),
    async (c) => {
      const { email, password } = c.req.valid("json");
      const config = c.get("config");
      await limitPerIp(c, "login");
      if (config.PASSWORD_AUTH_DISABLED) throw forbidden(AuthMessages.passwordAuthDisabled);
      await limitPerAccount(c, "login", email);

      const db = dbFor(c, "write");
      const user = await verifyLogin(db, email, password);
      // Only after the password's verdict: an unknown e-mail and a wrong password do no work this one skips
      // (docs/security.md, "Timing: existing account vs unknown e-mail").
      const factors = await factorsOf(db, user.id);
      if (hasSecondFactor(factors)) {
        const challenge = await issueChallenge(db, { userId: user.id, loginType: "password", methods: ["pwd"] });
        await db.batch([
          challenge.insert,
          auditInsert(db, c, {
            userId: user.id,
            action: "login_second_factor_asked",
            resourceType: "user",
            resourceId: user.id,
            diff: { login_type: "password" },
          }),
        ]);
        return c.json({ mfa_required: true as const, mfa_token: challenge.token, methods: secondFactorMethods(factors) }, 200);
      }
      const token = await startSession(c, db, { userId: user.id, loginType: "password", methods: ["pwd"] });
      return c.json({ session_token: token }, 201);
    },
  )
  .post(
    "/users/logout",
    describeRoute({
      operationId: "logout",
      summary: "Log out: revoke the calling session and clear the cookie",
      tags: ["Sign-in"],
      access: "anyone",
      scope: "api_key:delete",
      responses: [{ status: 200, description: `\`${AuthMessages.loggedOut}\``, schema: ResponseBody, headers: SET_SESSION_COOKIE }],
    }),
    requireAuthToEnrol,
    async (c) => {
      // Logging out deletes the calling key: a narrowed token needs api_key:delete for it, like any key deletion.
      assertScope(c, "api_key", "delete");
      const { key, user } = c.get("auth");
      const db = dbFor(c, "write");
      await commitAccountChanges(
        c,
        db,
        [endKeys(db, user.id, eq(apiKeys.id, key.id))],
        [auditInsert(db, c, { userId: user.id, action: "logout", resourceType: "api_key", resourceId: key.id })],
      );
      clearSessionCookie(c, c.get("config"));
      return c.json({ message: AuthMessages.loggedOut }, 200);
    },
  )
  .post(
    "/users/validate-password",
    describeRoute({
      operationId: "validateUserPassword",
      summary: "Check a candidate password against the password policy",
      tags: ["Sign-in"],
      access: "anyone",
      scope: "user:read_personal",
      responses: [{ status: 200, description: "The verdict.", schema: ValidateUserPasswordResponse }],
      errors: errors(RATE, PASSWORD_CHECK_UNAVAILABLE),
    }),
    requireAuth,
    jsonBody(validatePasswordBody),
    async (c) => {
      const { password } = c.req.valid("json");
      assertScope(c, "user", "read_personal");
      // The strength estimate costs about 20 ms of CPU: limited like any password check.
      await limitSensitive(c, "validate-password");
      const { email, username, name } = c.get("auth").user;
      return c.json(await checkPasswordPolicy(c.env.ASSETS, password, { email, username, name }), 200);
    },
  );
