import type { RevocationListener } from "../auth/revocation";
import { userInbox } from "./address";

/**
 * The inbox's part in a revocation: the user's object closes the watch sockets the ended credentials opened (all of
 * the user's when every credential ended). Runs after the response; a failure only leaves a socket to close itself
 * on its next reconnect, which authenticates again.
 */
export const closeRevokedWatches: RevocationListener = (revocation, env, background) => {
  if (revocation.kind !== "credentials-ended") return;
  const inbox = userInbox(env, revocation.userId);
  const keyIds = revocation.keyIds === "all" ? undefined : [...revocation.keyIds];
  if (keyIds?.length === 0) return;
  background.waitUntil(
    inbox.endWatches(keyIds).catch((error: unknown) => {
      console.error(`[herald] closing watch sockets failed: ${error instanceof Error ? error.name : "error"}`);
    }),
  );
};
