/**
 * The permission matrix of the notification-target endpoints (docs/targets.md, "Who may do what";
 * docs/authorization.md), one line per endpoint and kind of target, one column per kind of caller, run by the shared
 * harness (test/fixtures/principals.ts): each cell is its own test, and checks that a refused request left the account
 * tables (notification_targets and the audit log among them) as they were, and that an allowed write changed them.
 *
 * Targets: `self` is the caller (`/users/me/...`), `member` another plain member.
 */
import { env } from "cloudflare:workers";
import { getConfig } from "../../src/config/config";
import { database } from "../../src/db/client";
import { notificationTargets } from "../../src/db/schema";
import { codeHash, sealUrl } from "../../src/targets/secrets";
import { ACTORS, type Line, type Operation, permissionMatrix } from "../fixtures/principals";
import { standInPath, standInUrl } from "./stand-ins";

interface TargetCase {
  /** The target a DELETE removes or a verify checks. */
  targetId: string;
}

/** The code every stored target of this file was sent. */
const CODE = "314159";

/** An unverified Slack target of `userId`, written straight into D1 as the API would store it, with the code CODE. */
async function storedTarget(userId: string): Promise<string> {
  const id = crypto.randomUUID();
  const url = standInUrl(standInPath("slack"));
  await database(env.DB)
    .insert(notificationTargets)
    .values({
      id,
      userId,
      kind: "slack",
      name: "Matrix",
      urlSealed: await sealUrl(getConfig(env).SECRET_KEY, id, url),
      urlOrigin: new URL(url).origin,
      secretSealed: null,
      codeHash: await codeHash(getConfig(env).SECRET_KEY, id, CODE),
      failedAttempts: 0,
      verifiedAt: null,
      createdAt: new Date().toISOString(),
    });
  return id;
}

/** Made afresh for each cell, for whoever the path names: the caller itself on `self`, else the other user. */
const arrangeTarget: Operation<TargetCase>["arrange"] = async (c) => {
  const holder = c.ref === "me" ? c.actor : c.target;
  return holder ? { targetId: await storedTarget(holder.id) } : {};
};

const op = {
  add: {
    title: "POST /users/{user}/notification-targets",
    method: "POST",
    path: (c) => `/users/${c.ref}/notification-targets`,
    body: () => ({ kind: "slack", url: standInUrl(standInPath("slack")), name: "Matrix" }),
  },
  list: { title: "GET /users/{user}/notification-targets", method: "GET", path: (c) => `/users/${c.ref}/notification-targets`, readOnly: true },
  remove: {
    title: "DELETE /users/{user}/notification-targets/{id}",
    method: "DELETE",
    path: (c) => `/users/${c.ref}/notification-targets/${c.targetId}`,
    arrange: arrangeTarget,
  },
  verify: {
    title: "POST /users/{user}/notification-targets/{id}/verify (the right code)",
    method: "POST",
    path: (c) => `/users/${c.ref}/notification-targets/${c.targetId}/verify`,
    body: () => ({ code: CODE }),
    arrange: arrangeTarget,
  },
} as const satisfies Record<string, Operation<TargetCase>>;

const matrix = permissionMatrix({
  actors: ACTORS,
  blank: (): TargetCase => ({ targetId: "00000000-0000-4000-8000-000000000000" }),
  tables: "accounts",
  pauseNotifier: true,
});

/*
 * Why the cells are what they are (docs/targets.md, "Who may do what"; docs/authorization.md):
 * - A user the caller may not read is invisible: 404 before any other check.
 * - Targets are the resource notification_target, which every user holds on their own objects: everyone, a service
 *   account included, adds, lists, verifies and removes their own. A user:read token has no notification_target
 *   scope: 403.
 * - Only the user themself: an owner, who may do anything else to another user, is refused another user's targets
 *   (403), as are the user-admin and the auditor, who can see the user but hold no notification_target permission.
 */
// biome-ignore format: the columns line up under the actors
const MATRIX: readonly Line<typeof ACTORS, TargetCase>[] = [
  //                         anon   owner u-adm audit member system m:read o:read
  [op.add,      "self",   [401,   201,  201,  201,  201,   201,   403,   403]],
  [op.add,      "member", [401,   403,  403,  403,  404,   404,   404,   403]],
  [op.list,     "self",   [401,   200,  200,  200,  200,   200,   403,   403]],
  [op.list,     "member", [401,   403,  403,  403,  404,   404,   404,   403]],
  [op.verify,   "self",   [401,   200,  200,  200,  200,   200,   403,   403]],
  [op.verify,   "member", [401,   403,  403,  403,  404,   404,   404,   403]],
  [op.remove,   "self",   [401,   204,  204,  204,  204,   204,   403,   403]],
  [op.remove,   "member", [401,   403,  403,  403,  404,   404,   404,   403]],
];

matrix.run('permission matrix (docs/targets.md, "Who may do what")', MATRIX);
