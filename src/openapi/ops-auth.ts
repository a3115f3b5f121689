import { z } from "zod";
import { changePasswordWithPasscodeBody, requestPasscodeBody } from "../auth/password-reset";
import { loginBody, validatePasswordBody } from "../auth/routes";
import { authorizationCheck, authorizationObject, authorizationRequest } from "../authz/routes";
import { convertLoginBody } from "../external/routes";
import { described, named } from "./registry";
import {
  AuthMethods,
  AuthorizationResponse,
  ExternalAPIKeyScopes,
  LoginWithPasswordResponse,
  OAuthConversionResponse,
  ResponseBody,
  ValidateUserPasswordResponse,
} from "./responses";
import {
  AUTH_WRITE,
  BODY,
  errors,
  JSON_NO_BODY,
  LOCATION,
  RATE,
  SET_SESSION_COOKIE,
  USER_404,
  userPath,
  type Operation,
} from "./table";

// The route's own request schemas, named after the interface's resources (interface §2).
named("AuthorizationObject", authorizationObject);
named("AuthorizationCheck", authorizationCheck);
named("AuthorizationRequest", authorizationRequest);
named("LoginWithPasswordRequest", loginBody);
named("ValidateUserPasswordRequest", validatePasswordBody);
named("RequestOneTimePasscodeRequest", requestPasscodeBody);
named("ChangePasswordWithOneTimePasscodeRequest", changePasswordWithPasscodeBody);
named("ConvertLoginRequest", convertLoginBody);

/**
 * The provider callbacks read their query by hand (they are browser redirects, never validated as a whole), so this
 * schema exists only for the document.
 */
const callbackQuery = z.object({
  code: described("Authorization code from the provider; with it (or `error`) the callback finishes the flow.", z.string()).optional(),
  state: described("The state the flow started with.", z.string()).optional(),
  error: described("Error code from the provider.", z.string()).optional(),
  error_description: described("Error text from the provider.", z.string()).optional(),
  redirect: described("Same-origin path to land on after sign-in (anything else becomes `/`).", z.string()).optional(),
  oidc_merge_state: described("`state_string` of a convert-login: finishing the flow converts that user's login type.", z.string()).optional(),
});

const CALLBACK_DESCRIPTION =
  "Without `code` or `error`, starts the provider flow (state, nonce and PKCE in a signed cookie) and redirects to the provider; with `oidc_merge_state` it continues a convert-login (A7). With `code` or `error`, finishes the flow: the provider's verified e-mail signs in (or, if allowed, signs up) a user of this login type, or completes the conversion; a session cookie is set and the browser is redirected to `redirect`.";

const callbackErrors = errors(
  {
    400: "The provider is not configured, the flow or conversion cookie is missing, invalid or for another provider, the state does not match, the provider returned an error, or the code exchange failed.",
    401: "The account is suspended.",
    403: "The e-mail is not verified or its domain is not allowed, the user has another login type, signups are disabled, or the verified e-mail does not match the converting user's.",
    409: "The external identity already belongs to another account (or was created concurrently).",
    502: "The OpenID Connect provider could not be reached (discovery failed).",
  },
  RATE,
);

function callback(operationId: string, provider: string, path: `/${string}`): Operation {
  return {
    method: "get",
    path,
    operationId,
    summary: `${provider} sign-in callback`,
    description: CALLBACK_DESCRIPTION,
    tags: ["External sign-in"],
    auth: "public",
    query: callbackQuery,
    responses: [
      {
        status: 302,
        description: "To the provider's authorization page (start), or to the `redirect` path with the session cookie set (finish).",
        headers: { ...LOCATION, ...SET_SESSION_COOKIE },
      },
    ],
    errors: callbackErrors,
  };
}

/** A1–A7, logout and the provider callbacks. */
export const authOperations: Operation[] = [
  {
    method: "get",
    path: "/api/v2/auth/scopes",
    operationId: "listApiKeyScopes",
    summary: "List the scopes an API key can have (A1)",
    tags: ["Authorization"],
    auth: "public",
    responses: [{ status: 200, description: "The scope catalog.", schema: ExternalAPIKeyScopes }],
    errors: {},
  },
  {
    method: "post",
    path: "/api/v2/authcheck",
    operationId: "checkAuthorization",
    summary: "Check whether the caller may perform actions on objects (A2)",
    description:
      "Every check is evaluated for the caller. `owner_id: \"me\"` means the caller; `resource_id` on a stored type uses the real object's owner and organization (not found → `false`). Unknown actions or types are `false`, not errors. At most 100 checks.",
    tags: ["Authorization"],
    auth: "session",
    body: authorizationRequest,
    responses: [{ status: 200, description: "One boolean per check key.", schema: AuthorizationResponse }],
    errors: errors(BODY, AUTH_WRITE, { 400: "More than 100 checks, or a check without `action` / `object.resource_type`." }),
  },
  {
    method: "post",
    path: "/api/v2/users/login",
    operationId: "loginWithPassword",
    summary: "Log in with e-mail and password (A3)",
    tags: ["Sign-in"],
    auth: "public",
    body: loginBody,
    responses: [
      {
        status: 201,
        description: "Signed in: the session token, also set as the session cookie.",
        schema: LoginWithPasswordResponse,
        headers: SET_SESSION_COOKIE,
      },
    ],
    errors: errors(
      BODY,
      {
        401: "`Incorrect email or password.` (unknown e-mail or wrong password, same timing), or the account is suspended.",
        403: "Password authentication is disabled, or the user's login type is not `password`.",
      },
      RATE,
    ),
  },
  {
    method: "get",
    path: "/api/v2/users/authmethods",
    operationId: "getAuthMethods",
    summary: "Which sign-in methods are enabled: password, GitHub, OpenID Connect (with its button text and icon)",
    tags: ["Sign-in"],
    auth: "public",
    responses: [{ status: 200, description: "The enabled methods.", schema: AuthMethods }],
    errors: {},
  },
  {
    method: "post",
    path: "/api/v2/users/logout",
    operationId: "logout",
    summary: "Log out: revoke the calling session and clear the cookie",
    tags: ["Sign-in"],
    auth: "session",
    responses: [{ status: 200, description: "`Logged out!`", schema: ResponseBody, headers: SET_SESSION_COOKIE }],
    errors: AUTH_WRITE,
  },
  {
    method: "post",
    path: "/api/v2/users/validate-password",
    operationId: "validateUserPassword",
    summary: "Check a candidate password against the password policy (A6)",
    tags: ["Sign-in"],
    auth: "session",
    body: validatePasswordBody,
    responses: [{ status: 200, description: "The verdict.", schema: ValidateUserPasswordResponse }],
    errors: errors(BODY, AUTH_WRITE),
  },
  {
    method: "post",
    path: "/api/v2/users/otp/request",
    operationId: "requestOneTimePasscode",
    summary: "Request a one-time passcode by e-mail (A5)",
    description: "Always 204 for a valid body, with the same timing whether or not the e-mail exists.",
    tags: ["Sign-in"],
    auth: "public",
    body: requestPasscodeBody,
    responses: [{ status: 204, description: JSON_NO_BODY }],
    errors: errors(BODY, RATE),
  },
  {
    method: "post",
    path: "/api/v2/users/otp/change-password",
    operationId: "changePasswordWithOneTimePasscode",
    summary: "Set a new password with a one-time passcode (A4)",
    description: "On success the code is consumed and every session and token of the user is revoked.",
    tags: ["Sign-in"],
    auth: "public",
    body: changePasswordWithPasscodeBody,
    responses: [{ status: 204, description: JSON_NO_BODY }],
    errors: errors(
      BODY,
      {
        400: "`Invalid password.` (policy), `Incorrect email or one-time passcode.`, or `New password cannot match old password.`",
      },
      RATE,
    ),
  },
  callback("oidcCallback", "OpenID Connect", "/api/v2/users/oidc/callback"),
  callback("githubCallback", "GitHub", "/api/v2/users/oauth2/github/callback"),
  {
    method: "post",
    path: "/api/v2/users/{user}/convert-login",
    operationId: "convertUserLoginType",
    summary: "Start converting the caller's password login to an external login (A7)",
    description:
      "Sets a signed cookie binding the state to the user; the browser then opens the provider's callback with `oidc_merge_state=<state_string>`.",
    tags: ["External sign-in"],
    auth: "session",
    pathParams: userPath,
    body: convertLoginBody,
    responses: [{ status: 201, description: "The conversion, valid for 5 minutes.", schema: OAuthConversionResponse }],
    errors: errors(
      BODY,
      AUTH_WRITE,
      {
        400: "`to_type` is not a configured `oidc` / `github` (`Cannot convert to login type \"<t>\".` or `Unknown login type \"<t>\".`), or the user is not a password user.",
        401: "The password is wrong: `Incorrect email or password.`",
        403: "`{user}` is not the caller.",
      },
      USER_404,
      RATE,
    ),
  },
];
