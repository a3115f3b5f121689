import type { Env } from "../env";

/**
 * The user's inbox object. One per user, named by the user id (docs/inbox.md): this is the one place that says how an
 * inbox is found, for every feature that talks to one.
 */
export function userInbox(env: Pick<Env, "USER_INBOX">, userId: string) {
  return env.USER_INBOX.get(env.USER_INBOX.idFromName(userId));
}
