import { inArray } from "drizzle-orm";
import type { Config } from "../config/config";
import type { Database } from "../db/client";
import { type ApiKeyRow, type AuthMethod, apiKeys } from "../db/schema";
import { inSlices } from "../db/slices";
import { nowIso } from "../lib/crypto";
import type { RequestOrigin } from "../security/device";
import { generateToken } from "./tokens";

export interface IssueKeyInput {
  userId: string;
  loginType: ApiKeyRow["loginType"];
  lifetimeMs: number;
  /** Epoch ms the key may not outlive (the API token that creates it). */
  notAfter?: number;
  scopes?: string[];
  tokenName?: string | null;
  /** A login session: what its user proved to start it (its `auth_time` is now). */
  methods?: AuthMethod[];
  /** A login session: the request that started it (docs/security.md, "Devices"). */
  origin?: RequestOrigin;
}

/** How long a new login session lasts: its sliding lifetime, within its absolute one. */
export function loginSessionLifetime(config: Pick<Config, "SESSION_DURATION" | "SESSION_MAX_LIFETIME">): number {
  return Math.min(config.SESSION_DURATION, config.SESSION_MAX_LIFETIME);
}

/**
 * Creates a session or API token. Returns the one-time plaintext token and the insert, which callers batch with
 * related writes (audit entry, rehash) so they commit together.
 */
export async function issueKey(db: Database, input: IssueKeyInput) {
  const { id, token, hashedSecret } = await generateToken();
  const now = Date.now();
  const row: ApiKeyRow = {
    id,
    hashedSecret,
    userId: input.userId,
    loginType: input.loginType,
    tokenName: input.tokenName ?? null,
    scopes: input.scopes ?? ["all"],
    lifetimeSeconds: Math.floor(input.lifetimeMs / 1000),
    expiresAt: nowIso(Math.min(now + input.lifetimeMs, input.notAfter ?? Number.POSITIVE_INFINITY)),
    createdAt: nowIso(now),
    updatedAt: nowIso(now),
    lastUsed: nowIso(now),
    // API tokens have no authentication time: their scopes govern them, never step-up (docs/second-factor.md).
    authTime: input.loginType === "token" ? null : nowIso(now),
    authMethods: input.loginType === "token" ? [] : (input.methods ?? []),
    userAgent: input.origin?.userAgent ?? null,
    device: input.origin?.device ?? null,
    ipPrefix: input.origin?.ipPrefix ?? null,
    country: input.origin?.country ?? null,
    city: input.origin?.city ?? null,
  };
  return { token, row, insert: db.insert(apiKeys).values(row) };
}

/**
 * When each of these keys expires now (epoch ms); a key that no longer exists is left out. A login session slides
 * forward on use, so what a watch socket recorded when it opened may be out of date (docs/api.md, "Watching the
 * inbox").
 */
export async function currentExpiries(db: Database, keyIds: readonly string[]): Promise<Map<string, number>> {
  const rows = await Promise.all(
    inSlices(keyIds).map((slice) => db.select({ id: apiKeys.id, expiresAt: apiKeys.expiresAt }).from(apiKeys).where(inArray(apiKeys.id, slice))),
  );
  return new Map(rows.flat().map((k) => [k.id, Date.parse(k.expiresAt)] as const));
}
