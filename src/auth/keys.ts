import type { Config } from "../config/config";
import type { Database } from "../db/client";
import { type ApiKeyRow, apiKeys } from "../db/schema";
import { nowIso } from "../lib/crypto";
import { generateToken } from "./tokens";

export interface IssueKeyInput {
  userId: string;
  loginType: ApiKeyRow["loginType"];
  lifetimeMs: number;
  /** Epoch ms the key may not outlive (the API token that creates it). */
  notAfter?: number;
  scopes?: string[];
  tokenName?: string | null;
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
  };
  return { token, row, insert: db.insert(apiKeys).values(row) };
}
