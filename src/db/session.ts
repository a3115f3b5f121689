import type { Context, Hono, MiddlewareHandler } from "hono";
import { writableHeaders } from "../http/middleware";
import type { AppEnv } from "../http/types";
import { acceptedBookmark, BOOKMARK_HEADER, laterBookmark } from "./bookmark";
import { type Database, database } from "./client";

/**
 * Where a request's D1 session began (docs/consistency.md): at the primary (`first-primary`), wherever is nearest
 * (`first-unconstrained`, or no older than this isolate's floor), or at the bookmark the client sent.
 */
export type SessionStart = "primary" | "replica" | "bookmark";

/**
 * The newest bookmark this isolate has had from a session that began at the primary, taken as each request answers
 * (docs/consistency.md, "The isolate floor"). Every later replica session starts no older, so whatever this isolate
 * wrote (a sign-in, a logout, any revocation) it reads back from the next request on, for every caller, bookmark or
 * not: a revocation still takes effect at once in the isolate that made it (docs/architecture.md, "Account changes").
 * Only the primary's bookmarks raise it, never a client's, so no request can push it ahead of the database.
 */
let isolateFloor: string | undefined;

const SETTLED = () => true;

/**
 * Drizzle's D1 driver is typed for a whole `D1Database` but calls only `prepare` and `batch`
 * (drizzle-orm/d1/session.js), which a session has with the same signatures. The assignment checks exactly that at
 * compile time; the narrowing then costs nothing at run time (no wrapper object per request).
 */
function drizzleClient(session: D1DatabaseSession): D1Database {
  const used: Pick<D1Database, "prepare" | "batch"> = session;
  return used as D1Database;
}

function open(c: Context<AppEnv>, start: SessionStart, constraintOrBookmark: string): Database {
  const session = c.env.DB.withSession(constraintOrBookmark);
  const db = database(drizzleClient(session));
  c.set("d1Session", session);
  c.set("d1Start", start);
  c.set("db", db);
  return db;
}

/**
 * The request's Drizzle handle on D1, and the one place that decides which D1 session a request uses
 * (docs/consistency.md):
 * - `"read"`: reads. On a GET or HEAD they may be served by the nearest replica, no older than the client's bookmark
 *   when it sent one (and than this isolate's floor). Any other method's session starts at the primary, so what a
 *   route that writes checks before writing is current.
 * - `"write"`: writes, and reads that must see the newest state (a watch upgrade's credential, a re-check before a
 *   refusal). The session starts at the primary; a request that began on a replica goes on with a new primary session.
 * The session is opened on first use: a request that needs no D1 (an inbox call on an authentication cache hit)
 * opens none. Context variables are read with `c.get` (Hono's `c.var` copies them all on every access).
 */
export function dbFor(c: Context<AppEnv>, use: "read" | "write"): Database {
  const db = c.get("db");
  if (db !== undefined && (use === "read" || c.get("d1Start") === "primary")) return db;
  const method = c.req.method;
  if (use === "write" || (method !== "GET" && method !== "HEAD")) return open(c, "primary", "first-primary");
  const given = acceptedBookmark(c.req.header(BOOKMARK_HEADER));
  if (given !== undefined && (isolateFloor === undefined || given >= isolateFloor)) return open(c, "bookmark", given);
  return open(c, "replica", isolateFloor ?? "first-unconstrained");
}

/**
 * Reads something a client may have just written and now reads back without a bookmark (docs/consistency.md,
 * "The fallback rule"): on the request's session first; when that session may be a replica's and the answer is
 * missing, or is not `settled` (it would be refused, and a newer write could change that, e.g. a key that looks
 * expired before its renewal reached the replica), once more on the primary. A found, settled answer costs nothing
 * extra; only a refusal pays one primary read. Whatever a caller refuses should be unsettled, so that every refusal
 * takes the same two reads and its timing does not tell "missing" from "there, but refused".
 */
export async function readFresh<T>(
  c: Context<AppEnv>,
  read: (db: Database) => Promise<T | undefined>,
  settled: (found: T) => boolean | Promise<boolean> = SETTLED,
): Promise<T | undefined> {
  const found = await read(dbFor(c, "read"));
  if (c.get("d1Start") === "primary" || (found !== undefined && (await settled(found)))) return found;
  return read(dbFor(c, "write"));
}

/** The request again, without its bookmark, under the same request id (one id names the failure logged and the answer). */
function withoutBookmark(request: Request, requestId: string): Request {
  const headers = new Headers(request.headers);
  headers.delete(BOOKMARK_HEADER);
  headers.set("X-Request-Id", requestId);
  return new Request(request, { headers });
}

/**
 * The one place that sets `Herald-D1-Bookmark` on an answer (docs/consistency.md): the latest bookmark of the
 * request's session, or, when the request used no D1, the well-formed bookmark it sent, so a client keeps its place.
 * A session that began at the primary raises this isolate's floor.
 *
 * A GET whose reads began at the client's bookmark and then failed is answered again without it, by `app`: a
 * well-formed bookmark may still be forged or come from another database, and D1 cannot serve a position it never
 * reached. So a bookmark never turns an answer into a 5xx that the same request without it would not get; a
 * genuine failure fails again and is answered as such.
 */
export function d1Bookmarks(app: Hono<AppEnv>): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    await next();
    const session = c.get("d1Session");
    if (session === undefined) {
      const given = acceptedBookmark(c.req.header(BOOKMARK_HEADER));
      if (given !== undefined) writableHeaders(c).set(BOOKMARK_HEADER, given);
      return;
    }
    const start = c.get("d1Start");
    if (start === "bookmark" && c.res.status >= 500) {
      // Unset first: assigning over a response would copy the failed one's headers onto the new answer.
      c.res = undefined;
      c.res = await app.fetch(withoutBookmark(c.req.raw, c.get("requestId")), c.env, c.executionCtx);
      return;
    }
    const bookmark = session.getBookmark();
    if (bookmark === null) return;
    if (start === "primary") isolateFloor = laterBookmark(isolateFloor, bookmark);
    // In place, as the frame sets its own (src/http/middleware.ts): `c.header` on a finished answer copies it whole.
    writableHeaders(c).set(BOOKMARK_HEADER, bookmark);
  };
}
