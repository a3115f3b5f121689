
import { beforeAll, describe, expect, it } from "vitest";
import { TEMPLATE_IDS } from "../../src/notifications/templates";
import { BASE, call, expectError, json, login, owner, send } from "../helpers";
import { deliver, inbox } from "../inbox/inbox-helpers";
import { quiesce, storedState } from "../fixtures/d1-state";

// ---------------------------------------------------------------------------------------------------------------
// Callers
// ---------------------------------------------------------------------------------------------------------------

const ACTORS = [
  "anonymous",
  "owner",
  "user-admin",
  "auditor",
  "member",
  "system user",
  "member token [user:read]",
  "owner token [user:read]",
  "member token [inbox_notification:*]",
] as const;
type ActorName = (typeof ACTORS)[number];
type CallerName = Exclude<ActorName, "anonymous">;
const CALLERS = ACTORS.filter((a): a is CallerName => a !== "anonymous");

interface Account {
  id: string;
  username: string;
  email: string;
  password: string;
}

interface Principal extends Account {
  /** The credential the caller acts with. */
  token: string;
}

let adminToken = "";

async function newAccount(roles: readonly string[] = []): Promise<Account> {
  const username = `acct-${crypto.randomUUID().slice(0, 13)}`;
  const email = `${username}@herald.test`;
  const password = `Tr0ubadour-${crypto.randomUUID()}`;
  const res = await call("POST", "/users", { token: adminToken, body: { email, username, password } });
  expect(res.status).toBe(201);
  const { id } = await json<{ id: string }>(res);
  if (roles.length > 0) expect((await call("PUT", `/users/${id}/roles`, { token: adminToken, body: { roles } })).status).toBe(200);
  return { id, username, email, password };
}

async function signedIn(roles: readonly string[]): Promise<Principal> {
  const account = await newAccount(roles);
  return { ...account, token: await login(account.email, account.password) };
}

/** A token narrowed to `scopes`: its effective permission is its user's roles ∩ those scopes (SPEC A1). */
async function scopedToken(roles: readonly string[], scopes: readonly string[]): Promise<Principal> {
  const user = await signedIn(roles);
  const res = await call("POST", "/users/me/keys/tokens", { token: user.token, body: { token_name: "scoped", scopes } });
  expect(res.status).toBe(201);
  return { ...user, token: (await json<{ key: string }>(res)).key };
}

/** A service account acting through an all-scope API token the admin minted for it. */
async function serviceAccount(): Promise<Principal> {
  const username = `svc-${crypto.randomUUID().slice(0, 13)}`;
  const email = `${username}@herald.test`;
  const res = await call("POST", "/users", { token: adminToken, body: { username, email, service_account: true } });
  expect(res.status).toBe(201);
  const { id } = await json<{ id: string }>(res);
  const key = await call("POST", `/users/${id}/keys/tokens`, { token: adminToken, body: { token_name: "svc" } });
  expect(key.status).toBe(201);
  return { id, username, email, password: "any-password-at-all-42", token: (await json<{ key: string }>(key)).key };
}

const MAKE_ACTOR: Record<CallerName, () => Promise<Principal>> = {
  owner: () => signedIn(["owner"]),
  "user-admin": () => signedIn(["user-admin"]),
  auditor: () => signedIn(["auditor"]),
  member: () => signedIn([]),
  "system user": serviceAccount,
  "member token [user:read]": () => scopedToken([], ["user:read"]),
  "owner token [user:read]": () => scopedToken(["owner"], ["user:read"]),
  "member token [inbox_notification:*]": () => scopedToken([], ["inbox_notification:*"]),
};

// ---------------------------------------------------------------------------------------------------------------
// Operations
// ---------------------------------------------------------------------------------------------------------------

type Target = "—" | "self" | "member" | "owner";

interface Case {
  actor: Principal | undefined;
  target: Account | undefined;
  /** `{user}` as it goes into the path: `me` for self, else the target's id. */
  ref: string;
  /** `{id}` of N6: a fresh unread notification of the caller (self) or of the target. */
  notificationId: string;
}

interface Operation {
  title: string;
  method: "GET" | "POST" | "PUT";
  path: (c: Case) => string;
  body?: (c: Case) => unknown;
  headers?: Record<string, string>;
  /** Even success writes nothing (or, for N8's 304, nothing changes). */
  readOnly?: boolean;
  arrange?: (c: Case) => Promise<Partial<Case>>;
}

/** An unread notification in `userId`'s inbox, so that marking it (or everything) read would show. */
async function unreadFor(userId: string): Promise<string> {
  return (await deliver(userId, { title: "matrix" })).id;
}

const NOBODY = "nobody-at-all@nowhere.herald.test";

const op = {
  dispatchMethods: { title: "N2 GET /notifications/dispatch-methods", method: "GET", path: () => "/notifications/dispatch-methods", readOnly: true },
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
  watch: { title: "N5 GET /notifications/inbox/watch (upgrade)", method: "GET", path: () => "/notifications/inbox/watch", headers: { Upgrade: "websocket" }, readOnly: true },
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
  getPrefs: { title: "N12 GET /users/{user}/notifications/preferences", method: "GET", path: (c) => `/users/${c.ref}/notifications/preferences`, readOnly: true },
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
} as const satisfies Record<string, Operation>;

// ---------------------------------------------------------------------------------------------------------------
// The matrix
// ---------------------------------------------------------------------------------------------------------------

/** Expected status per caller, in ACTORS order. */
type Cells = readonly [number, number, number, number, number, number, number, number, number];
type Line = readonly [Operation, Target, Cells];

/*
 * Why the cells are what they are (SPEC §4 and §5, §2's "invisible → 404"):
 * - N2 and N7 only need a signed-in caller; they check no resource, so any token, however narrow, reads them.
 * - N8, N11 and the message log are the owner's: update deployment_config, site-wide create/read notification_message.
 *   Everyone else — auditors, who may read deployment_config, included — gets 403. The owner's N8 with the value the
 *   setting already has is a 304.
 * - N9/N10: notification_template read, which every site role has; a token without that scope does not.
 * - N1: notification_message create on one's own; system users are denied it (403 with its own detail, checked below).
 * - The inbox (N3–N6) is only ever the caller's own: inbox_notification read/update on owned objects. Another user's
 *   notification id is simply not in the caller's inbox (404) — for an owner too. A token needs inbox_notification.
 * - N12/N13: the user themself or an owner (notification_preference on the user's objects). A user the caller cannot
 *   read is 404 first; one it can read but whose preferences it may not touch is 403 (user-admins, auditors, an
 *   owner's user:read token). A token needs notification_preference to touch even its own user's.
 * - A7: only the user themself (others visible → 403, invisible → 404), and only a password user (a system user → 400).
 *   Converting the login type is an update of the user (update_personal, like PUT /users/me/password), so a token
 *   narrowed to other scopes may not start one (403) — SPEC A1: a key's permission is its roles ∩ its scopes.
 *   (Currently those three cells fail with 201: the route checks no permission at all.)
 * - A4, A5 and the callbacks are public: whatever credential comes along, the answer is the same.
 */
const MATRIX: readonly Line[] = [
  //                                 anon  owner u-adm audit member system m:read o:read m:inbox
  // Every signed-in user may read these; a narrowed token needs the deployment_config:read scope (docs/security.md).
  [op.dispatchMethods, "—",         [401,  200,  200,  200,  200,   200,   403,   403,   403]],
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

// ---------------------------------------------------------------------------------------------------------------
// Running it
// ---------------------------------------------------------------------------------------------------------------

/** D1 plus the inboxes of the given users, read from their objects directly (narrow tokens cannot read them). */
async function snapshot(inboxOwners: readonly string[]): Promise<Record<string, unknown>> {
  const [results, inboxes] = await Promise.all([
    storedState(),
    Promise.all(inboxOwners.map((id) => inbox(id).list({ targets: [], templates: [], readStatus: "all" }, undefined, 100))),
  ]);
  return { ...results, inboxes };
}


/** Like `call`, but a redirect is answered, not followed (the callbacks start with a 302 to the provider). */
function request(method: string, path: string, options: { token?: string; body?: unknown; headers?: Record<string, string> }): Promise<Response> {
  const headers = new Headers(options.headers);
  if (options.token) headers.set("Service-Session-Token", options.token);
  if (options.body !== undefined) headers.set("Content-Type", "application/json");
  headers.set("CF-Connecting-IP", `10.2.${Math.floor(Math.random() * 255)}.${Math.floor(Math.random() * 255)}`);
  const body = options.body === undefined ? undefined : JSON.stringify(options.body);
  return send(new Request(`${BASE}/api/v2${path}`, { method, headers, body, redirect: "manual" }));
}

let shared: { actors: Record<CallerName, Principal>; member: Account; owner: Account };

beforeAll(async () => {
  adminToken = (await owner()).token;
  const principals = await Promise.all(CALLERS.map((name) => MAKE_ACTOR[name]()));
  const [member, ownerTarget] = await Promise.all([newAccount(), newAccount(["owner"])]);
  shared = {
    actors: Object.fromEntries(CALLERS.map((name, i) => [name, principals[i]])) as Record<CallerName, Principal>,
    member,
    owner: ownerTarget,
  };
  // Each account above notified the owners and user-admins after its response; let all of that land first.
  await quiesce(4);
});

async function arrange(operation: Operation, target: Target, actorName: ActorName): Promise<Case> {
  const actor = actorName === "anonymous" ? undefined : shared.actors[actorName];
  const account = target === "member" ? shared.member : target === "owner" ? shared.owner : undefined;
  const c: Case = { actor, target: account, ref: target === "self" ? "me" : (account?.id ?? ""), notificationId: crypto.randomUUID() };
  return { ...c, ...(await operation.arrange?.(c)) };
}

describe("permission matrix (SPEC §4, §5)", () => {
  for (const [operation, target, cells] of MATRIX) {
    describe(`${operation.title} on ${target}`, () => {
      ACTORS.forEach((actorName, column) => {
        const expected = cells[column];
        if (expected === undefined) return;
        it(`as ${actorName} → ${expected}`, async () => {
          await quiesce();
          const c = await arrange(operation, target, actorName);
          const inboxes = [c.actor?.id, c.target?.id].filter((id): id is string => id !== undefined);
          const before = await snapshot(inboxes);
          const body = operation.body?.(c);
          const res = await request(operation.method, operation.path(c), {
            token: c.actor?.token,
            headers: operation.headers,
            ...(body === undefined ? {} : { body }),
          });
          if (res.webSocket) {
            res.webSocket.accept();
            res.webSocket.close(1000, "matrix cell done");
          }
          if (expected >= 400) await expectError(res, expected);
          else expect(res.status, res.webSocket ? "a WebSocket" : await res.clone().text()).toBe(expected);
          const after = await snapshot(inboxes);
          if (expected >= 400 || operation.readOnly) expect(after, "a refused request or a read changed state").toEqual(before);
          else expect(after, "an allowed write changed nothing").not.toEqual(before);
        });
      });
    });
  }
});

// ---------------------------------------------------------------------------------------------------------------
// The same rules, asked differently
// ---------------------------------------------------------------------------------------------------------------

describe("documented answers", () => {
  it("N1 from a system user → 403 Forbidden with the documented detail, nothing enqueued", async () => {
    await quiesce();
    const before = await snapshot([]);
    const body = await expectError(
      await request("POST", "/notifications/custom", { token: shared.actors["system user"].token, body: { content: { title: "hi" } } }),
      403,
      "Forbidden",
    );
    expect(body.detail).toBe("System users cannot send custom notifications.");
    expect(await snapshot([])).toEqual(before);
  });

  it("N8 from the owner with the current value → 304 without a body; N11 → 200 without a body", async () => {
    const owner = shared.actors.owner;
    const unchanged = await request("PUT", "/notifications/settings", { token: owner.token, body: { notifier_paused: false } });
    expect(unchanged.status).toBe(304);
    expect(await unchanged.text()).toBe("");
    const test = await request("POST", "/notifications/test", { token: owner.token });
    expect(test.status).toBe(200);
    expect(await test.text()).toBe("");
    await quiesce();
  });

  it("N12/N13: an owner sees and changes another user's preferences, and the user sees the change", async () => {
    const { owner: admin, member } = shared.actors;
    const res = await request("PUT", `/users/${member.id}/notifications/preferences`, {
      token: admin.token,
      body: { template_disabled_map: { [TEMPLATE_IDS.userCreated]: true } },
    });
    expect(res.status).toBe(200);
    const own = await json<{ id: string; disabled: boolean }[]>(await request("GET", "/users/me/notifications/preferences", { token: member.token }));
    expect(own).toEqual(expect.arrayContaining([expect.objectContaining({ id: TEMPLATE_IDS.userCreated, disabled: true })]));
  });
});

describe("POST /authcheck agrees with the matrix", () => {
  const checks = (): Record<string, { action: string; object: Record<string, unknown> }> => ({
    readOwnInbox: { action: "read", object: { resource_type: "inbox_notification", owner_id: "me" } },
    updateOwnInbox: { action: "update", object: { resource_type: "inbox_notification", owner_id: "me" } },
    readOwnPreferences: { action: "read", object: { resource_type: "notification_preference", owner_id: "me" } },
    updateOthersPreferences: { action: "update", object: { resource_type: "notification_preference", owner_id: shared.member.id } },
    sendCustom: { action: "create", object: { resource_type: "notification_message", owner_id: "me" } },
    sendTest: { action: "create", object: { resource_type: "notification_message" } },
    readMessages: { action: "read", object: { resource_type: "notification_message" } },
    readTemplates: { action: "read", object: { resource_type: "notification_template" } },
    updateSettings: { action: "update", object: { resource_type: "deployment_config" } },
    convertOwnLogin: { action: "update_personal", object: { resource_type: "user", owner_id: "me" } },
  });
  type Verdicts = readonly [boolean, boolean, boolean, boolean, boolean, boolean, boolean, boolean];
  const EXPECTED: Record<keyof ReturnType<typeof checks>, Verdicts> = {
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
  };
  CALLERS.forEach((actorName, i) => {
    it(`as ${actorName}`, async () => {
      const res = await request("POST", "/authcheck", { token: shared.actors[actorName].token, body: { checks: checks() } });
      expect(res.status).toBe(200);
      const expected = Object.fromEntries(Object.entries(EXPECTED).map(([key, verdicts]) => [key, verdicts[i]]));
      expect(await json(res)).toEqual(expected);
    });
  });
});
