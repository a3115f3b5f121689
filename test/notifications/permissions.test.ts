/**
 * The permission matrix of the notification endpoints, the inbox, the notification preferences, password reset by
 * one-time passcode, login conversion and the external sign-in callbacks (docs/authorization.md: site roles, where each
 * endpoint checks, API token scopes, and "a user you may not read is 404, not 403"; docs/api.md, Notifications),
 * endpoint by endpoint: every line is one endpoint acting on one kind of target, every column one kind of caller. The
 * callers, fixtures and cell runner are the account matrix's (test/fixtures/principals.ts), with one more caller: a
 * member's token narrowed to `inbox_notification:*`.
 *
 * Each cell is its own test. It compares every stored table (notification messages in the columns fixed at enqueue)
 * and the inboxes of the caller and the target, read from their inbox objects, before and after: a refused request
 * (and an allowed read) changes nothing, an allowed write changes something. Background notification work is waited
 * out before each cell.
 */
import { describe, expect, it } from "vitest";
import { NotificationsMessages } from "../../src/notifications/messages";
import { TEMPLATE_IDS } from "../../src/notifications/templates";
import { quiesce } from "../fixtures/d1-state";
import { ACTORS, type Line, type Operation, permissionMatrix, request } from "../fixtures/principals";
import { stateChecks } from "../fixtures/stored-state";
import { expectError, json } from "../helpers";
import { deliver } from "../inbox/inbox-helpers";

// ---------------------------------------------------------------------------------------------------------------
// Operations
// ---------------------------------------------------------------------------------------------------------------

/** What these operations refer to beyond the caller and the target: `{id}` of the read-status endpoint. */
interface NotificationCase {
  /** A fresh unread notification of the caller (self) or of the target. */
  notificationId: string;
}

/** An unread notification in `userId`'s inbox, so that marking it (or everything) read would show. */
async function unreadFor(userId: string): Promise<string> {
  return (await deliver(userId, { title: "matrix" })).id;
}

const NOBODY = "nobody-at-all@nowhere.herald.test";

const op = {
  dispatchMethods: { title: "N2 GET /notifications/dispatch-methods", method: "GET", path: () => "/notifications/dispatch-methods", readOnly: true },
  methodsConfigured: {
    title: "GET /notifications/dispatch-methods/configured",
    method: "GET",
    path: () => "/notifications/dispatch-methods/configured",
    readOnly: true,
  },
  getSettings: { title: "N7 GET /notifications/settings", method: "GET", path: () => "/notifications/settings", readOnly: true },
  putSettings: {
    title: "N8 PUT /notifications/settings (current value)",
    method: "PUT",
    path: () => "/notifications/settings",
    // The value it already has: the owner gets a 304 and nothing changes; the notifier is never paused from here.
    body: () => ({ notifier_paused: false }),
    readOnly: true,
  },
  templatesSystem: { title: "N10 GET /notifications/templates/system", method: "GET", path: () => "/notifications/templates/system", readOnly: true },
  templatesCustom: { title: "N9 GET /notifications/templates/custom", method: "GET", path: () => "/notifications/templates/custom", readOnly: true },
  sendTest: { title: "N11 POST /notifications/test", method: "POST", path: () => "/notifications/test" },
  listMessages: { title: "GET /notifications/messages", method: "GET", path: () => "/notifications/messages", readOnly: true },
  sendCustom: {
    title: "N1 POST /notifications/custom",
    method: "POST",
    path: () => "/notifications/custom",
    body: () => ({ content: { title: "Matrix", message: "a cell of the permission matrix" } }),
  },
  listInbox: { title: "N3 GET /notifications/inbox", method: "GET", path: () => "/notifications/inbox", readOnly: true },
  markAllRead: {
    title: "N4 PUT /notifications/inbox/mark-all-as-read",
    method: "PUT",
    path: () => "/notifications/inbox/mark-all-as-read",
    arrange: async (c) => {
      if (c.actor) await unreadFor(c.actor.id);
      return {};
    },
  },
  watch: {
    title: "N5 GET /notifications/inbox/watch (upgrade)",
    method: "GET",
    path: () => "/notifications/inbox/watch",
    headers: { Upgrade: "websocket" },
    readOnly: true,
  },
  readStatus: {
    title: "N6 PUT /notifications/inbox/{id}/read-status",
    method: "PUT",
    path: (c) => `/notifications/inbox/${c.notificationId}/read-status`,
    body: () => ({ is_read: true }),
    arrange: async (c) => {
      const holder = c.ref === "me" ? c.actor : c.target;
      return holder ? { notificationId: await unreadFor(holder.id) } : {};
    },
  },
  getPrefs: {
    title: "N12 GET /users/{user}/notifications/preferences",
    method: "GET",
    path: (c) => `/users/${c.ref}/notifications/preferences`,
    readOnly: true,
  },
  putPrefs: {
    title: "N13 PUT /users/{user}/notifications/preferences",
    method: "PUT",
    path: (c) => `/users/${c.ref}/notifications/preferences`,
    // Keeps the Test Notification enabled: harmless to every later cell, but still an upsert (a row, an audit entry).
    body: () => ({ template_disabled_map: { [TEMPLATE_IDS.test]: false } }),
  },
  convertLogin: {
    title: "A7 POST /users/{user}/convert-login (the user's own password)",
    method: "POST",
    path: (c) => `/users/${c.ref}/convert-login`,
    body: (c) => ({ password: (c.ref === "me" ? c.actor : c.target)?.password ?? "", to_type: "oidc" }),
  },
  otpRequest: {
    title: "A5 POST /users/otp/request (nobody's e-mail)",
    method: "POST",
    path: () => "/users/otp/request",
    body: () => ({ email: NOBODY }),
    readOnly: true,
  },
  otpChange: {
    title: "A4 POST /users/otp/change-password (nobody's e-mail)",
    method: "POST",
    path: () => "/users/otp/change-password",
    body: () => ({ email: NOBODY, one_time_passcode: crypto.randomUUID(), password: "quartz-meadow-lantern-5119" }),
    readOnly: true,
  },
  oidcStart: { title: "GET /users/oidc/callback (start)", method: "GET", path: () => "/users/oidc/callback", readOnly: true },
  githubStart: { title: "GET /users/oauth2/github/callback (start)", method: "GET", path: () => "/users/oauth2/github/callback", readOnly: true },
} as const satisfies Record<string, Operation<NotificationCase>>;

// ---------------------------------------------------------------------------------------------------------------
// The matrix
// ---------------------------------------------------------------------------------------------------------------

const NOTIFICATION_ACTORS = [...ACTORS, "member token [inbox_notification:*]"] as const;

const matrix = permissionMatrix({
  actors: NOTIFICATION_ACTORS,
  blank: (): NotificationCase => ({ notificationId: crypto.randomUUID() }),
  // Notification messages and preferences are what these endpoints write, and the inboxes what they read and mark.
  tables: "all",
  inboxes: true,
});

/*
 * Why the cells are what they are (docs/authorization.md: site roles, where each endpoint checks, API token scopes,
 * "a user you may not read is 404, not 403"):
 * - The dispatch methods and the settings (GET) only need a signed-in caller; they check no resource, so every role
 *   reads them (a narrowed token needs the deployment_config:read scope).
 * - Whether each dispatch method is configured is read deployment_config, site: owners and auditors; user-admins,
 *   members and service accounts get 403.
 * - PUT /notifications/settings, POST /notifications/test and the message log are the owner's: update
 *   deployment_config, site-wide create/read notification_message. Everyone else — auditors, who may read
 *   deployment_config, included — gets 403. The owner's PUT with the value the setting already has is a 304.
 * - The template lists: notification_template read, which every site role has; a token without that scope does not.
 * - POST /notifications/custom: notification_message create on one's own; system users are denied it (403 with its
 *   own detail, checked below).
 * - The inbox (list, mark all read, watch, read status) is only ever the caller's own: inbox_notification read/update
 *   on owned objects. Another user's notification id is simply not in the caller's inbox (404) — for an owner too. A
 *   token needs inbox_notification.
 * - A user's notification preferences: the user themself or an owner (notification_preference on the user's
 *   objects). A user the caller cannot read is 404 first; one it can read but whose preferences it may not touch is
 *   403 (user-admins, auditors, an owner's user:read token). A token needs notification_preference to touch even its
 *   own user's.
 * - Login conversion: only the user themself (others visible → 403, invisible → 404), and only a password user (a
 *   system user → 400). Converting the login type is an update of the user (update_personal, like PUT
 *   /users/me/password), so a token narrowed to other scopes may not start one (403): a key's permission is its
 *   user's roles ∩ its scopes.
 * - Password reset by one-time passcode and the sign-in callbacks are public: whatever credential comes along, the
 *   answer is the same.
 */
/** Expected status per caller, in NOTIFICATION_ACTORS order. */
// biome-ignore format: the columns line up under the actors
const MATRIX: readonly Line<typeof NOTIFICATION_ACTORS, NotificationCase>[] = [
  //                                 anon  owner u-adm audit member system m:read o:read m:inbox
  // Every signed-in user may read these; a narrowed token needs the deployment_config:read scope (docs/security.md).
  [op.dispatchMethods, "—",         [401,  200,  200,  200,  200,   200,   403,   403,   403]],
  // Which methods are configured is the deployment's configuration: read deployment_config, owners and auditors.
  [op.methodsConfigured, "—",       [401,  200,  403,  200,  403,   403,   403,   403,   403]],
  [op.getSettings,     "—",         [401,  200,  200,  200,  200,   200,   403,   403,   403]],
  [op.putSettings,     "—",         [401,  304,  403,  403,  403,   403,   403,   403,   403]],
  [op.templatesSystem, "—",         [401,  200,  200,  200,  200,   200,   403,   403,   403]],
  [op.templatesCustom, "—",         [401,  200,  200,  200,  200,   200,   403,   403,   403]],
  [op.sendTest,        "—",         [401,  200,  403,  403,  403,   403,   403,   403,   403]],
  [op.listMessages,    "—",         [401,  200,  403,  403,  403,   403,   403,   403,   403]],
  [op.sendCustom,      "—",         [401,  204,  204,  204,  204,   403,   403,   403,   403]],
  [op.listInbox,       "self",      [401,  200,  200,  200,  200,   200,   403,   403,   200]],
  [op.markAllRead,     "self",      [401,  204,  204,  204,  204,   204,   403,   403,   204]],
  [op.watch,           "self",      [401,  101,  101,  101,  101,   101,   403,   403,   101]],
  [op.readStatus,      "self",      [401,  200,  200,  200,  200,   200,   403,   403,   200]],
  [op.readStatus,      "member",    [401,  404,  404,  404,  404,   404,   403,   403,   404]],
  [op.getPrefs,        "self",      [401,  200,  200,  200,  200,   200,   403,   403,   403]],
  [op.getPrefs,        "member",    [401,  200,  403,  403,  404,   404,   404,   403,   404]],
  [op.getPrefs,        "owner",     [401,  200,  403,  403,  404,   404,   404,   403,   404]],
  [op.putPrefs,        "self",      [401,  200,  200,  200,  200,   200,   403,   403,   403]],
  [op.putPrefs,        "member",    [401,  200,  403,  403,  404,   404,   404,   403,   404]],
  [op.putPrefs,        "owner",     [401,  200,  403,  403,  404,   404,   404,   403,   404]],
  [op.convertLogin,    "self",      [401,  201,  201,  201,  201,   400,   403,   403,   403]],
  [op.convertLogin,    "member",    [401,  403,  403,  403,  404,   404,   404,   403,   404]],
  [op.convertLogin,    "owner",     [401,  403,  403,  403,  404,   404,   404,   403,   404]],
  [op.otpRequest,      "—",         [204,  204,  204,  204,  204,   204,   204,   204,   204]],
  [op.otpChange,       "—",         [400,  400,  400,  400,  400,   400,   400,   400,   400]],
  [op.oidcStart,       "—",         [302,  302,  302,  302,  302,   302,   302,   302,   302]],
  [op.githubStart,     "—",         [302,  302,  302,  302,  302,   302,   302,   302,   302]],
];

matrix.run('permission matrix (docs/authorization.md, "Where each endpoint checks")', MATRIX);

// ---------------------------------------------------------------------------------------------------------------
// The same rules, asked differently
// ---------------------------------------------------------------------------------------------------------------

/** Every table, as the matrix's cells compare them (no inboxes: these requests do not touch any). */
const { snapshot } = stateChecks("all");

describe("documented answers", () => {
  it("N1 from a system user → 403 Forbidden with the documented detail, nothing enqueued", async () => {
    await quiesce();
    const before = await snapshot();
    const body = await expectError(
      await request("POST", "/notifications/custom", { token: matrix.shared().actors["system user"].token, body: { content: { title: "hi" } } }),
      403,
      NotificationsMessages.systemUserForbidden,
    );
    expect(body.detail).toBe(NotificationsMessages.systemUserCustom);
    expect(await snapshot()).toEqual(before);
  });

  it("N8 from the owner with the current value → 304 without a body; N11 → 200 without a body", async () => {
    const owner = matrix.shared().actors.owner;
    const unchanged = await request("PUT", "/notifications/settings", { token: owner.token, body: { notifier_paused: false } });
    expect(unchanged.status).toBe(304);
    expect(await unchanged.text()).toBe("");
    const test = await request("POST", "/notifications/test", { token: owner.token });
    expect(test.status).toBe(200);
    expect(await test.text()).toBe("");
    await quiesce();
  });

  it("N12/N13: an owner sees and changes another user's preferences, and the user sees the change", async () => {
    const { owner: admin, member } = matrix.shared().actors;
    const res = await request("PUT", `/users/${member.id}/notifications/preferences`, {
      token: admin.token,
      body: { template_disabled_map: { [TEMPLATE_IDS.userCreated]: true } },
    });
    expect(res.status).toBe(200);
    const own = await json<{ id: string; disabled: boolean }[]>(await request("GET", "/users/me/notifications/preferences", { token: member.token }));
    expect(own).toEqual(expect.arrayContaining([expect.objectContaining({ id: TEMPLATE_IDS.userCreated, disabled: true })]));
  });
});

// biome-ignore format: the verdicts line up under the callers
matrix.authcheckAgrees(
  () => ({
    readOwnInbox: { action: "read", object: { resource_type: "inbox_notification", owner_id: "me" } },
    updateOwnInbox: { action: "update", object: { resource_type: "inbox_notification", owner_id: "me" } },
    readOwnPreferences: { action: "read", object: { resource_type: "notification_preference", owner_id: "me" } },
    updateOthersPreferences: { action: "update", object: { resource_type: "notification_preference", owner_id: matrix.shared().member.id } },
    sendCustom: { action: "create", object: { resource_type: "notification_message", owner_id: "me" } },
    sendTest: { action: "create", object: { resource_type: "notification_message" } },
    readMessages: { action: "read", object: { resource_type: "notification_message" } },
    readTemplates: { action: "read", object: { resource_type: "notification_template" } },
    updateSettings: { action: "update", object: { resource_type: "deployment_config" } },
    convertOwnLogin: { action: "update_personal", object: { resource_type: "user", owner_id: "me" } },
  }),
  {
    //                          owner  u-adm  audit  member system m:read o:read m:inbox
    readOwnInbox:            [true,  true,  true,  true,  true,  false, false, true],
    updateOwnInbox:          [true,  true,  true,  true,  true,  false, false, true],
    readOwnPreferences:      [true,  true,  true,  true,  true,  false, false, false],
    updateOthersPreferences: [true,  false, false, false, false, false, false, false],
    sendCustom:              [true,  true,  true,  true,  false, false, false, false],
    sendTest:                [true,  false, false, false, false, false, false, false],
    readMessages:            [true,  false, false, false, false, false, false, false],
    readTemplates:           [true,  true,  true,  true,  true,  false, false, false],
    updateSettings:          [true,  false, false, false, false, false, false, false],
    convertOwnLogin:         [true,  true,  true,  true,  true,  false, false, false],
  },
);
