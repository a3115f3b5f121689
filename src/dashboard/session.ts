import { api, call } from "./api";
import { createStore } from "./ui/store";

export type Me = Awaited<ReturnType<typeof loadMe>>;
export type AuthMethods = Awaited<ReturnType<typeof loadMethods>>;

function loadMe() {
  return call(api.users[":user"].$get({ param: { user: "me" } }), { quiet401: true });
}

function loadMethods() {
  return call(api.users.authmethods.$get());
}

/**
 * What the dashboard knows of the person: signed in (`me`), signed out, or a fresh deployment without any user yet
 * (`setup`). Read from the API with the session cookie; the cookie itself is HttpOnly and never seen here.
 */
export type SessionState =
  | { kind: "loading" }
  | { kind: "setup" }
  | { kind: "signed-out"; methods: AuthMethods }
  | { kind: "signed-in"; me: Me; methods: AuthMethods };

export const session = createStore<SessionState>({ kind: "loading" });

/** Asks the API where the person stands; called at start, after a sign-in and when an answer says 401. */
export async function refreshSession(): Promise<SessionState> {
  const [first, methods] = await Promise.all([api.users.first.$get(), loadMethods()]);
  // Only the status is needed. The body is cancelled so the request ends: a body never read keeps it open, and the
  // page never goes quiet.
  await first.body?.cancel();
  let next: SessionState;
  // The typed client knows only GET /users/first's 200; its 404 (no user yet) comes as an error answer.
  if (Number(first.status) === 404) next = { kind: "setup" };
  else {
    try {
      next = { kind: "signed-in", me: await loadMe(), methods };
    } catch {
      next = { kind: "signed-out", methods };
    }
  }
  session.set(next);
  return next;
}

/** The site-wide roles that open the administration pages (docs/authorization.md). */
export function isAdmin(me: Me): boolean {
  return me.roles.some((role) => role.name === "owner" || role.name === "user-admin");
}

export function isOwner(me: Me): boolean {
  return me.roles.some((role) => role.name === "owner");
}

export async function signOut(): Promise<void> {
  try {
    await call(api.users.logout.$post(), { quiet401: true });
  } finally {
    await refreshSession();
  }
}
