import type { Env } from "../env";
import type { Background } from "../lib/background";
import { forgetKeys, forgetUser } from "./key-cache";

/**
 * What an account or key change made stale, announced after it commits (docs/architecture.md, "Account changes"):
 * - `credentials-ended`: these keys (or all of the user's) stopped working;
 * - `user-changed`: the keys still work but what was cached about their user (roles, status) is out of date.
 */
export type Revocation =
  | { readonly kind: "credentials-ended"; readonly userId: string; readonly keyIds: readonly string[] | "all" }
  | { readonly kind: "user-changed"; readonly userId: string };

/** A feature that holds something a revocation must end (the inbox: watch sockets). Runs after the response. */
export type RevocationListener = (revocation: Revocation, env: Env, background: Background) => void;

const listeners = new Set<RevocationListener>();

/** Subscribes a feature to every revocation; the composition root (src/app.ts) wires them, so auth imports no feature. */
export function onRevocation(listener: RevocationListener): void {
  listeners.add(listener);
}

/**
 * This isolate forgets the stale credentials at once (other isolates within AUTH_CACHE_TTL plus their D1 replica's
 * lag, docs/configuration.md and docs/consistency.md), then every subscriber hears of it. Called only by
 * `commitAccountChanges` (src/auth/account-changes.ts).
 */
export function announceRevocation(revocation: Revocation, env: Env, background: Background): void {
  if (revocation.kind === "credentials-ended" && revocation.keyIds !== "all") forgetKeys(revocation.keyIds);
  else forgetUser(revocation.userId);
  for (const listener of listeners) listener(revocation, env, background);
}
