/**
 * The permission matrix of the passkey endpoints (docs/passkeys.md, "Who may do what"; docs/authorization.md), one
 * line per endpoint and kind of target, one column per kind of caller, run by the shared harness
 * (test/fixtures/principals.ts): each cell is its own test, and checks that a refused request left the account tables
 * (passkeys and challenges among them) as they were, and that an allowed write changed them.
 *
 * Targets: `self` is the caller (`/users/me/...`), `member` another plain member, `—` none.
 */
import { env } from "cloudflare:workers";
import { ACTORS, type Line, type Operation, permissionMatrix } from "../fixtures/principals";
import { addPasskey, creationOptions, loginOptions, SoftAuthenticator } from "./authenticator";

/** What the operations refer to beyond the caller and the target. */
interface PasskeyCase {
  /** The passkey a DELETE removes. */
  passkeyId: string;
  /** The body of an add, and of a sign-in. */
  registration: unknown;
  assertion: unknown;
}

/** Well-formed answers no authenticator made: enough for the cells that must be refused before any verification. */
const UNVERIFIABLE = {
  registration: { id: "AAAA", rawId: "AAAA", response: { clientDataJSON: "AAAA", attestationObject: "AAAA" }, type: "public-key" },
  assertion: { id: "AAAA", rawId: "AAAA", response: { clientDataJSON: "AAAA", authenticatorData: "AAAA", signature: "AAAA" }, type: "public-key" },
};

/** A passkey row for `userId`, written straight into D1: a target's passkey, made without the target's credential. */
async function storedPasskey(userId: string): Promise<string> {
  const id = crypto.randomUUID();
  await env.DB.prepare(
    "INSERT INTO passkeys (id, user_id, credential_id, public_key, name, created_at) VALUES (?, ?, ?, 'pQECAyYgASFYIA', 'Matrix', ?)",
  )
    .bind(id, userId, crypto.randomUUID(), new Date().toISOString())
    .run();
  return id;
}

const op = {
  creationOptions: {
    title: "POST /users/{user}/passkeys/options",
    method: "POST",
    path: (c) => `/users/${c.ref}/passkeys/options`,
  },
  add: {
    title: "POST /users/{user}/passkeys",
    method: "POST",
    path: (c) => `/users/${c.ref}/passkeys`,
    body: (c) => ({ response: c.registration }),
    // The caller's own authenticator answers options its full-scope session asked for; anyone else's body is refused unread.
    arrange: async (c) => {
      if (c.ref !== "me" || !c.actor) return {};
      return { registration: await (await SoftAuthenticator.create()).register(await creationOptions(c.actor.setupToken)) };
    },
  },
  list: { title: "GET /users/{user}/passkeys", method: "GET", path: (c) => `/users/${c.ref}/passkeys`, readOnly: true },
  remove: {
    title: "DELETE /users/{user}/passkeys/{id}",
    method: "DELETE",
    path: (c) => `/users/${c.ref}/passkeys/${c.passkeyId}`,
    // Not destructive: the passkey it removes is made afresh for each cell.
    arrange: async (c) => {
      const holder = c.ref === "me" ? c.actor : c.target;
      return holder ? { passkeyId: await storedPasskey(holder.id) } : {};
    },
  },
  loginOptions: { title: "POST /users/login/passkey/options", method: "POST", path: () => "/users/login/passkey/options" },
  login: {
    title: "POST /users/login/passkey (own passkey)",
    method: "POST",
    path: () => "/users/login/passkey",
    body: (c) => ({ response: c.assertion }),
    signsIn: true,
    arrange: async (c) => {
      if (!c.actor) return {};
      const authenticator = await SoftAuthenticator.create();
      await addPasskey(c.actor.setupToken, authenticator);
      return { assertion: await authenticator.assert(await loginOptions()) };
    },
  },
} as const satisfies Record<string, Operation<PasskeyCase>>;

const matrix = permissionMatrix({
  actors: ACTORS,
  blank: (): PasskeyCase => ({ passkeyId: "00000000-0000-4000-8000-000000000000", ...UNVERIFIABLE }),
  tables: "accounts",
  pauseNotifier: true,
});

/*
 * Why the cells are what they are (docs/passkeys.md, "Who may do what"; docs/authorization.md):
 * - A user the caller may not read is invisible: 404 before any other check.
 * - Passkeys are the user's credentials, checked as API keys are (api_key on owned objects): everyone lists and
 *   removes their own, and of other users' only owners. A user:read token has no api_key scope: 403.
 * - Only the user themself adds one, whoever else may see them (403), and only with the `all` scope: a user:read
 *   token is refused for its scopes already.
 * - A service account may hold a passkey (its token has every scope), but never signs in with one: its login type
 *   is `none` (403, as A3 answers a correct password of another login type).
 */
// biome-ignore format: the columns line up under the actors
const MATRIX: readonly Line<typeof ACTORS, PasskeyCase>[] = [
  //                                anon   owner u-adm audit member system m:read o:read
  [op.loginOptions,    "—",      [200,   200,  200,  200,  200,   200,   200,   200]],
  [op.login,           "self",   [null,  201,  201,  201,  201,   403,   201,   201]],
  [op.creationOptions, "self",   [401,   200,  200,  200,  200,   200,   403,   403]],
  [op.creationOptions, "member", [401,   403,  403,  403,  404,   404,   404,   403]],
  [op.add,             "self",   [401,   201,  201,  201,  201,   201,   403,   403]],
  [op.add,             "member", [401,   403,  403,  403,  404,   404,   404,   403]],
  [op.list,            "self",   [401,   200,  200,  200,  200,   200,   403,   403]],
  [op.list,            "member", [401,   200,  403,  403,  404,   404,   404,   403]],
  [op.remove,          "self",   [401,   204,  204,  204,  204,   204,   403,   403]],
  [op.remove,          "member", [401,   204,  403,  403,  404,   404,   404,   403]],
];

matrix.run('permission matrix (docs/passkeys.md, "Who may do what")', MATRIX);
