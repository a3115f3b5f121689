import { getConfig } from "../config/config";
import type { Env } from "../env";

/**
 * The namespace inbox objects live in: restricted to DATA_JURISDICTION when it is set, so every object is created, runs
 * and stores its data there (docs/deployment.md, "Where data lives"); the whole namespace otherwise. A name gives
 * another id in a jurisdiction, so an object made without one keeps its id only while the setting stays empty:
 * src/inbox/jurisdiction.ts refuses a deployment whose setting changed under existing inboxes.
 */
function inboxNamespace(env: Env): Env["USER_INBOX"] {
  const jurisdiction = getConfig(env).DATA_JURISDICTION;
  return jurisdiction === "" ? env.USER_INBOX : env.USER_INBOX.jurisdiction(jurisdiction);
}

/**
 * The user's inbox object. One per user, named by the user id (docs/inbox.md): this is the one place that says how an
 * inbox is found, for every feature that talks to one.
 */
export function userInbox(env: Env, userId: string) {
  const namespace = inboxNamespace(env);
  return namespace.get(namespace.idFromName(userId));
}
