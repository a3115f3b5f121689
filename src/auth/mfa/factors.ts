import { and, count, eq, isNull } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Database } from "../../db/client";
import { mfaChallenges, passkeys, recoveryCodes, userTotp, webauthnChallenges } from "../../db/schema";

/**
 * What second factors a user has (docs/second-factor.md): the one place that reads them, so that every decision —
 * whether sign-in asks for a factor, which methods it offers, whether step-up may use a password, whether the
 * MFA_REQUIRED_ROLES policy is met — sees the same facts.
 */
export interface Factors {
  /** An authenticator app is on (confirmed; a pending one is not a factor). */
  totp: boolean;
  /** Passkeys registered and usable: a suspect one (docs/passkeys.md, "Suspect passkeys") is refused, so it is none. */
  passkeys: number;
  /** Unused recovery codes: counted only while the user has a factor for them to stand in for. */
  recoveryCodes: number;
  /** The authenticator app's row as read here (on or pending), so checking a code needs no second read. */
  app?: typeof userTotp.$inferSelect | undefined;
}

/** The methods a second-factor step may use, as `POST /users/login` lists them. */
export type SecondFactorMethod = "totp" | "passkey" | "recovery_code";

/** One round trip: the authenticator app's state, the usable passkeys and the unused recovery codes. */
export async function factorsOf(db: Database, userId: string): Promise<Factors> {
  const [totp, keys, codes] = await db.batch([
    db.select().from(userTotp).where(eq(userTotp.userId, userId)),
    db
      .select({ n: count() })
      .from(passkeys)
      .where(and(eq(passkeys.userId, userId), isNull(passkeys.suspectAt))),
    db
      .select({ n: count() })
      .from(recoveryCodes)
      .where(and(eq(recoveryCodes.userId, userId), isNull(recoveryCodes.usedAt))),
  ]);
  const on = totp[0] !== undefined && totp[0].confirmedAt !== null;
  const usable = keys[0]?.n ?? 0;
  return { totp: on, passkeys: usable, recoveryCodes: on || usable > 0 ? (codes[0]?.n ?? 0) : 0, app: totp[0] };
}

/** Whether sign-in must ask for a second factor: an authenticator app or a passkey. Recovery codes alone are none. */
export function hasSecondFactor(factors: Factors): boolean {
  return factors.totp || factors.passkeys > 0;
}

/** Which methods this user may use at a second-factor step: the one place that decides it. */
export function secondFactorMethods(factors: Factors): SecondFactorMethod[] {
  const methods: SecondFactorMethod[] = [];
  if (factors.totp) methods.push("totp");
  if (factors.passkeys > 0) methods.push("passkey");
  if (factors.recoveryCodes > 0) methods.push("recovery_code");
  return methods;
}

/**
 * What stands in for a second factor or waits for one — the recovery codes and any sign-in waiting at its second
 * step — removed with the user's last factor: recovery codes are a way back to a factor, not one.
 */
export function removeFactorLeftovers(db: Database, userId: string): BatchItem<"sqlite">[] {
  return [db.delete(recoveryCodes).where(eq(recoveryCodes.userId, userId)), db.delete(mfaChallenges).where(eq(mfaChallenges.userId, userId))];
}

/**
 * Every statement that takes all of a user's second factors away, with their recovery codes and any sign-in waiting
 * for a factor: an owner's reset, and the deletion of the account.
 */
export function removeAllFactors(db: Database, userId: string): BatchItem<"sqlite">[] {
  return [
    db.delete(userTotp).where(eq(userTotp.userId, userId)),
    // A credential id is unique across the deployment, so a removed passkey's authenticator can be added anew.
    db.delete(passkeys).where(eq(passkeys.userId, userId)),
    db.delete(webauthnChallenges).where(eq(webauthnChallenges.userId, userId)),
    ...removeFactorLeftovers(db, userId),
  ];
}
