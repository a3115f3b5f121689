import type { Context } from "hono";
import type { Config } from "../../config/config";
import type { UserRow } from "../../db/schema";
import { readFresh } from "../../db/session";
import { forbidden } from "../../http/errors";
import type { AppEnv } from "../../http/types";
import { factorsOf, hasSecondFactor } from "./factors";
import { MfaMessages } from "./messages";

/**
 * MFA_REQUIRED_ROLES (docs/second-factor.md, "Requiring a second factor"): whether it asks this user for a second
 * factor. `member` names every user. Service accounts never sign in interactively, so they cannot be asked.
 */
export function secondFactorRequired(config: Config, user: Pick<UserRow, "roles" | "isSystem">): boolean {
  const required = config.MFA_REQUIRED_ROLES;
  if (required.length === 0 || user.isSystem) return false;
  return required.some((role) => role === "member" || user.roles.includes(role));
}

/**
 * Refuses a caller whom MFA_REQUIRED_ROLES asks for a second factor and who has none: 403 with `detail`
 * `second factor required`. Free when the policy names none of the caller's roles; otherwise the verdict is worked
 * out once per cached key (`memo`), and a refusal is checked on the primary first, so a factor enrolled a moment
 * ago is never refused for a read replica's lag (docs/consistency.md).
 */
export async function assertSecondFactorPolicy(c: Context<AppEnv>): Promise<void> {
  const { user, memo } = c.get("auth");
  if (!secondFactorRequired(c.get("config"), user)) return;
  if (memo.hasSecondFactor === undefined) {
    const factors = await readFresh(c, (db) => factorsOf(db, user.id), hasSecondFactor);
    memo.hasSecondFactor = factors !== undefined && hasSecondFactor(factors);
  }
  if (!memo.hasSecondFactor) throw forbidden(MfaMessages.setUpSecondFactor, MfaMessages.secondFactorRequired);
}
