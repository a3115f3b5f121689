import type { Context, ErrorHandler, MiddlewareHandler, NotFoundHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import { ConfigError, getConfig } from "../config/config";
import { assertInboxJurisdiction } from "../inbox/jurisdiction";
import { ApiError, Messages } from "./errors";
import frameHeaders from "./frame-headers.json";
import { logRefusal } from "./security-log";
import type { AppEnv } from "./types";

/** What a client-supplied request id must look like to be kept: 8 to 64 letters, digits, `_`, `.` or `-`. */
const CLIENT_REQUEST_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{7,63}$/;

/**
 * The headers every answer carries (docs/security.md, V3.4): HSTS for a year, as ASVS 3.4.1 asks (browsers ignore it
 * over plain http, i.e. local runs); JSON and text answers load nothing and may not be framed (the dashboard page sets
 * its own policy, which wins); no referrer; no MIME sniffing. The same set Hono's secureHeaders middleware sends by
 * default, with Herald's HSTS, CSP and Cross-Origin-Resource-Policy. A JSON file, so that the bench's reference
 * Workers (scripts/bench/harness.mjs) send exactly these too.
 */
const FRAME_HEADERS: readonly (readonly [string, string])[] = Object.entries(frameHeaders);
/** Of FRAME_HEADERS, the ones a page sets for itself (src/web/routes.ts), which the frame must then leave alone. */
const PAGE_OWNED = new Set(["Content-Security-Policy", "Cross-Origin-Resource-Policy"]);

/**
 * The answer's headers, ready to be set. Most answers are Hono's and can be changed in place; the runtime's own (a
 * WebSocket upgrade relayed from the inbox object) cannot, so such an answer is copied once. The first call for an
 * answer finds out by setting its X-Request-Id; the steps after it (CORS, the D1 bookmark, the frame) get the same
 * answer's headers without setting it again: each header set costs CPU (docs/benchmarks.md, "Where the time goes").
 */
export function writableHeaders(c: Context<AppEnv>): Headers {
  if (c.get("writableAnswer") === c.res) return c.res.headers;
  try {
    c.res.headers.set("X-Request-Id", c.get("requestId"));
  } catch {
    c.res = new Response(c.res.body, c.res);
    c.res.headers.set("X-Request-Id", c.get("requestId"));
  }
  c.set("writableAnswer", c.res);
  return c.res.headers;
}

/**
 * The frame of every request, in one step because each middleware step costs a measurable share of a request that
 * does little (docs/benchmarks.md, "Where the time goes"):
 *
 * - **A request id**, echoed as `X-Request-Id` and written to logs and the audit log. A client's own id (for tracing
 *   across services) is kept only when it looks like an id; anything else is replaced by a fresh UUID, so no client
 *   text of its choosing reaches the audit log.
 * - **The configuration**, loaded (and on the first request validated); a bad one fails loudly through the error
 *   handler, as does a DATA_JURISDICTION that is not where the deployment's inboxes live (src/inbox/jurisdiction.ts:
 *   one D1 batch on an isolate's first request, then nothing).
 * - **https only** when the public address is https (docs/security.md, V4.1 and V12.2): a request that reached that
 *   host over plain http is refused rather than served, since credentials and answers would cross the network in
 *   clear. A browser asking for a page is sent to https with a 308; an API call gets a 403 it cannot mistake for
 *   success. Local runs (another host, such as localhost) are unaffected.
 * - **The headers every answer carries**, and `Cache-Control: no-store` under `/api` (authenticated answers must not
 *   be cached by browsers or shared caches). They are set on the finished answer, in place: preparing them before
 *   the handler would make Hono copy them into the answer, and copying the answer to add them would copy it whole,
 *   each measurably dearer. A page that sets its own policy keeps it.
 */
export const requestFrame: MiddlewareHandler<AppEnv> = async (c, next) => {
  const given = c.req.header("X-Request-Id");
  c.set("requestId", given !== undefined && CLIENT_REQUEST_ID.test(given) ? given : crypto.randomUUID());
  const api = c.req.path.startsWith("/api/");
  try {
    const config = getConfig(c.env);
    c.set("config", config);
    const checking = assertInboxJurisdiction(c.env);
    if (checking) await checking;
    const refused = config.secure && c.req.url.startsWith("http:") ? refuseHttp(c, config.origin, api) : undefined;
    if (refused) c.res = refused;
    else await next();
  } catch (error) {
    // Only the configuration, the jurisdiction and the https refusal throw here: a handler's error is answered inside `next`.
    c.res = await handleError(error instanceof Error ? error : new Error(String(error)), c);
  }
  const headers = writableHeaders(c);
  for (const [name, value] of FRAME_HEADERS) if (!PAGE_OWNED.has(name) || !headers.has(name)) headers.set(name, value);
  if (api) headers.set("Cache-Control", "no-store");
};

/** The answer to a plain-http request for the https host, or undefined for any other host (a local run). */
function refuseHttp(c: Context<AppEnv>, origin: string, api: boolean): Response | undefined {
  const url = new URL(c.req.url);
  if (url.origin !== origin.replace(/^https:/, "http:")) return undefined;
  if (api) throw new ApiError(403, Messages.httpsOnly, { detail: Messages.httpsOnlyDetail(origin) });
  url.protocol = "https:";
  return c.redirect(url.href, 308);
}

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
 * A known path asked with a method it does not serve: 405 with `Allow`, in the error shape (docs/api.md,
 * Conventions). `Allow` lists exactly what the path is served with: the methods of its most specific routes
 * (`MemoRouter.allowed`, so `/users/login` never borrows the `{user}` route's), HEAD wherever GET is, and OPTIONS
 * where `preflight` says the CORS preflight answers it. A 404 of a method the path does serve (no such user, a
 * notification that is not yours) is left alone.
 */
export function methodNotAllowedIn(
  router: { allowed(path: string): string[] | undefined },
  preflight: (path: string) => boolean,
): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    await next();
    if (c.res.status !== 404 || c.error) return;
    const served = router.allowed(c.req.path);
    if (!served || served.includes(c.req.method)) return;
    const allow = preflight(c.req.path) ? [...served, "OPTIONS"] : served;
    c.res = c.json(new ApiError(405, Messages.methodNotAllowed).body(), 405, { Allow: allow.join(", ") });
  };
}

/** A path no route serves: 404 `Route not found.`, in the error shape (docs/api.md, Conventions). */
export const routeNotFound: NotFoundHandler<AppEnv> = (c) => errorResponse(c, new ApiError(404, Messages.routeNotFound));
