/**
 * The permission matrix of the account and authorization endpoints (docs/authorization.md: site roles, where each
 * endpoint checks, API token scopes, and "a user you may not read is 404, not 403"), endpoint by endpoint: every line
 * below is one endpoint acting on one kind of target, every column one kind of caller. The callers, the fixtures and
 * the cell runner are shared with the notification matrix (test/fixtures/principals.ts); each cell is its own test,
 * which also checks that a refused request (and an allowed read) left the account tables untouched, and that an
 * allowed write did change something.
 *
 * Targets: `self` is the caller (`/users/me/...`), `member` another plain member, `owner` another owner, `—` none.
 * Destructive lines get fresh callers and targets where a success would change them (see `arrange` in the harness).
 */
import { describe, expect, it } from "vitest";
import { codeAt, passwordStep } from "../auth/mfa-helpers";
import { ACTORS, adminToken, type Line, newAccount, type Operation, permissionMatrix, type Verdicts } from "../fixtures/principals";
import { call, json, login } from "../helpers";

// ---------------------------------------------------------------------------------------------------------------
// Operations
// ---------------------------------------------------------------------------------------------------------------

/**
 * What these operations refer to beyond the caller and the target: `{id}` for key deletion; an authenticator app's
 * secret (to make its codes) and a sign-in waiting for its second factor.
 */
interface KeyCase {
  keyId: string;
  secret: string;
  mfaToken: string;
}

const NEW_PASSWORD = "quartz-meadow-lantern-5119";
const unique = () => crypto.randomUUID().slice(0, 8);

async function keyOf(userId: string, token: string): Promise<string> {
  const res = await call("POST", `/users/${userId}/keys/tokens`, { token, body: { token_name: `doomed-${unique()}` } });
  expect(res.status).toBe(201);
  return (await json<{ key: string }>(res)).key.slice(0, 10);
}

/**
 * An authenticator app on for whoever `token` signs in as (left as it is when it already is); its secret, or "" for an
 * account that cannot have one (a service account).
 */
async function appOn(token: string): Promise<string> {
  const res = await call("GET", "/users/me/mfa", { token });
  if (res.status === 200 && (await json<{ totp: boolean }>(res)).totp) return "";
  const begun = await call("POST", "/users/me/mfa/totp", { token });
  if (begun.status !== 200) return "";
  const { secret } = await json<{ secret: string }>(begun);
  expect((await call("POST", "/users/me/mfa/totp/confirm", { token, body: { code: codeAt(secret) } })).status).toBe(200);
  return secret;
}

/** A pending authenticator app for whoever `token` signs in as; its secret, or "" where the account cannot have one. */
async function appPending(token: string): Promise<string> {
  const begun = await call("POST", "/users/me/mfa/totp", { token });
  return begun.status === 200 ? (await json<{ secret: string }>(begun)).secret : "";
}

const op = {
  scopes: { title: "GET /auth/scopes", method: "GET", path: () => "/auth/scopes", readOnly: true },
  authcheck: {
    title: "POST /authcheck",
    method: "POST",
    path: () => "/authcheck",
    body: () => ({ checks: { self: { action: "read", object: { resource_type: "user", owner_id: "me" } } } }),
    readOnly: true,
  },
  login: {
    title: "POST /users/login (own e-mail and password)",
    method: "POST",
    path: () => "/users/login",
    body: (c) => ({ email: c.actor?.email, password: c.actor?.password }),
    signsIn: true,
  },
  logout: { title: "POST /users/logout", method: "POST", path: () => "/users/logout", destructive: true },
  validatePassword: {
    title: "POST /users/validate-password",
    method: "POST",
    path: () => "/users/validate-password",
    body: () => ({ password: "anything" }),
    readOnly: true,
  },
  firstGet: { title: "GET /users/first", method: "GET", path: () => "/users/first", readOnly: true },
  firstPost: {
    title: "POST /users/first (already bootstrapped)",
    method: "POST",
    path: () => "/users/first",
    body: () => ({ email: `late-${unique()}@herald.test`, username: `late-${unique()}`, password: NEW_PASSWORD }),
  },
  createUser: {
    title: "POST /users",
    method: "POST",
    path: () => "/users",
    body: () => ({ email: `new-${unique()}@herald.test`, username: `new-${unique()}`, password: NEW_PASSWORD }),
  },
  listUsers: { title: "GET /users", method: "GET", path: () => "/users", readOnly: true },
  getUser: { title: "GET /users/{user}", method: "GET", path: (c) => `/users/${c.ref}`, readOnly: true },
  deleteUser: { title: "DELETE /users/{user}", method: "DELETE", path: (c) => `/users/${c.ref}`, destructive: true },
  grantAuditor: {
    title: "PUT /users/{user}/roles [auditor]",
    method: "PUT",
    path: (c) => `/users/${c.ref}/roles`,
    body: () => ({ roles: ["auditor"] }),
    destructive: true,
  },
  grantOwner: {
    title: "PUT /users/{user}/roles [owner]",
    method: "PUT",
    path: (c) => `/users/${c.ref}/roles`,
    body: () => ({ roles: ["owner"] }),
    destructive: true,
  },
  clearRoles: {
    title: "PUT /users/{user}/roles []",
    method: "PUT",
    path: (c) => `/users/${c.ref}/roles`,
    body: () => ({ roles: [] }),
    destructive: true,
  },
  suspend: { title: "PUT /users/{user}/status/suspend", method: "PUT", path: (c) => `/users/${c.ref}/status/suspend`, destructive: true },
  activate: {
    title: "PUT /users/{user}/status/activate (suspended target)",
    method: "PUT",
    path: (c) => `/users/${c.ref}/status/activate`,
    destructive: true,
    arrange: async (c) => {
      if (c.target) expect((await call("PUT", `/users/${c.target.id}/status/suspend`, { token: adminToken() })).status).toBe(200);
      return {};
    },
  },
  setPassword: {
    title: "PUT /users/{user}/password",
    method: "PUT",
    path: (c) => `/users/${c.ref}/password`,
    // Your own needs the old password; an administrator's reset of someone else's does not.
    body: (c) => (c.ref === "me" ? { old_password: c.actor?.password ?? "", password: NEW_PASSWORD } : { password: NEW_PASSWORD }),
    destructive: true,
  },
  createToken: {
    title: "POST /users/{user}/keys/tokens",
    method: "POST",
    path: (c) => `/users/${c.ref}/keys/tokens`,
    body: () => ({ token_name: `matrix-${unique()}` }),
  },
  listTokens: { title: "GET /users/{user}/keys/tokens", method: "GET", path: (c) => `/users/${c.ref}/keys/tokens`, readOnly: true },
  deleteToken: {
    title: "DELETE /users/{user}/keys/{id}",
    method: "DELETE",
    path: (c) => `/users/${c.ref}/keys/${c.keyId}`,
    // Not destructive: the key it deletes is made afresh for each cell.
    arrange: async (c) => {
      const owner = c.ref === "me" ? c.actor : c.target;
      if (!owner) return {};
      return { keyId: await keyOf(owner.id, c.ref === "me" && c.actor ? c.actor.setupToken : adminToken()) };
    },
  },
  listSessions: { title: "GET /users/{user}/keys/sessions", method: "GET", path: (c) => `/users/${c.ref}/keys/sessions`, readOnly: true },
  endSessions: { title: "DELETE /users/{user}/keys/sessions", method: "DELETE", path: (c) => `/users/${c.ref}/keys/sessions`, destructive: true },
  deleteOthersTokenViaMe: {
    title: "DELETE /users/me/keys/{another member's key}",
    method: "DELETE",
    path: (c) => `/users/me/keys/${c.keyId}`,
    arrange: async () => {
      const bystander = await newAccount();
      return { keyId: await keyOf(bystander.id, adminToken()) };
    },
  },
  stepUp: {
    title: "POST /users/me/step-up (own password)",
    method: "POST",
    path: () => "/users/me/step-up",
    body: (c) => ({ password: c.actor?.password }),
  },
  loginMfa: {
    title: "POST /users/login/mfa (own app's code)",
    method: "POST",
    path: () => "/users/login/mfa",
    // The next step's code: the current one confirmed the app, and a code is good once.
    body: (c) => ({ mfa_token: c.mfaToken, code: codeAt(c.secret, 1) }),
    signsIn: true,
    destructive: true,
    arrange: async (c) => {
      if (!c.actor) return {};
      const secret = await appOn(c.actor.setupToken);
      return { secret, mfaToken: (await passwordStep(c.actor)).mfa_token };
    },
  },
  getMfa: { title: "GET /users/{user}/mfa", method: "GET", path: (c) => `/users/${c.ref}/mfa`, readOnly: true },
  beginTotp: { title: "POST /users/{user}/mfa/totp", method: "POST", path: (c) => `/users/${c.ref}/mfa/totp`, destructive: true },
  confirmTotp: {
    title: "POST /users/{user}/mfa/totp/confirm (pending app)",
    method: "POST",
    path: (c) => `/users/${c.ref}/mfa/totp/confirm`,
    body: (c) => ({ code: c.secret ? codeAt(c.secret) : "123456" }),
    destructive: true,
    arrange: async (c) => ({ secret: c.ref === "me" && c.actor ? await appPending(c.actor.setupToken) : "" }),
  },
  removeTotp: {
    title: "DELETE /users/{user}/mfa/totp (app on)",
    method: "DELETE",
    path: (c) => `/users/${c.ref}/mfa/totp`,
    destructive: true,
    arrange: async (c) => ({ secret: c.ref === "me" && c.actor ? await appOn(c.actor.setupToken) : "" }),
  },
  recoveryCodes: {
    title: "POST /users/{user}/mfa/recovery-codes (app on)",
    method: "POST",
    path: (c) => `/users/${c.ref}/mfa/recovery-codes`,
    destructive: true,
    arrange: async (c) => ({ secret: c.ref === "me" && c.actor ? await appOn(c.actor.setupToken) : "" }),
  },
  resetMfa: {
    title: "DELETE /users/{user}/mfa (the target's app on)",
    method: "DELETE",
    path: (c) => `/users/${c.ref}/mfa`,
    destructive: true,
    arrange: async (c) => {
      if (!c.target) return {};
      // The refused cells of a line share their target: its app is turned on once.
      const status = await json<{ totp: boolean }>(await call("GET", `/users/${c.target.id}/mfa`, { token: adminToken() }));
      return { secret: status.totp ? "" : await appOn(await login(c.target.email, c.target.password)) };
    },
  },
} as const satisfies Record<string, Operation<KeyCase>>;

// ---------------------------------------------------------------------------------------------------------------
// The matrix
// ---------------------------------------------------------------------------------------------------------------

const matrix = permissionMatrix({
  actors: ACTORS,
  blank: (): KeyCase => ({ keyId: "0000000000", secret: "", mfaToken: "" }),
  tables: "accounts",
  // Delivery is not under test here (enqueueing continues while paused); where the setting is missing the file is
  // merely slower.
  pauseNotifier: true,
});

/*
 * Why the cells are what they are (docs/authorization.md: the site roles, the endpoint rules, invisible users):
 * - A user the caller may not read is invisible: 404 before any other check. Members, system users and member tokens
 *   read only themselves; owners, user-admins, auditors (and an owner's user:read token) read everyone.
 * - Visible but not permitted: 403. Auditors only read; user-admins have no api_key rights over others; a user:read
 *   token does nothing but read users, whatever its user's roles.
 * - Only owners act on owners and grant site roles; nobody changes their own roles (400), suspends or activates
 *   themselves (400 where the role could otherwise update users, else 403), or deletes themselves (403).
 * - Everyone manages their own keys (api_key "all" on owned objects) and their own password (update_personal); a
 *   service account has no password to change (400). A key in another user's name is not found under /users/me.
 */
/** Expected status per caller, in ACTORS order; `null` where the combination means nothing. */
// biome-ignore format: the columns line up under the actors
const MATRIX: readonly Line<typeof ACTORS, KeyCase>[] = [
  //                                     anon   owner u-adm audit member system m:read o:read
  [op.scopes,                 "—",      [200,   200,  200,  200,  200,   200,   200,   200]],
  [op.firstGet,               "—",      [200,   200,  200,  200,  200,   200,   200,   200]],
  [op.firstPost,              "—",      [409,   409,  409,  409,  409,   409,   409,   409]],
  [op.login,                  "self",   [null,  201,  201,  201,  201,   401,   201,   201]],
  // Logging out deletes the calling key, and validating a password reads personal data: a user:read token has
  // neither scope (docs/security.md: every route checks a scope).
  [op.logout,                 "self",   [401,   200,  200,  200,  200,   200,   403,   403]],
  [op.authcheck,              "—",      [401,   200,  200,  200,  200,   200,   200,   200]],
  [op.validatePassword,       "—",      [401,   200,  200,  200,  200,   200,   403,   403]],
  [op.createUser,             "—",      [401,   201,  201,  403,  403,   403,   403,   403]],
  [op.listUsers,              "—",      [401,   200,  200,  200,  200,   200,   200,   200]],
  [op.getUser,                "self",   [401,   200,  200,  200,  200,   200,   200,   200]],
  [op.getUser,                "member", [401,   200,  200,  200,  404,   404,   404,   200]],
  [op.getUser,                "owner",  [401,   200,  200,  200,  404,   404,   404,   200]],
  [op.deleteUser,             "self",   [401,   403,  403,  403,  403,   403,   403,   403]],
  [op.deleteUser,             "member", [401,   200,  200,  403,  404,   404,   404,   403]],
  [op.deleteUser,             "owner",  [401,   200,  403,  403,  404,   404,   404,   403]],
  [op.grantAuditor,           "self",   [401,   400,  400,  400,  400,   400,   400,   400]],
  [op.grantAuditor,           "member", [401,   200,  403,  403,  404,   404,   404,   403]],
  [op.grantOwner,             "member", [401,   200,  403,  403,  404,   404,   404,   403]],
  [op.clearRoles,             "owner",  [401,   200,  403,  403,  404,   404,   404,   403]],
  [op.suspend,                "self",   [401,   400,  400,  403,  403,   403,   403,   403]],
  [op.suspend,                "member", [401,   200,  200,  403,  404,   404,   404,   403]],
  [op.suspend,                "owner",  [401,   200,  403,  403,  404,   404,   404,   403]],
  [op.activate,               "self",   [401,   400,  400,  403,  403,   403,   403,   403]],
  [op.activate,               "member", [401,   200,  200,  403,  404,   404,   404,   403]],
  [op.setPassword,            "self",   [401,   204,  204,  204,  204,   400,   403,   403]],
  [op.setPassword,            "member", [401,   204,  204,  403,  404,   404,   404,   403]],
  [op.setPassword,            "owner",  [401,   204,  403,  403,  404,   404,   404,   403]],
  [op.createToken,            "self",   [401,   201,  201,  201,  201,   201,   403,   403]],
  [op.createToken,            "member", [401,   201,  403,  403,  404,   404,   404,   403]],
  [op.createToken,            "owner",  [401,   201,  403,  403,  404,   404,   404,   403]],
  [op.listTokens,             "self",   [401,   200,  200,  200,  200,   200,   403,   403]],
  [op.listTokens,             "member", [401,   200,  403,  403,  404,   404,   404,   403]],
  [op.deleteToken,            "self",   [401,   204,  204,  204,  204,   204,   403,   403]],
  [op.deleteToken,            "member", [401,   204,  403,  403,  404,   404,   404,   403]],
  // Login sessions are api_key objects too: everyone lists and ends their own; of other users', only owners.
  [op.listSessions,           "self",   [401,   200,  200,  200,  200,   200,   403,   403]],
  [op.listSessions,           "member", [401,   200,  403,  403,  404,   404,   404,   403]],
  [op.endSessions,            "self",   [401,   204,  204,  204,  204,   204,   403,   403]],
  [op.endSessions,            "member", [401,   204,  403,  403,  404,   404,   404,   403]],
  [op.deleteOthersTokenViaMe, "self",   [401,   404,  404,  404,  404,   404,   403,   403]],
  // Second factors (docs/second-factor.md): each user changes only their own; reading them is personal data
  // (user-admins and owners read others'); only an owner removes someone else's. A service account does not sign in,
  // so it has none (400), and its API token cannot step up (400).
  [op.stepUp,                 "—",      [401,   204,  204,  204,  204,   400,   403,   403]],
  [op.loginMfa,               "self",   [null,  201,  201,  201,  201,   null,  201,   201]],
  [op.getMfa,                 "self",   [401,   200,  200,  200,  200,   200,   403,   403]],
  [op.getMfa,                 "member", [401,   200,  200,  403,  404,   404,   404,   403]],
  [op.getMfa,                 "owner",  [401,   200,  200,  403,  404,   404,   404,   403]],
  [op.beginTotp,              "self",   [401,   200,  200,  200,  200,   400,   403,   403]],
  [op.beginTotp,              "member", [401,   403,  403,  403,  404,   404,   404,   403]],
  [op.confirmTotp,            "self",   [401,   200,  200,  200,  200,   400,   403,   403]],
  [op.removeTotp,             "self",   [401,   204,  204,  204,  204,   400,   403,   403]],
  [op.removeTotp,             "member", [401,   403,  403,  403,  404,   404,   404,   403]],
  [op.recoveryCodes,          "self",   [401,   200,  200,  200,  200,   400,   403,   403]],
  [op.resetMfa,               "self",   [401,   403,  403,  403,  403,   403,   403,   403]],
  [op.resetMfa,               "member", [401,   204,  403,  403,  404,   404,   404,   403]],
  [op.resetMfa,               "owner",  [401,   204,  403,  403,  404,   404,   404,   403]],
];

matrix.run('permission matrix (docs/authorization.md, "Where each endpoint checks")', MATRIX);

// ---------------------------------------------------------------------------------------------------------------
// What each caller sees, and what POST /authcheck says it may do — the same rules, asked differently
// ---------------------------------------------------------------------------------------------------------------

describe("GET /users lists only what the caller may read", () => {
  //                                          owner u-adm audit member system m:read o:read
  const seesOthers: Verdicts<typeof ACTORS> = [true, true, true, false, false, false, true];
  matrix.callers.forEach((actorName, i) => {
    it(`as ${actorName}: ${seesOthers[i] ? "everyone" : "only itself"}`, async () => {
      const shared = matrix.shared();
      const actor = shared.actors[actorName];
      const res = await call("GET", "/users?limit=100", { token: actor.token });
      expect(res.status).toBe(200);
      const { users, count } = await json<{ users: { id: string }[]; count: number }>(res);
      if (seesOthers[i]) {
        expect(users.map((u) => u.id)).toEqual(expect.arrayContaining([actor.id, shared.member.id, shared.owner.id]));
      } else {
        expect(users.map((u) => u.id)).toEqual([actor.id]);
        expect(count).toBe(1);
      }
    });
  });
});

// biome-ignore format: the verdicts line up under the callers
matrix.authcheckAgrees(
  () => {
    const other = matrix.shared().member.id;
    return {
    readOtherUser: { action: "read", object: { resource_type: "user", resource_id: other } },
    deleteOtherUser: { action: "delete", object: { resource_type: "user", resource_id: other } },
    tokenForOther: { action: "create", object: { resource_type: "api_key", owner_id: other } },
    ownToken: { action: "create", object: { resource_type: "api_key", owner_id: "me" } },
    assignRoles: { action: "assign", object: { resource_type: "assign_role" } },
    ownPassword: { action: "update_personal", object: { resource_type: "user", owner_id: "me" } },
    readAuditLog: { action: "read", object: { resource_type: "audit_log" } },
    readDeploymentConfig: { action: "read", object: { resource_type: "deployment_config" } },
    };
  },
  {
    //                       owner  u-adm  audit  member system m:read o:read
    readOtherUser:        [true,  true,  true,  false, false, false, true],
    deleteOtherUser:      [true,  true,  false, false, false, false, false],
    tokenForOther:        [true,  false, false, false, false, false, false],
    ownToken:             [true,  true,  true,  true,  true,  false, false],
    assignRoles:          [true,  true,  false, false, false, false, false],
    // RBAC allows it; the endpoint still refuses a service account, which has no password (400 above).
    ownPassword:          [true,  true,  true,  true,  true,  false, false],
    readAuditLog:         [true,  false, true,  false, false, false, false],
    readDeploymentConfig: [true,  false, true,  false, false, false, false],
  },
);
