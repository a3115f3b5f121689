import type { MiddlewareHandler } from "hono";
import { BOOKMARK_HEADER } from "../db/bookmark";
import { writableHeaders } from "./middleware";
import type { AppEnv } from "./types";

/** Request headers a browser may send cross-origin. */
const CORS_ALLOW_HEADERS = ["Content-Type", "Service-Session-Token", "Authorization", BOOKMARK_HEADER];
/** Response headers a browser script may read. */
const CORS_EXPOSE_HEADERS = ["X-Request-Id", "Retry-After", BOOKMARK_HEADER];
const ALLOW_METHODS = "GET,POST,PUT,PATCH,DELETE";
const ALLOW = CORS_ALLOW_HEADERS.join(",");
const EXPOSE = CORS_EXPOSE_HEADERS.join(",");
/** Seconds a browser may keep a preflight answer. */
const MAX_AGE = "600";

/**
 * CORS for `/api/*` (docs/api.md, Conventions): only the origins in CORS_ALLOWED_ORIGINS (docs/configuration.md) may
 * call from a browser, with credentials. The answer is the one Hono's cors middleware gave (same headers, same
 * preflight), but set on the finished answer in place: Hono's middleware writes to `c.res` before and after the
 * handler, which makes Hono build the answer three times, a tenth of the CPU of a request that does little
 * (docs/benchmarks.md, "Where the time goes").
 */
export const apiCors: MiddlewareHandler<AppEnv> = async (c, next) => {
  const origin = c.req.header("Origin");
  const allowed = origin !== undefined && c.get("config").CORS_ALLOWED_ORIGINS.includes(origin) ? origin : undefined;
  if (c.req.method === "OPTIONS") {
    return c.body(null, 204, {
      ...(allowed ? { "Access-Control-Allow-Origin": allowed } : {}),
      "Access-Control-Allow-Credentials": "true",
      "Access-Control-Expose-Headers": EXPOSE,
      "Access-Control-Max-Age": MAX_AGE,
      "Access-Control-Allow-Methods": ALLOW_METHODS,
      "Access-Control-Allow-Headers": ALLOW,
      Vary: "Origin, Access-Control-Request-Headers",
    });
  }
  await next();
  const headers = writableHeaders(c);
  if (allowed) headers.set("Access-Control-Allow-Origin", allowed);
  headers.set("Access-Control-Allow-Credentials", "true");
  headers.set("Access-Control-Expose-Headers", EXPOSE);
  headers.append("Vary", "Origin");
};
