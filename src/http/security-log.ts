import type { Context } from "hono";
import { clientIp } from "../audit/log";
import type { ApiError, SecurityEvent } from "./errors";
import type { AppEnv } from "./types";

/** The line's marker: Workers Logs indexes JSON lines, and a query for `herald = "security"` finds every refusal. */
const SECURITY_LOG_MARKER = "security";

function eventOf(error: ApiError): SecurityEvent | undefined {
  if (error.event) return error.event;
  if (error.status === 401) return "authentication_failed";
  if (error.status === 403) return "access_denied";
  if (error.status === 429) return "rate_limited";
  return undefined;
}

/**
 * One JSON line per refused credential, permission or rate limit (docs/security.md, Logging): when, where, who and
 * what, never a secret. Successful sign-ins and every state change are in the audit log instead; this covers what
 * changes nothing and so leaves no audit row. The path is JSON-encoded, so a hostile one cannot forge a line, and the
 * e-mail a failed sign-in named is left out (it may be someone else's, mistyped).
 */
export function logRefusal(c: Context<AppEnv>, error: ApiError): void {
  const event = eventOf(error);
  if (!event) return;
  const auth = c.get("auth");
  console.log(
    JSON.stringify({
      herald: SECURITY_LOG_MARKER,
      event,
      time: new Date().toISOString(),
      status: error.status,
      message: error.message,
      method: c.req.method,
      path: new URL(c.req.url).pathname.slice(0, 200),
      ip: clientIp(c),
      request_id: c.get("requestId") ?? "",
      user_id: auth?.user.id ?? null,
      key_id: auth?.key.id ?? null,
    }),
  );
}
