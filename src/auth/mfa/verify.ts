import { eq } from "drizzle-orm";
import type { Context } from "hono";
import type { Database } from "../../db/client";
import { type AuthMethod, passkeys } from "../../db/schema";
import type { AppEnv } from "../../http/types";
import { PasskeyRefused, verifyPasskeyAssertion } from "../../passkeys/assertion";
import type { AuthenticationResponseBody } from "../../passkeys/schemas";
import { acceptableStep, acceptStep } from "./authenticator";
import type { Factors, SecondFactorMethod } from "./factors";
import { secondFactorMethods } from "./factors";
import { matchRecoveryCode, useRecoveryCode } from "./recovery-codes";

/**
 * What a second-factor step presents: a one-time code (from the authenticator app, or a recovery code), or a passkey's
 * answer to options `passkeyRequestOptions` gave for the same purpose and user.
 */
export type SecondFactorProof = { code: string } | { passkey: AuthenticationResponseBody };

/** Which ceremony a passkey answers: its challenge was issued for this purpose only (docs/passkeys.md, "Challenges"). */
export type SecondFactorPurpose = "mfa" | "step-up";

/** A proof that checked out, and the statement that uses it up, which returns one row unless someone used it first. */
export interface CheckedFactor {
  method: SecondFactorMethod;
  /** What the session records (docs/second-factor.md, "Step-up"): a code of either kind is `otp`. */
  amr: AuthMethod;
  use: ReturnType<typeof acceptStep> | ReturnType<typeof useRecoveryCode> | ReturnType<typeof passkeyStillHeld>;
}

/**
 * A passkey's use is recorded when its assertion verifies (the challenge spent, the counter moved), so what remains
 * to run with the rest is a check that the passkey is still there: removed meanwhile, it returns no row.
 */
function passkeyStillHeld(db: Database, passkeyId: string) {
  return db.select({ id: passkeys.id }).from(passkeys).where(eq(passkeys.id, passkeyId));
}

/**
 * Checks a second-factor proof against what the user has, for sign-in and step-up alike: a passkey's assertion
 * (`verifyPasskeyAssertion`, for `purpose` and this user), a 6-digit code against the authenticator app, anything
 * else against the unused recovery codes — each only among the methods the user may use (`secondFactorMethods`).
 * A code's check writes nothing: the caller runs `use` with whatever else must happen at once. A passkey's verified
 * assertion has spent its challenge and moved its counter already; a refused one changed nothing.
 */
export async function checkSecondFactor(
  c: Context<AppEnv>,
  db: Database,
  userId: string,
  factors: Factors,
  proof: SecondFactorProof,
  purpose: SecondFactorPurpose,
): Promise<CheckedFactor | undefined> {
  const methods = secondFactorMethods(factors);
  if ("passkey" in proof) {
    if (!methods.includes("passkey")) return undefined;
    const passkey = await verifyPasskeyAssertion(c, { purpose, userId }, proof.passkey).catch((error: unknown) => {
      if (error instanceof PasskeyRefused) return undefined;
      throw error;
    });
    return passkey && { method: "passkey", amr: "passkey", use: passkeyStillHeld(db, passkey.id) };
  }
  const config = c.get("config");
  const code = proof.code.replace(/\s/g, "");
  if (/^\d{6}$/.test(code)) {
    if (!methods.includes("totp")) return undefined;
    const row = factors.app;
    const step = row && (await acceptableStep(config, row, code));
    return step === undefined ? undefined : { method: "totp", amr: "otp", use: acceptStep(db, userId, step, false) };
  }
  if (!methods.includes("recovery_code")) return undefined;
  const hash = await matchRecoveryCode(db, userId, code);
  return hash === undefined ? undefined : { method: "recovery_code", amr: "otp", use: useRecoveryCode(db, userId, hash) };
}
