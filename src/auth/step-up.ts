import { eq, sql } from "drizzle-orm";
import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import type { Database } from "../db/client";
import { type ApiKeyRow, type AuthMethod, apiKeys, type UserRow, users } from "../db/schema";
import { dbFor } from "../db/session";
import { badRequest, forbidden } from "../http/errors";
import type { AppEnv } from "../http/types";
import { nowIso } from "../lib/crypto";
import { PasskeyMessages } from "../passkeys/messages";
import type { AuthenticationResponseBody } from "../passkeys/schemas";
import { noticeRecoveryCodeUsed } from "../security/notices";
import { factorsOf, hasSecondFactor, type SecondFactorMethod } from "./mfa/factors";
import { MfaMessages } from "./mfa/messages";
import { checkSecondFactor } from "./mfa/verify";
import { verifyPassword } from "./passwords/hash";

/** Whether a session's last authentication (`auth_time`) is within `maxAgeMs` of `now`. */
function recent(authTime: string | null, maxAgeMs: number, now: number): boolean {
  return authTime !== null && now - Date.parse(authTime) <= maxAgeMs;
}

/**
 * Requires recent authentication (docs/second-factor.md, "Step-up"): on a route that adds or removes a factor,
 * makes recovery codes or API tokens, deletes a user, changes site roles or ends sessions, a login session whose
 * user last proved who they are more than STEP_UP_MAX_AGE ago is refused with 403 `Confirm it is you to continue.`,
 * `detail` `step-up required`, until `POST /users/me/step-up` refreshes it. API tokens pass: their scopes govern
 * them. Placed after `requireAuth`, by name, on each such route; the OpenAPI document marks them.
 *
 * `auth_time` only moves forward, so this isolate's cached copy can only be older than the truth: it decides alone
 * when it is recent enough, and the primary has the last word before a refusal (a step-up another isolate answered
 * a moment ago counts at once).
 */
export const requireRecentAuth = createMiddleware<AppEnv>(async (c, next) => {
  const { key } = c.get("auth");
  if (key.loginType !== "token") {
    const maxAge = c.get("config").STEP_UP_MAX_AGE;
    const now = Date.now();
    if (!recent(key.authTime, maxAge, now)) {
      const [stored] = await dbFor(c, "write").select({ authTime: apiKeys.authTime }).from(apiKeys).where(eq(apiKeys.id, key.id)).limit(1);
      if (!stored || !recent(stored.authTime, maxAge, now)) throw forbidden(MfaMessages.confirmItIsYou, MfaMessages.stepUpRequired);
      key.authTime = stored.authTime;
    }
  }
  await next();
});

/** What a step-up presents: exactly one of them (the request schema, `stepUpBody`, holds it to that). */
export interface StepUpBody {
  password?: string | undefined;
  code?: string | undefined;
  passkey?: AuthenticationResponseBody | undefined;
}

/** What a step-up proved: the method the session records, and what the audit entry names. */
interface StepUpProof {
  amr: AuthMethod;
  method: SecondFactorMethod | "password";
}

const refused = (message: string, field: keyof StepUpBody, failedCheck: boolean) =>
  badRequest(message, { validations: [{ field, detail: message }], ...(failedCheck ? { event: "authentication_failed" as const } : {}) });

/**
 * Checks a step-up (docs/second-factor.md, "Step-up"): a user with a second factor proves it with a code (the app's,
 * or a recovery code, which this uses up), never the password — the factor a session thief most likely has too; a
 * user without one, with the password; an external-login user without one signs in again instead. Every refusal is a
 * 400 naming the field, never a 401: the session itself is still good.
 */
export async function checkStepUp(
  c: Context<AppEnv>,
  db: Database,
  user: Pick<UserRow, "id" | "loginType">,
  body: StepUpBody,
  admitted: Promise<void> = Promise.resolve(),
): Promise<StepUpProof> {
  // The caller's rate limit runs alongside the read, and refuses before anything is checked.
  const [factors] = await Promise.all([factorsOf(db, user.id), admitted]);
  if (hasSecondFactor(factors)) {
    const proof = body.passkey !== undefined ? { passkey: body.passkey } : body.code !== undefined ? { code: body.code } : undefined;
    if (proof === undefined) throw refused(MfaMessages.useSecondFactor, "password", false);
    const field = "passkey" in proof ? "passkey" : "code";
    const checked = await checkSecondFactor(c, db, user.id, factors, proof, "step-up");
    if (!checked || (await checked.use).length === 0) {
      throw refused(field === "passkey" ? PasskeyMessages.incorrectPasskey : MfaMessages.incorrectCode, field, true);
    }
    if (checked.method === "recovery_code") noticeRecoveryCodeUsed(c, user.id, factors.recoveryCodes - 1);
    return { amr: checked.amr, method: checked.method };
  }
  if (body.password === undefined) throw refused(MfaMessages.usePassword, body.passkey === undefined ? "code" : "passkey", false);
  if (user.loginType !== "password") throw badRequest(MfaMessages.signInAgainToConfirm);
  const [row] = await db.select({ hashedPassword: users.hashedPassword }).from(users).where(eq(users.id, user.id));
  if (!(await verifyPassword(row?.hashedPassword, body.password)).valid) throw refused(MfaMessages.incorrectPassword, "password", true);
  return { amr: "pwd", method: "password" };
}

/**
 * The statement that makes the session count as just signed in, adding `amr` to the methods it records (once); this
 * isolate's copy of the key (it may be the cached one) is updated at once.
 */
export function recordStepUp(db: Database, key: ApiKeyRow, amr: AuthMethod) {
  const authTime = nowIso();
  key.authTime = authTime;
  if (!key.authMethods.includes(amr)) key.authMethods = [...key.authMethods, amr];
  return db
    .update(apiKeys)
    .set({
      authTime,
      authMethods: sql`CASE WHEN EXISTS (SELECT 1 FROM json_each(${apiKeys.authMethods}) WHERE value = ${amr}) THEN ${apiKeys.authMethods} ELSE json_insert(${apiKeys.authMethods}, '$[#]', ${amr}) END`,
    })
    .where(eq(apiKeys.id, key.id));
}
