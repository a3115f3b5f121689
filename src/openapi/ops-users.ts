import { z } from "zod";
import {
  changePasswordBody,
  createFirstUserBody,
  createTokenBody,
  createUserBody,
  endSessionsQuery,
  listUsersQuery,
  updateRolesBody,
} from "../users/schemas";
import { named } from "./registry";
import { APIKey, APISession, CreateFirstUserResponse, GenerateAPIKeyResponse, GetUsersResponse, ResponseBody, User } from "./responses";
import { AUTH, AUTH_WRITE, BODY, errors, JSON_NO_BODY, QUERY, USER_404, userKeyPath, userPath, type Errors, type Operation } from "./table";

named("CreateFirstUserRequest", createFirstUserBody);
named("CreateUserRequest", createUserBody);
named("UpdateRolesRequest", updateRolesBody);
named("UpdateUserPasswordRequest", changePasswordBody);
named("CreateTokenRequest", createTokenBody);

const NO_PERMISSION = (what: string): Errors => ({ 403: `The caller may not ${what} (\`Forbidden.\`).` });
const OWNER_GUARD: Errors = { 403: "Only an owner may manage another owner." };
const INVALID_PASSWORD: Errors = { 400: "The password fails the policy: `Invalid password.` with a `password` validation." };

function status(action: "suspend" | "activate"): Operation {
  return {
    method: "put",
    path: `/api/v2/users/{user}/status/${action}`,
    operationId: `${action}User`,
    summary: action === "suspend" ? "Suspend a user" : "Activate a suspended user",
    description:
      "One route, `PUT /users/{user}/status/{suspend|activate}`, documented as its two literal paths. Suspending ends the user's sign-ins (its keys answer 401).",
    tags: ["Users"],
    auth: "session",
    pathParams: userPath,
    responses: [{ status: 200, description: "The user after the change.", schema: User }],
    errors: errors(AUTH_WRITE, { 400: `The caller tried to ${action} itself.` }, NO_PERMISSION("update this user"), OWNER_GUARD, USER_404),
  };
}

/** Accounts and API tokens (SPEC §7). */
export const userOperations: Operation[] = [
  {
    method: "get",
    path: "/api/v2/users/first",
    operationId: "checkFirstUser",
    summary: "Whether the first user (the initial owner) exists",
    tags: ["Users"],
    auth: "public",
    responses: [{ status: 200, description: "`The initial user has already been created!`", schema: ResponseBody }],
    errors: { 404: "No user exists yet: `The initial user has not been created!`" },
  },
  {
    method: "post",
    path: "/api/v2/users/first",
    operationId: "createFirstUser",
    summary: "Bootstrap the first owner and the default organization",
    tags: ["Users"],
    auth: "public",
    body: createFirstUserBody,
    responses: [{ status: 201, description: "Created.", schema: CreateFirstUserResponse }],
    errors: errors(BODY, INVALID_PASSWORD, { 409: "The initial user has already been created." }),
  },
  {
    method: "post",
    path: "/api/v2/users",
    operationId: "createUser",
    summary: "Create a user (or a service account)",
    tags: ["Users"],
    auth: "session",
    body: createUserBody,
    responses: [{ status: 201, description: "The new user.", schema: User }],
    errors: errors(BODY, INVALID_PASSWORD, AUTH_WRITE, NO_PERMISSION("create users"), {
      409: "A user with that e-mail or username already exists.",
    }),
  },
  {
    method: "get",
    path: "/api/v2/users",
    operationId: "listUsers",
    summary: "List users, by username, searchable",
    description: "A caller without site-wide read on users sees only itself.",
    tags: ["Users"],
    auth: "session",
    query: listUsersQuery,
    paramDocs: {
      q: "Coder's search syntax: space-separated `status:active`, `role:owner`, `login_type:oidc` (commas list several values) and free text (or `search:\"…\"`), matched case-insensitively in the username, name or e-mail. An unknown key or value → 400 `Invalid user search query.`",
    },
    responses: [{ status: 200, description: "One page and the total count.", schema: GetUsersResponse }],
    errors: errors(QUERY, AUTH),
  },
  {
    method: "get",
    path: "/api/v2/users/{user}",
    operationId: "getUser",
    summary: "Get a user",
    tags: ["Users"],
    auth: "session",
    pathParams: userPath,
    responses: [{ status: 200, description: "The user.", schema: User }],
    errors: errors(AUTH, NO_PERMISSION("read this user"), USER_404),
  },
  {
    method: "delete",
    path: "/api/v2/users/{user}",
    operationId: "deleteUser",
    summary: "Delete a user (soft delete; every key dies with it)",
    tags: ["Users"],
    auth: "session",
    pathParams: userPath,
    responses: [{ status: 200, description: "`User has been deleted!`", schema: ResponseBody }],
    errors: errors(AUTH_WRITE, NO_PERMISSION("delete this user"), { 403: "`You cannot delete yourself!`" }, OWNER_GUARD, USER_404),
  },
  {
    method: "put",
    path: "/api/v2/users/{user}/roles",
    operationId: "updateUserRoles",
    summary: "Replace a user's site roles",
    tags: ["Users"],
    auth: "session",
    pathParams: userPath,
    body: updateRolesBody,
    responses: [{ status: 200, description: "The user with its new roles.", schema: User }],
    errors: errors(
      BODY,
      AUTH_WRITE,
      { 400: "`You cannot change your own roles.`" },
      { 403: "The caller may not assign or unassign a role, or is not an owner granting site roles." },
      USER_404,
    ),
  },
  status("suspend"),
  status("activate"),
  {
    method: "put",
    path: "/api/v2/users/{user}/password",
    operationId: "updateUserPassword",
    summary: "Change a user's password",
    description:
      "Your own password needs `old_password`; an administrator resetting someone else's does not. Every other session of the user is revoked.",
    tags: ["Users"],
    auth: "session",
    pathParams: userPath,
    body: changePasswordBody,
    responses: [{ status: 204, description: JSON_NO_BODY }],
    errors: errors(
      BODY,
      {
        400: "`Only password users can change their password.`, `Old password is incorrect.`, `Invalid password.` (policy), or `New password cannot match old password.`",
      },
      AUTH_WRITE,
      NO_PERMISSION("update this user's password"),
      OWNER_GUARD,
      USER_404,
    ),
  },
  {
    method: "post",
    path: "/api/v2/users/{user}/keys/tokens",
    operationId: "createApiToken",
    summary: "Create a named API token",
    description: "`lifetime` in seconds (default 7 days, capped by TOKEN_MAX_LIFETIME); `scopes` default `[\"all\"]`.",
    tags: ["API keys"],
    auth: "session",
    pathParams: userPath,
    body: createTokenBody,
    responses: [{ status: 201, description: "The token; its secret is shown only here.", schema: GenerateAPIKeyResponse }],
    errors: errors(
      BODY,
      { 400: "Unknown scopes (`Invalid scopes.`) or a lifetime above the maximum." },
      AUTH_WRITE,
      NO_PERMISSION("create API keys for this user"),
      { 403: "The scopes are wider than the creating credential's." },
      USER_404,
      { 409: "A token with that name already exists." },
    ),
  },
  {
    method: "get",
    path: "/api/v2/users/{user}/keys/tokens",
    operationId: "listApiTokens",
    summary: "List a user's named API tokens, newest first",
    tags: ["API keys"],
    auth: "session",
    pathParams: userPath,
    responses: [{ status: 200, description: "The tokens (never their secrets).", schema: z.array(APIKey) }],
    errors: errors(AUTH, NO_PERMISSION("read this user's API keys"), USER_404),
  },
  {
    method: "get",
    path: "/api/v2/users/{user}/keys/sessions",
    operationId: "listSessions",
    summary: "List a user's login sessions, most recently used first",
    description: "One per sign-in (password, OpenID Connect or GitHub); named API tokens are listed apart. `current` marks the calling session.",
    tags: ["API keys"],
    auth: "session",
    pathParams: userPath,
    responses: [{ status: 200, description: "The sessions (never their secrets).", schema: z.array(APISession) }],
    errors: errors(AUTH, NO_PERMISSION("read this user's API keys"), USER_404),
  },
  {
    method: "delete",
    path: "/api/v2/users/{user}/keys/sessions",
    operationId: "endSessions",
    summary: "End all of a user's login sessions",
    description:
      "Signs the user out everywhere (named API tokens are kept) and closes their watch sockets. `except_current=true` keeps the calling session. The user themself, or an owner.",
    tags: ["API keys"],
    auth: "session",
    pathParams: userPath,
    query: endSessionsQuery,
    responses: [{ status: 204, description: JSON_NO_BODY }],
    errors: errors(QUERY, AUTH_WRITE, NO_PERMISSION("delete this user's API keys"), USER_404),
  },
  {
    method: "delete",
    path: "/api/v2/users/{user}/keys/{id}",
    operationId: "deleteApiKey",
    summary: "Delete an API key or session of a user",
    tags: ["API keys"],
    auth: "session",
    pathParams: userKeyPath,
    responses: [{ status: 204, description: JSON_NO_BODY }],
    errors: errors(AUTH_WRITE, NO_PERMISSION("delete this user's API keys"), USER_404, { 404: "The key is not one of this user's." }),
  },
];
