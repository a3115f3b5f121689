/**
 * The permission matrix of the Web Push endpoints (docs/push.md, "Who may do what"; docs/authorization.md), one line
 * per endpoint and kind of target, one column per kind of caller, run by the shared harness
 * (test/fixtures/principals.ts): each cell is its own test, and checks that a refused request left the account tables
 * (push_subscriptions among them) as they were, and that an allowed write changed them.
 *
 * Targets: `self` is the caller (`/users/me/...`), `member` another plain member, `—` none.
 */
import { env } from "cloudflare:workers";
import { ACTORS, type Line, type Operation, permissionMatrix } from "../fixtures/principals";
import { type PushBrowser, subscribeBrowser } from "../peers";

interface PushCase {
  /** The browser an add subscribes. */
  browser: PushBrowser["subscription"];
  /** The subscription a DELETE removes. */
  subscriptionId: string;
}

/** A subscription row for `userId`, written straight into D1: a target's, made without the target's credential. */
async function storedSubscription(userId: string): Promise<string> {
  const id = crypto.randomUUID();
  const { subscription } = await subscribeBrowser();
  await env.DB.prepare("INSERT INTO push_subscriptions (id, user_id, name, endpoint, p256dh, auth, created_at) VALUES (?, ?, 'Matrix', ?, ?, ?, ?)")
    .bind(id, userId, subscription.endpoint, subscription.keys.p256dh, subscription.keys.auth, new Date().toISOString())
    .run();
  return id;
}

const op = {
  publicKey: { title: "GET /notifications/push/public-key", method: "GET", path: () => "/notifications/push/public-key", readOnly: true },
  add: {
    title: "POST /users/{user}/push-subscriptions",
    method: "POST",
    path: (c) => `/users/${c.ref}/push-subscriptions`,
    body: (c) => c.browser,
    // A browser of its own for each cell: the same endpoint again would be the same browser (200, not 201).
    arrange: async () => ({ browser: (await subscribeBrowser()).subscription }),
  },
  list: { title: "GET /users/{user}/push-subscriptions", method: "GET", path: (c) => `/users/${c.ref}/push-subscriptions`, readOnly: true },
  remove: {
    title: "DELETE /users/{user}/push-subscriptions/{id}",
    method: "DELETE",
    path: (c) => `/users/${c.ref}/push-subscriptions/${c.subscriptionId}`,
    // Not destructive: the subscription it removes is made afresh for each cell.
    arrange: async (c) => {
      const holder = c.ref === "me" ? c.actor : c.target;
      return holder ? { subscriptionId: await storedSubscription(holder.id) } : {};
    },
  },
} as const satisfies Record<string, Operation<PushCase>>;

const matrix = permissionMatrix({
  actors: ACTORS,
  blank: (): PushCase => ({
    browser: { endpoint: `${env.PUSH_SERVICE_URL}/push/none`, keys: { p256dh: "", auth: "" } },
    subscriptionId: "00000000-0000-4000-8000-000000000000",
  }),
  tables: "accounts",
  pauseNotifier: true,
});

/*
 * Why the cells are what they are (docs/push.md, "Who may do what"; docs/authorization.md):
 * - The public key is public: anyone, signed in or not, reads it.
 * - A user the caller may not read is invisible: 404 before any other check.
 * - Subscriptions are the user's notification preferences (notification_preference on owned objects): everyone lists
 *   and removes their own, and of other users' only owners. A user:read token has no notification_preference scope: 403.
 * - Only the user themself subscribes a browser, whoever else may see them (403): a subscription receives the user's
 *   notifications, so one added by someone else would let them read those.
 */
// biome-ignore format: the columns line up under the actors
const MATRIX: readonly Line<typeof ACTORS, PushCase>[] = [
  //                          anon   owner u-adm audit member system m:read o:read
  [op.publicKey, "—",      [200,   200,  200,  200,  200,   200,   200,   200]],
  [op.add,       "self",   [401,   201,  201,  201,  201,   201,   403,   403]],
  [op.add,       "member", [401,   403,  403,  403,  404,   404,   404,   403]],
  [op.list,      "self",   [401,   200,  200,  200,  200,   200,   403,   403]],
  [op.list,      "member", [401,   200,  403,  403,  404,   404,   404,   403]],
  [op.remove,    "self",   [401,   204,  204,  204,  204,   204,   403,   403]],
  [op.remove,    "member", [401,   204,  403,  403,  404,   404,   404,   403]],
];

matrix.run('permission matrix (docs/push.md, "Who may do what")', MATRIX);
