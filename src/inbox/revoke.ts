import type { Env } from "../env";
import type { Background } from "../lib/background";


/**
 * After credentials are revoked, closes the watch sockets they opened (all of the user's when `keyIds` is omitted).
 * Runs after the response; a failure only leaves a socket to close itself on its next reconnect.
 */
export function endWatches(env: Env, background: Background, userId: string, keyIds?: string[]): void {
  const inbox = env.USER_INBOX.get(env.USER_INBOX.idFromName(userId));
  background.waitUntil(
    inbox.endWatches(keyIds).catch((error: unknown) => {
      console.error(`[herald] closing watch sockets failed: ${error instanceof Error ? error.name : "error"}`);
    }),
  );
}
