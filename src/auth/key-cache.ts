import type { ApiKeyRow, UserRow } from "../db/schema";

/**
 * Facts about a key's user that a route works out on first need and the entry keeps for its life, so they are
 * forgotten with it (a revocation, AUTH_CACHE_TTL): whether the user has a second factor, for the MFA_REQUIRED_ROLES
 * policy (src/auth/mfa/policy.ts).
 */
export interface AuthMemo {
  hasSecondFactor?: boolean;
}

/**
 * What authentication loaded for a key, kept in the isolate for AUTH_CACHE_TTL so a hot path does not pay a D1
 * round trip per request. The secret is still checked on every request: against the secret this isolate last
 * verified for the key (constant time), else against the stored hash.
 *
 * The trade-off, documented in docs/api.md (Decisions) and docs/configuration.md (AUTH_CACHE_TTL): a revocation (logout, token deletion, suspension, password change…)
 * takes effect at once in the isolate that handled it — it forgets the entries right there — and within
 * AUTH_CACHE_TTL plus the D1 replica's lag in every other isolate (docs/consistency.md; `0s` reads the primary). Watch sockets of revoked sessions are closed immediately by their object.
 */
export interface CachedKey {
  key: ApiKeyRow;
  user: UserRow;
  orgRoles: Record<string, string[]>;
  loadedAt: number;
  memo: AuthMemo;
  /**
   * The secret that was last found to match `key.hashedSecret` in this isolate (docs/security.md,
   * "Trade-offs"). A request presenting the same secret again is compared with it in constant time instead of hashing the
   * secret again: SHA-256 through SubtleCrypto was the largest single cost of authenticating with a warm cache. It
   * lives only in this isolate's memory, for the entry's AUTH_CACHE_TTL at most; D1 keeps only the hash.
   */
  verifiedSecret?: string;
}

const MAX_ENTRIES = 10_000;
const entries = new Map<string, CachedKey>();

export function cachedKey(id: string, ttlMs: number, now: number): CachedKey | undefined {
  const entry = entries.get(id);
  if (!entry) return undefined;
  if (now - entry.loadedAt >= ttlMs) {
    entries.delete(id);
    return undefined;
  }
  return entry;
}

export function rememberKey(id: string, entry: CachedKey, ttlMs: number): void {
  if (ttlMs <= 0) return;
  // Oldest first: a Map iterates in insertion order, so the first key is the one to evict.
  if (entries.size >= MAX_ENTRIES) entries.delete(entries.keys().next().value ?? "");
  entries.set(id, entry);
}

export function forgetKeys(ids: readonly string[]): void {
  for (const id of ids) entries.delete(id);
}

/** Forgets every key of a user whose status, roles, password or login type changed. */
export function forgetUser(userId: string): void {
  for (const [id, entry] of entries) if (entry.user.id === userId) entries.delete(id);
}
