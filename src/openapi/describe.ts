import type { MiddlewareHandler } from "hono";
import type * as z from "zod";
import { AuthMessages } from "../auth/messages";
import type { RESOURCE_ACTIONS, ResourceType } from "../authz/catalog";
import { Messages } from "../http/errors";
import type { AppEnv } from "../http/types";
import type { HeaderObject } from "./types";

/**
 * Route-attached documentation (docs/api.md, "The OpenAPI document"). Each route carries its own `describeRoute(...)`
 * next to its validators and its auth; `buildOpenApiDocument` walks `app.routes` and reads, for every method and
 * path, this description, the schemas its validators check (`documents(...)` below) and whether `requireAuth` guards
 * it. Nothing about a route is written twice.
 */

type Tag =
  | "Meta"
  | "Authorization"
  | "Sign-in"
  | "Passkeys"
  | "External sign-in"
  | "Users"
  | "API keys"
  | "Inbox"
  | "Notifications"
  | "Notification preferences"
  | "Notification targets"
  | "Web Push"
  | "Broadcasts"
  | "Audit";

type SuccessStatus = 101 | 200 | 201 | 202 | 204 | 302 | 304;
export type ErrorStatus = 400 | 401 | 403 | 404 | 409 | 413 | 429 | 500 | 502 | 503;
/** Documented error statuses of a route, each with the conditions that produce it. */
export type Errors = Partial<Record<ErrorStatus, string>>;

export interface SuccessResponse {
  status: SuccessStatus;
  description: string;
  /** The body's schema; omitted when the response has no body. */
  schema?: z.ZodType;
  /** Defaults to application/json. */
  contentType?: "application/json" | "text/plain" | "text/html" | "text/javascript";
  headers?: Record<string, HeaderObject>;
}

/**
 * Who may call an authenticated route, for the generated permission matrix (test/endpoints/matrix.test.ts):
 * - `anyone`: every signed-in user, on its own resources (a member included);
 * - `reader`: site-wide readers of the resource (owner, user-admin, auditor);
 * - `user-admin`: owners and user-admins;
 * - `config-reader`: those who may read the deployment's configuration (owners and auditors);
 * - `audit-reader`: those who may read the site-wide audit log (owners and auditors);
 * - `owner`: owners only.
 * Public routes (no `requireAuth`) need none.
 */
type Access = "anyone" | "reader" | "user-admin" | "config-reader" | "audit-reader" | "owner";

/** A scope an API token may carry that names one action on one resource type (docs/authorization.md, "API token scopes"). */
type ScopeName = { [T in ResourceType]: `${T}:${(typeof RESOURCE_ACTIONS)[T][number]}` }[ResourceType];

export interface RouteDoc {
  operationId: string;
  summary: string;
  description?: string;
  tags: readonly [Tag, ...Tag[]];
  access?: Access;
  /**
   * The scope an API token needs for this route: the one its first check asks for (on a `{user}` route, when the
   * caller acts on themself), or `"none"` for a route that answers about the caller whatever the token's scopes.
   * Every authenticated route declares one; test/endpoints/scopes.test.ts proves it is the scope the route checks,
   * and docs/endpoints.md lists it.
   */
  scope?: ScopeName | "none";
  /** Path parameters the route resolves itself (e.g. `{user}`); a `pathParams(...)` validator documents its own. */
  pathParams?: z.ZodType;
  /** A query the route reads by hand (browser redirects); a `queryParams(...)` validator documents its own. */
  query?: z.ZodType;
  /** Descriptions of path and query parameters, by name. */
  paramDocs?: Readonly<Record<string, string>>;
  responses: readonly [SuccessResponse, ...SuccessResponse[]];
  /**
   * The route's own error conditions. Those its middleware implies are added by the generator: 400 for a
   * validator, 401 (and, for writes, the cookie-Origin 403) for `requireAuth`, 403 for `refuseCrossSite`, 413 for
   * any request with a body, 500 everywhere.
   */
  errors?: Errors;
  /**
   * One route whose last segment is an alternation (`:status{suspend|activate}`) is documented as one operation
   * per alternative, each with its own id and summary.
   */
  alternatives?: Readonly<Record<string, { operationId: string; summary: string }>>;
}

export const ROUTE_DOC: unique symbol = Symbol("herald.route-doc");
export const VALIDATES: unique symbol = Symbol("herald.validates");

export type Documented = MiddlewareHandler<AppEnv> & { [ROUTE_DOC]: RouteDoc };

/** Where a validator reads from, and with which schema. */
export interface ValidatorDoc {
  target: "json" | "query" | "param" | "header";
  schema: z.ZodType;
  /** The message of this validator's 400 when it is not the usual `Validation failed.`. */
  invalidMessage?: string;
}

/** The description of a route: a middleware that only passes the request on, found by the generator. */
export function describeRoute(doc: RouteDoc): Documented {
  const passOn: MiddlewareHandler<AppEnv> = (_c, next) => next();
  return Object.assign(passOn, { [ROUTE_DOC]: doc });
}

/** Marks a validator middleware with what it validates, so the document shows the very schema the route checks. */
export function documents<M extends MiddlewareHandler>(middleware: M, validates: ValidatorDoc): M & { [VALIDATES]: ValidatorDoc } {
  return Object.assign(middleware, { [VALIDATES]: validates });
}

/** Merges error maps; two descriptions of one status are joined (each is a sentence). */
export function errors(...parts: Errors[]): Errors {
  const out: Errors = {};
  for (const part of parts) {
    for (const [key, text] of Object.entries(part)) {
      const status = Number(key) as ErrorStatus;
      const before = out[status];
      out[status] = before ? `${before} ${text}` : text;
    }
  }
  return out;
}

export const RATE: Errors = {
  429: `Rate limited (per client IP, and per account where an e-mail is known): \`${Messages.rateLimited("N", "D")}\` with \`Retry-After\`.`,
};

/** Every route that checks a new password against the policy (docs/security.md, "Password policy"). */
export const PASSWORD_CHECK_UNAVAILABLE: Errors = {
  503: `\`${AuthMessages.passwordCheckUnavailable}\` The list of common passwords could not be read, so no password could be checked; nothing was changed.`,
};

export const USER_404: Errors = {
  404: `\`{user}\` does not exist or the caller may not read it: \`${Messages.notFoundOrNoAccess}\`.`,
};

export const NO_BODY = "No body.";

/** The 403 of a permission check on the target of a route. */
export const noPermission = (what: string): Errors => ({ 403: `The caller may not ${what} (\`${Messages.forbidden}\`).` });

export const SET_SESSION_COOKIE: Record<string, HeaderObject> = {
  "Set-Cookie": {
    description: "`service_session_token` (`__Host-service_session_token` on https): HttpOnly, SameSite=Lax, Path=/, Secure on https.",
    schema: { type: "string" },
  },
};

export const LOCATION: Record<string, HeaderObject> = {
  Location: { description: "Where the browser goes next.", required: true, schema: { type: "string" } },
};
