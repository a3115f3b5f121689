import { and, eq, gt, inArray, lt, sql } from "drizzle-orm";
import type { Database } from "../../db/client";
import { type AuthMethod, mfaChallenges, type UserRow, users } from "../../db/schema";
import { nowIso, randomAlphanumeric, sha256Hex, timingSafeEqualText } from "../../lib/crypto";

/**
 * The `mfa_token` of a sign-in waiting for its second factor (docs/second-factor.md, "Signing in"): `<16-char
 * id>-<32-char secret>` over [0-9A-Za-z] (190 random bits in the secret), of which only the secret's SHA-256 is
 * stored. It lives 5 minutes, is used once, and dies after 5 wrong codes; every try is counted before the code is
 * looked at, so parallel guesses cannot exceed that.
 */

const TTL_MS = 5 * 60 * 1000;
const MAX_CHALLENGE_ATTEMPTS = 5;
const TOKEN_PATTERN = /^([0-9A-Za-z]{16})-([0-9A-Za-z]{32})$/;

export interface ChallengeStart {
  userId: string;
  /** The login type of the session it will end in. */
  loginType: "password" | "oidc" | "github";
  /** What the first step proved. */
  methods: AuthMethod[];
  /** External sign-in only: where the browser goes once the second step is done, already made safe. */
  redirect?: string | undefined;
}

/** A new challenge: the token to hand to the client once, and its insert. */
export async function issueChallenge(db: Database, start: ChallengeStart) {
  const id = randomAlphanumeric(16);
  const secret = randomAlphanumeric(32);
  const now = Date.now();
  const insert = db.insert(mfaChallenges).values({
    id,
    hashedSecret: await sha256Hex(secret),
    userId: start.userId,
    loginType: start.loginType,
    methods: start.methods,
    redirect: start.redirect ?? null,
    attempts: 0,
    expiresAt: nowIso(now + TTL_MS),
    createdAt: nowIso(now),
  });
  return { token: `${id}-${secret}`, insert };
}

export interface OpenedChallenge extends ChallengeStart {
  id: string;
  user: UserRow;
}

/**
 * The live challenge `token` names, with its user, or undefined when the token is malformed, unknown, expired, out of
 * tries, or its secret is wrong (compared in constant time). Spends nothing: a step that checks a code spends a try
 * first ({@link spendChallengeTry}). One round trip.
 */
export async function findChallenge(db: Database, token: string): Promise<OpenedChallenge | undefined> {
  const parsed = TOKEN_PATTERN.exec(token);
  const id = parsed?.[1];
  const secret = parsed?.[2];
  if (!id || !secret) return undefined;
  const [found, owners] = await db.batch([
    db.select().from(mfaChallenges).where(eq(mfaChallenges.id, id)),
    db
      .select()
      .from(users)
      .where(inArray(users.id, db.select({ userId: mfaChallenges.userId }).from(mfaChallenges).where(eq(mfaChallenges.id, id)))),
  ]);
  const row = found[0];
  const user = owners[0];
  if (!row || !user || user.deleted) return undefined;
  if (!timingSafeEqualText(await sha256Hex(secret), row.hashedSecret)) return undefined;
  if (row.attempts >= MAX_CHALLENGE_ATTEMPTS || Date.parse(row.expiresAt) <= Date.now()) return undefined;
  return { id: row.id, userId: row.userId, loginType: row.loginType, methods: row.methods, redirect: row.redirect ?? undefined, user };
}

/**
 * Takes one try from a challenge {@link findChallenge} found, atomically: false when it ran out of tries or time
 * meanwhile, so parallel guesses never get more than 5 between them. A wrong secret never gets this far, so it spends
 * none of the owner's tries.
 */
export async function spendChallengeTry(db: Database, challenge: OpenedChallenge): Promise<boolean> {
  const spent = await db
    .update(mfaChallenges)
    .set({ attempts: sql`${mfaChallenges.attempts} + 1` })
    .where(and(eq(mfaChallenges.id, challenge.id), lt(mfaChallenges.attempts, MAX_CHALLENGE_ATTEMPTS), gt(mfaChallenges.expiresAt, nowIso())))
    .returning({ id: mfaChallenges.id });
  return spent.length > 0;
}

/** Uses the challenge up: of two uses at once, one returns its row. */
export function consumeChallenge(db: Database, id: string) {
  return db.delete(mfaChallenges).where(eq(mfaChallenges.id, id)).returning({ id: mfaChallenges.id });
}

/** Challenges past their 5 minutes, removed by the cron. */
export function purgeExpiredMfaChallenges(db: Database) {
  return db.delete(mfaChallenges).where(lt(mfaChallenges.expiresAt, nowIso()));
}
