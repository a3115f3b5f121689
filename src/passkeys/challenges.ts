import { decodeBase64urlIgnorePadding, encodeBase64urlNoPadding } from "@oslojs/encoding";
import { and, eq, gt, isNull, lt } from "drizzle-orm";
import type { Database } from "../db/client";
import { webauthnChallenges } from "../db/schema";
import { nowIso, sha256Hex } from "../lib/crypto";

/**
 * WebAuthn challenges (docs/passkeys.md, "Challenges"): 32 random bytes, handed out in the options and kept only as
 * SHA-256, for 5 minutes, bound to what they were issued for and to whom. A response naming one that is not live is
 * refused before anything else is checked; a response that verifies spends it, so it is good for one ceremony. A
 * refused response changes nothing, the challenge included.
 */

export type ChallengePurpose = (typeof webauthnChallenges.$inferSelect)["purpose"];

/** How long a challenge lives; also the `timeout` the options give the browser. */
export const CHALLENGE_TTL_MS = 5 * 60 * 1000;

/** A fresh challenge: its base64url for the options, and the insert that records it (run it before answering). */
export async function newChallenge(db: Database, purpose: ChallengePurpose, userId: string | null, now = Date.now()) {
  const text = encodeBase64urlNoPadding(crypto.getRandomValues(new Uint8Array(32)));
  const insert = db.insert(webauthnChallenges).values({
    challengeHash: await sha256Hex(text),
    purpose,
    userId,
    expiresAt: nowIso(now + CHALLENGE_TTL_MS),
    createdAt: nowIso(now),
  });
  return { text, insert };
}

/**
 * The challenge a response's `clientDataJSON` carries, as base64url; undefined when it is not JSON or has none. The
 * signature over it is checked afterwards: this only finds which challenge the response claims.
 */
export function presentedChallenge(clientDataJSON: string): string | undefined {
  try {
    const parsed: unknown = JSON.parse(new TextDecoder().decode(decodeBase64urlIgnorePadding(clientDataJSON)));
    const challenge = parsed !== null && typeof parsed === "object" && "challenge" in parsed ? parsed.challenge : undefined;
    return typeof challenge === "string" && challenge.length <= 128 ? challenge : undefined;
  } catch {
    return undefined;
  }
}

/** Which live challenge `challenge` is, for `purpose` and `userId` (null: issued to nobody in particular). */
async function matching(challenge: string, purpose: ChallengePurpose, userId: string | null) {
  return and(
    eq(webauthnChallenges.challengeHash, await sha256Hex(challenge)),
    eq(webauthnChallenges.purpose, purpose),
    userId === null ? isNull(webauthnChallenges.userId) : eq(webauthnChallenges.userId, userId),
    gt(webauthnChallenges.expiresAt, nowIso()),
  );
}

/** Whether `challenge` is live for `purpose` and `userId`: read before any signature is checked, spent only after. */
export async function challengeIsLive(db: Database, challenge: string, purpose: ChallengePurpose, userId: string | null): Promise<boolean> {
  const found = await db
    .select({ challengeHash: webauthnChallenges.challengeHash })
    .from(webauthnChallenges)
    .where(await matching(challenge, purpose, userId))
    .limit(1);
  return found.length > 0;
}

/**
 * Spends `challenge`, once the response carrying it has verified. One `DELETE … RETURNING`, so of two responses
 * carrying the same challenge (a replay racing the original), exactly one gets it.
 */
export async function spendChallenge(db: Database, challenge: string, purpose: ChallengePurpose, userId: string | null): Promise<boolean> {
  const spent = await db
    .delete(webauthnChallenges)
    .where(await matching(challenge, purpose, userId))
    .returning({ challengeHash: webauthnChallenges.challengeHash });
  return spent.length > 0;
}

/** The cron's sweep: challenges nobody presented in time (docs/passkeys.md, "Challenges"). */
export function purgeExpiredPasskeyChallenges(db: Database, now = Date.now()) {
  return db.delete(webauthnChallenges).where(lt(webauthnChallenges.expiresAt, nowIso(now)));
}
