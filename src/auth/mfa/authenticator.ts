import { and, eq, isNotNull, isNull, lt, or } from "drizzle-orm";
import type { Config } from "../../config/config";
import type { Database } from "../../db/client";
import { userTotp } from "../../db/schema";
import { nowIso } from "../../lib/crypto";
import { openSealed, sealText } from "../../lib/sealed";
import { matchingStep, newTotpSecret, otpauthUrl } from "./totp";

/**
 * A user's authenticator app (docs/second-factor.md, "Authenticator app"): enrolment, the sealed secret, and the rule
 * that a code once accepted is refused for the rest of its window. The secret is sealed under a key derived from
 * SECRET_KEY for this purpose only and bound to the user, so a sealed secret copied to another user's row opens for
 * nobody.
 */

const SEAL_PURPOSE = "herald totp secret v1";

export type TotpRow = typeof userTotp.$inferSelect;

/**
 * The issuer an authenticator app shows beside the code: ACCESS_URL's host name, so two deployments (or a phishing
 * copy of one) never look alike in the app, with nothing more to configure.
 */
function totpIssuer(config: Config): string {
  return new URL(config.ACCESS_URL).hostname;
}

export async function totpOf(db: Database, userId: string): Promise<TotpRow | undefined> {
  return (await db.select().from(userTotp).where(eq(userTotp.userId, userId)).limit(1))[0];
}

/**
 * A new pending secret, replacing a pending one; the write changes nothing when the app is on already (the caller
 * answers 409). Answers the secret and its `otpauth://` URL, shown once, and the statement.
 */
export async function beginTotp(db: Database, config: Config, userId: string, account: string) {
  const secret = newTotpSecret();
  const row = {
    secretSealed: await sealText(config.SECRET_KEY, SEAL_PURPOSE, secret, userId),
    confirmedAt: null,
    lastStep: null,
    createdAt: nowIso(),
  };
  const upsert = db
    .insert(userTotp)
    .values({ userId, ...row })
    .onConflictDoUpdate({ target: userTotp.userId, set: row, setWhere: isNull(userTotp.confirmedAt) })
    .returning({ userId: userTotp.userId });
  return { secret, otpauthUrl: otpauthUrl(secret, totpIssuer(config), account), upsert };
}

/**
 * The step `code` is for, when it is one of the app's current codes (the current step or one on either side) and
 * no code of that step or a later one was accepted before; otherwise undefined. A secret that no longer opens
 * (SECRET_KEY was rotated) matches nothing: recovery codes are the way back in then.
 */
export async function acceptableStep(config: Config, row: TotpRow, code: string, now = Date.now()): Promise<number | undefined> {
  if (!/^\d{6}$/.test(code)) return undefined;
  let secret: string;
  try {
    secret = await openSealed(config.SECRET_KEY, SEAL_PURPOSE, row.secretSealed, row.userId);
  } catch {
    return undefined;
  }
  const step = matchingStep(secret, code, now);
  if (step === undefined || (row.lastStep !== null && step <= row.lastStep)) return undefined;
  return step;
}

/**
 * Records `step` as the last accepted, only if no code of it or a later step was accepted meanwhile: of two uses of
 * one code at once, one returns the row. `confirm` also turns a pending app on (enrolment's first code).
 */
export function acceptStep(db: Database, userId: string, step: number, confirm: boolean) {
  return db
    .update(userTotp)
    .set(confirm ? { lastStep: step, confirmedAt: nowIso() } : { lastStep: step })
    .where(
      and(
        eq(userTotp.userId, userId),
        confirm ? isNull(userTotp.confirmedAt) : isNotNull(userTotp.confirmedAt),
        or(isNull(userTotp.lastStep), lt(userTotp.lastStep, step)),
      ),
    )
    .returning({ userId: userTotp.userId });
}

/** Turns the app off (or drops a pending one). */
export function removeTotp(db: Database, userId: string) {
  return db.delete(userTotp).where(eq(userTotp.userId, userId)).returning({ userId: userTotp.userId });
}
