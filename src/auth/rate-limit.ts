import type { Context } from "hono";
import { rateLimited } from "../http/errors";
import type { AppEnv } from "../http/types";

/**
 * Limits of the Rate Limiting bindings in wrangler.toml. The binding only answers allowed/denied, so the numbers
 * for the 429 message live here; keep both in step.
 */
const LOGIN_LIMITS = {
  perIp: { limit: 20, periodSeconds: 60 },
  perAccountAndClient: { limit: 10, periodSeconds: 60 },
  perAccount: { limit: 100, periodSeconds: 60 },
  sensitive: { limit: 10, periodSeconds: 60 },
} as const;

/** What `limitSensitive` lets through per user and route, for the routes' descriptions and docs. */
export const SENSITIVE_LIMIT = LOGIN_LIMITS.sensitive;

/**
 * Custom notifications per user (`CUSTOM_NOTIFICATION_LIMITER`): the one route where a user fills their own inbox at
 * will (docs/security.md, "What one user can make Herald hold").
 */
export const CUSTOM_NOTIFICATIONS = { limit: 60, periodSeconds: 60 } as const;

/** Throws the error shape's (docs/api.md, Conventions) 429 once `key` has used its budget on `limiter`. */
async function enforceRateLimit(limiter: RateLimit, key: string, budget: { limit: number; periodSeconds: number }): Promise<void> {
  const { success } = await limiter.limit({ key });
  if (!success) throw rateLimited(budget.limit, budget.periodSeconds);
}

/** Per client address; Cloudflare sets CF-Connecting-IP and clients cannot forge it at the edge. */
export function limitPerIp(c: Context<AppEnv>, route: string): Promise<void> {
  const ip = c.req.header("CF-Connecting-IP") ?? "local";
  return enforceRateLimit(c.env.LOGIN_IP_LIMITER, `${route}:${ip}`, LOGIN_LIMITS.perIp);
}

/**
 * Per account (by normalised e-mail, known or not, so the limit itself reveals nothing), in two tiers: 10 a minute
 * from one client address, so failures elsewhere never refuse the owner's correct password; and a slower ceiling of
 * 100 a minute from all addresses together, against guessing spread over many. The trade-off: an attacker with more
 * than ten addresses can still hold the ceiling and refuse password sign-in for the minute (docs/security.md).
 */
export async function limitPerAccount(c: Context<AppEnv>, route: string, email: string): Promise<void> {
  const account = `${route}:${email.toLowerCase()}`;
  const ip = c.req.header("CF-Connecting-IP") ?? "local";
  await enforceRateLimit(c.env.LOGIN_ACCOUNT_LIMITER, `${account}:${ip}`, LOGIN_LIMITS.perAccountAndClient);
  await enforceRateLimit(c.env.LOGIN_ACCOUNT_CEILING, account, LOGIN_LIMITS.perAccount);
}

/**
 * Per user, for what costs a password hash or mints credentials: password checks, validation, tokens. Keyed by the
 * signed-in caller unless another user is the one concerned (a token is counted against the user who will hold it).
 */
export function limitSensitive(c: Context<AppEnv>, route: string, userId = c.get("auth").user.id): Promise<void> {
  return enforceRateLimit(c.env.SENSITIVE_LIMITER, `${route}:${userId}`, LOGIN_LIMITS.sensitive);
}

/** Per user, for `POST /notifications/custom`: every credential and tab of the user share the budget. */
export function limitCustomNotifications(c: Context<AppEnv>): Promise<void> {
  return enforceRateLimit(c.env.CUSTOM_NOTIFICATION_LIMITER, `custom-notification:${c.get("auth").user.id}`, CUSTOM_NOTIFICATIONS);
}
