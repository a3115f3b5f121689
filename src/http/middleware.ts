import type { Context, ErrorHandler, Hono, MiddlewareHandler, NotFoundHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import { methodNotAllowed } from "hono/method-not-allowed";
import { ConfigError, getConfig } from "../config/config";
import { ApiError, Messages } from "./errors";
import { logRefusal } from "./security-log";
import type { AppEnv } from "./types";

/** What a client-supplied request id must look like to be kept: 8 to 64 letters, digits, `_`, `.` or `-`. */
const CLIENT_REQUEST_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{7,63}$/;

/**
 * Every request gets an id, echoed as `X-Request-Id` and written to logs and the audit log. A client's own id (for
 * tracing across services) is kept only when it looks like an id; anything else is replaced by a fresh UUID, so no
 * client text of its choosing reaches the audit log.
 */
export const requestIds: MiddlewareHandler<AppEnv> = async (c, next) => {
  const given = c.req.header("X-Request-Id");
  const id = given !== undefined && CLIENT_REQUEST_ID.test(given) ? given : crypto.randomUUID();
  c.set("requestId", id);
  c.header("X-Request-Id", id);
  await next();
};

/** Loads (and on the first request validates) the configuration; a bad one fails loudly through the error handler. */
export const loadConfig: MiddlewareHandler<AppEnv> = async (c, next) => {
  c.set("config", getConfig(c.env));
  await next();
};

/**
 * When the public address is https, a request that reached that host over plain http is refused rather than served
 * (docs/security.md, V4.1 and V12.2): credentials and answers would cross the network in clear. A browser asking
 * for a page is sent to https with a 308; an API call gets a 403 it cannot mistake for success. Local runs (another
 * host, such as localhost) are unaffected.
 */
export const httpsOnly: MiddlewareHandler<AppEnv> = async (c, next) => {
  const config = c.var.config;
  // A string test first: this runs on every request, and almost every request is https.
  if (config.secure && c.req.url.startsWith("http:")) {
    const url = new URL(c.req.url);
    if (url.origin === config.origin.replace(/^https:/, "http:")) {
      if (!url.pathname.startsWith("/api/")) {
        url.protocol = "https:";
        return c.redirect(url.href, 308);
      }
      throw new ApiError(403, Messages.httpsOnly, { detail: Messages.httpsOnlyDetail(config.origin) });
    }
  }
  await next();
};

/**
 * What an unexpected error may put in a log line: its name and first message line. Drizzle appends the bound
 * parameters of a failed query (e-mails, hashes) after "params:", so those never reach the log.
 */
function describeForLog(error: unknown): string {
  if (!(error instanceof Error)) return "non-Error value thrown";
  const cause = error.cause instanceof Error ? ` (cause: ${error.cause.message.split("\n")[0]})` : "";
  const message = (error.message.split(/\nparams:/)[0] ?? "").slice(0, 500);
  return `${error.name}: ${message}${cause}`;
}

function errorResponse(c: Context<AppEnv>, error: ApiError): Response {
  for (const [name, value] of Object.entries(error.headers)) c.header(name, value);
  return c.json(error.body(), error.status);
}

/** The one place that shapes error bodies (docs/api.md, Conventions). */
export const handleError: ErrorHandler<AppEnv> = (error, c) => {
  if (error instanceof ApiError) {
    logRefusal(c, error);
    return errorResponse(c, error);
  }
  // The one Hono exception that reaches here: the validators' JSON parse of a body that is not JSON (bodyLimit answers
  // through ApiError). Anything else is unexpected, and answered as such below.
  if (error instanceof HTTPException && error.status === 400) return errorResponse(c, new ApiError(400, Messages.badJson));
  const requestId = c.get("requestId") ?? "unknown";
  if (error instanceof ConfigError) console.error(`[herald] ${error.message} (request ${requestId})`);
  else console.error(`[herald] unexpected error in request ${requestId}: ${describeForLog(error)}`);
  return errorResponse(c, new ApiError(500, Messages.internal, { detail: Messages.requestId(requestId) }));
};

/**
 * 404 for unknown routes, 405 with `Allow` for a known path asked with a method it does not serve. The route table
 * is read from the app once, so a new route needs no extra registration here.
 */
/**
 * A known path asked with a method it does not serve: 405 with `Allow`, in the error shape (hono's method-not-allowed
 * middleware, which leaves a 404 alone when the path is served with this very method, e.g. with a trailing slash).
 */
export function methodNotAllowedIn(app: Hono<AppEnv>): MiddlewareHandler<AppEnv> {
  return methodNotAllowed({
    app,
    onMethodNotAllowed: (c, methods) =>
      c.json(new ApiError(405, Messages.methodNotAllowed).body(), 405, { Allow: methods.join(", ") }),
  });
}

export const routeNotFound: NotFoundHandler<AppEnv> = (c) => errorResponse(c, new ApiError(404, Messages.routeNotFound));
