import { and, eq, gt, lt, sql } from "drizzle-orm";
import type { Config } from "../config/config";
import type { Database } from "../db/client";
import { oneTimePasscodes } from "../db/schema";
import { hmacHex, nowIso, timingSafeEqualText } from "../lib/crypto";

/** Wrong tries a code survives; the fifth wrong one burns it (docs/api.md, Password reset by one-time passcode). */
const MAX_OTP_ATTEMPTS = 5;

/** Bound to the user, so a code is worthless for any other account. */
export function codeHmac(config: Config, userId: string, code: string): Promise<string> {
  return hmacHex(config.SECRET_KEY, `herald-otp:${userId}:${code.trim().toLowerCase()}`);
}

/**
 * Issues a new passcode for the user, replacing any earlier one: a random UUID (122 random bits), of which only an
 * HMAC under SECRET_KEY is stored. Returns the code for delivery.
 */
export async function issuePasscode(db: Database, config: Config, userId: string): Promise<string> {
  const code = crypto.randomUUID();
  const now = Date.now();
  const row = { codeHmac: await codeHmac(config, userId, code), expiresAt: nowIso(now + config.OTP_TTL), attempts: 0, createdAt: nowIso(now) };
  await db
    .insert(oneTimePasscodes)
    .values({ userId, ...row })
    .onConflictDoUpdate({ target: oneTimePasscodes.userId, set: row });
  return code;
}

/**
 * Checks a presented code. Every check spends one try (atomically, so parallel guesses cannot exceed the budget);
 * an expired or burned code never matches.
 */
export async function passcodeMatches(db: Database, config: Config, userId: string, code: string): Promise<boolean> {
  // Computed whether or not a code is stored, so an unknown account costs the same.
  const presented = await codeHmac(config, userId, code);
  const rows = await db
    .update(oneTimePasscodes)
    .set({ attempts: sql`${oneTimePasscodes.attempts} + 1` })
    .where(and(eq(oneTimePasscodes.userId, userId), lt(oneTimePasscodes.attempts, MAX_OTP_ATTEMPTS), gt(oneTimePasscodes.expiresAt, nowIso())))
    .returning({ codeHmac: oneTimePasscodes.codeHmac });
  const stored = rows[0]?.codeHmac;
  return stored !== undefined && timingSafeEqualText(presented, stored);
}

/** A correct code presented with a refused password was not a wrong try: give the try back. */
export async function refundPasscodeTry(db: Database, userId: string): Promise<void> {
  await db
    .update(oneTimePasscodes)
    .set({ attempts: sql`max(${oneTimePasscodes.attempts} - 1, 0)` })
    .where(eq(oneTimePasscodes.userId, userId));
}

/**
 * Consumes the code: a conditional DELETE on its HMAC, so of two concurrent uses exactly one removes the row and
 * wins. Returned unexecuted so the caller batches it with the password change (both or neither).
 */
export function consumePasscode(db: Database, userId: string, hmac: string) {
  return db
    .delete(oneTimePasscodes)
    .where(and(eq(oneTimePasscodes.userId, userId), eq(oneTimePasscodes.codeHmac, hmac)))
    .returning({ userId: oneTimePasscodes.userId });
}
