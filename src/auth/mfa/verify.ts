import type { Config } from "../../config/config";
import type { Database } from "../../db/client";
import type { AuthMethod } from "../../db/schema";
import { acceptableStep, acceptStep, totpOf } from "./authenticator";
import type { Factors, SecondFactorMethod } from "./factors";
import { secondFactorMethods } from "./factors";
import { matchRecoveryCode, useRecoveryCode } from "./recovery-codes";

/** What a second-factor step presents: a one-time code, from the authenticator app or a recovery code. */
export interface SecondFactorProof {
  code: string;
}

/** A proof that checked out, and the statement that uses it up, which returns one row unless someone used it first. */
export interface CheckedFactor {
  method: SecondFactorMethod;
  /** What the session records (docs/second-factor.md, "Step-up"): a code of either kind is `otp`. */
  amr: AuthMethod;
  use: ReturnType<typeof acceptStep> | ReturnType<typeof useRecoveryCode>;
}

/**
 * Checks a second-factor proof against what the user has, for sign-in and step-up alike: a 6-digit code against the
 * authenticator app, anything else against the unused recovery codes — each only among the methods the user may use
 * (`secondFactorMethods`). Nothing is written: the caller runs `use` with whatever else must happen at once.
 */
export async function checkSecondFactor(
  db: Database,
  config: Config,
  userId: string,
  factors: Factors,
  proof: SecondFactorProof,
): Promise<CheckedFactor | undefined> {
  const methods = secondFactorMethods(factors);
  const code = proof.code.replace(/\s/g, "");
  if (/^\d{6}$/.test(code)) {
    if (!methods.includes("totp")) return undefined;
    const row = await totpOf(db, userId);
    const step = row && (await acceptableStep(config, row, code));
    return step === undefined ? undefined : { method: "totp", amr: "otp", use: acceptStep(db, userId, step, false) };
  }
  if (!methods.includes("recovery_code")) return undefined;
  const hash = await matchRecoveryCode(db, userId, code);
  return hash === undefined ? undefined : { method: "recovery_code", amr: "otp", use: useRecoveryCode(db, userId, hash) };
}
