import type { Env } from "../env";
import { endWatches } from "../inbox/revoke";
import type { Background } from "../lib/background";
import { forgetKeys, forgetUser } from "./key-cache";

/**
 * After credentials stop working (deleted keys, or a whole user's when `keyIds` is omitted): this isolate forgets
 * them at once and the user's inbox closes the watch sockets they opened.
 */
export function credentialsRevoked(env: Env, background: Background, userId: string, keyIds?: string[]): void {
  if (keyIds) forgetKeys(keyIds);
  else forgetUser(userId);
  endWatches(env, background, userId, keyIds);
}

/** The user's roles or status changed: what this isolate cached about its keys is stale. */
export function userChanged(userId: string): void {
  forgetUser(userId);
}
