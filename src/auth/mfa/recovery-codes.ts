import { and, eq, isNull } from "drizzle-orm";
import type { Database } from "../../db/client";
import { recoveryCodes } from "../../db/schema";
import { nowIso, sha256Hex, timingSafeEqualText } from "../../lib/crypto";

/**
 * Recovery codes (docs/second-factor.md, "Recovery"): ten at a time, shown once, each usable once. Each is 24 symbols
 * of Crockford's base32 (120 bits from the CSPRNG), written in six groups of four. Only SHA-256 of the code bound to
 * its user is stored: at 112 bits and more a plain hash is enough (ASVS 6.5.2), so no server key is needed and the
 * codes keep working when SECRET_KEY is rotated — they are how a user gets back in when the authenticator app's
 * secret cannot be opened any more.
 */

const CODES_PER_SET = 10;
const SYMBOLS = 24;
/** Crockford's base32: no I, L, O or U, so a code read aloud or copied by hand survives. 32 symbols, 5 bits each. */
const ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz";

function newCode(): string {
  // 256 is a multiple of 32: the low five bits of a random byte are uniform.
  const symbols = Array.from(crypto.getRandomValues(new Uint8Array(SYMBOLS)), (byte) => ALPHABET[byte & 31]).join("");
  return symbols.match(/.{4}/g)?.join("-") ?? symbols;
}

/**
 * A code as typed: case, spaces and hyphens do not matter, and the letters Crockford's alphabet leaves out are read
 * as the digits they look like. Anything else that is not in the alphabet makes it no code at all.
 */
function normalized(code: string): string | undefined {
  const text = code.toLowerCase().replace(/[\s-]/g, "").replace(/[il]/g, "1").replace(/o/g, "0");
  return text.length === SYMBOLS && [...text].every((ch) => ALPHABET.includes(ch)) ? text : undefined;
}

function codeHash(userId: string, code: string): Promise<string> {
  return sha256Hex(`herald-recovery:${userId}:${code}`);
}

/** A new set for the user: the codes to show once, and the statements that replace any earlier set with it. */
export async function newRecoveryCodes(db: Database, userId: string) {
  const codes = Array.from({ length: CODES_PER_SET }, newCode);
  const createdAt = nowIso();
  const rows = await Promise.all(codes.map(async (code) => ({ userId, codeHash: await codeHash(userId, code.replace(/-/g, "")), createdAt })));
  return {
    codes,
    statements: [db.delete(recoveryCodes).where(eq(recoveryCodes.userId, userId)), db.insert(recoveryCodes).values(rows)] as const,
  };
}

/**
 * The stored hash `code` matches among the user's unused codes, every one compared in constant time, or undefined.
 * Using it is {@link useRecoveryCode}.
 */
export async function matchRecoveryCode(db: Database, userId: string, code: string): Promise<string | undefined> {
  const text = normalized(code);
  if (text === undefined) return undefined;
  const [candidate, unused] = await Promise.all([
    codeHash(userId, text),
    db
      .select({ codeHash: recoveryCodes.codeHash })
      .from(recoveryCodes)
      .where(and(eq(recoveryCodes.userId, userId), isNull(recoveryCodes.usedAt))),
  ]);
  let match: string | undefined;
  for (const row of unused) if (timingSafeEqualText(candidate, row.codeHash)) match = row.codeHash;
  return match;
}

/** Marks the matched code used, only if it still is unused: of two uses at once, one returns the row. */
export function useRecoveryCode(db: Database, userId: string, hash: string) {
  return db
    .update(recoveryCodes)
    .set({ usedAt: nowIso() })
    .where(and(eq(recoveryCodes.userId, userId), eq(recoveryCodes.codeHash, hash), isNull(recoveryCodes.usedAt)))
    .returning({ userId: recoveryCodes.userId });
}
