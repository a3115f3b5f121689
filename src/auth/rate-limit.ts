import type { Context } from "hono";
import { rateLimited } from "../http/errors";
import type { AppEnv } from "../http/types";

/**
 * Limits of the Rate Limiting bindings in wrangler.toml. The binding only answers allowed/denied, so the numbers
 * for the 429 message live here; keep both in step.
 */
export const LOGIN_LIMITS = {
  perIp: { limit: 20, periodSeconds: 60 },
  perAccount: { limit: 10, periodSeconds: 60 },
} as const;

/** Throws SPEC §1's 429 once `key` has used its budget on `limiter`. */
export async function enforceRateLimit(
  limiter: RateLimit,
  key: string,
  budget: { limit: number; periodSeconds: number },
): Promise<void> {
  const { success } = await limiter.limit({ key });
  if (!success) throw rateLimited(budget.limit, budget.periodSeconds);
}

/** Per client address; Cloudflare sets CF-Connecting-IP and clients cannot forge it at the edge. */
export function limitPerIp(c: Context<AppEnv>, route: string): Promise<void> {
  const ip = c.req.header("CF-Connecting-IP") ?? "local";
  return enforceRateLimit(c.env.LOGIN_IP_LIMITER, `${route}:${ip}`, LOGIN_LIMITS.perIp);
}

/** Per account (by normalised e-mail, known or not, so the limit itself reveals nothing). */
export function limitPerAccount(c: Context<AppEnv>, route: string, email: string): Promise<void> {
  return enforceRateLimit(c.env.LOGIN_ACCOUNT_LIMITER, `${route}:${email.toLowerCase()}`, LOGIN_LIMITS.perAccount);
}
