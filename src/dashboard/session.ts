import { ApiProblem, api, call } from "./api";
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
 * (`setup`). Read from the API with the session cookie; the cookie itself is HttpOnly and never seen here. When the
 * API cannot answer (offline, a failed request, a 5xx), it is `unreachable`: the page says so, offers Retry and tries
 * again by itself (docs/dashboard.md, "When Herald cannot be reached").
 */
export type SessionState =
  | { kind: "loading" }
  | { kind: "setup" }
  | { kind: "signed-out"; methods: AuthMethods }
  | { kind: "signed-in"; me: Me; methods: AuthMethods }
  | { kind: "unreachable"; problem: ApiProblem; attempt: number };

export const session = createStore<SessionState>({ kind: "loading" });

async function readSession(): Promise<SessionState> {
  const [first, methods] = await Promise.all([api.users.first.$get(), loadMethods()]);
  // Only the status is needed. The body is cancelled so the request ends: a body never read keeps it open, and the
  // page never goes quiet.
  await first.body?.cancel();
  // The typed client knows only GET /users/first's 200; its 404 (no user yet) comes as an error answer.
  const status = Number(first.status);
  if (status === 404) return { kind: "setup" };
  if (status !== 200) throw new ApiProblem(status, "Herald could not be reached.", `The server answered ${status}.`);
  try {
    return { kind: "signed-in", me: await loadMe(), methods };
  } catch (error) {
    // Only a 401 means signed out; anything else is a failure to ask, and says nothing about the session.
    if (error instanceof ApiProblem && error.status === 401) return { kind: "signed-out", methods };
    throw error;
  }
}

/** Asks the API where the person stands; called at start, after a sign-in, when an answer says 401, and on Retry. */
export async function refreshSession(): Promise<SessionState> {
  const before = session.get();
  let next: SessionState;
  try {
    next = await readSession();
  } catch (error) {
    // A request that got no answer at all (the typed client's fetch rejected) is Herald out of reach.
    const problem =
      error instanceof ApiProblem ? error : new ApiProblem(0, "Herald could not be reached.", "Check the connection; the page keeps trying.");
    next = { kind: "unreachable", problem, attempt: before.kind === "unreachable" ? before.attempt + 1 : 1 };
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
