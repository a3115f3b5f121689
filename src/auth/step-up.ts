import { eq } from "drizzle-orm";
import { createMiddleware } from "hono/factory";
import { apiKeys } from "../db/schema";
import { dbFor } from "../db/session";
import { forbidden } from "../http/errors";
import type { AppEnv } from "../http/types";
import { MfaMessages } from "./mfa/messages";

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
