import { z } from "zod";
import { described } from "./registry";
import type { HeaderObject, HttpMethod } from "./types";

/** The shape of one row of the operation table (src/openapi/operations.ts) and the pieces rows share. */

export type Tag =
  | "Meta"
  | "Authorization"
  | "Sign-in"
  | "External sign-in"
  | "Users"
  | "API keys"
  | "Inbox"
  | "Notifications"
  | "Notification preferences";

/** `public`: no credential. `session`: a session token or API key, by any of the three schemes of SPEC §2. */
export type Auth = "public" | "session";

export type SuccessStatus = 101 | 200 | 201 | 204 | 302 | 304;
export type ErrorStatus = 400 | 401 | 403 | 404 | 409 | 413 | 429 | 500 | 502;
/** Every documented error status of a route, each with the conditions that produce it. */
export type Errors = Partial<Record<ErrorStatus, string>>;

export interface SuccessResponse {
  status: SuccessStatus;
  description: string;
  /** The body's schema; omitted when the response has no body. */
  schema?: z.ZodType;
  /** Defaults to application/json. */
  contentType?: "application/json" | "text/plain" | "text/html";
  headers?: Record<string, HeaderObject>;
}

export interface Operation {
  method: HttpMethod;
  /** OpenAPI form, whole path: `/api/v2/users/{user}`. */
  path: `/${string}`;
  operationId: string;
  summary: string;
  description?: string;
  tags: readonly [Tag, ...Tag[]];
  auth: Auth;
  /** A zod object whose keys are exactly the `{params}` of `path`. */
  pathParams?: z.ZodType;
  /** The schema the route passes to `queryParams(...)` (or a documentation-only one where the route reads raw). */
  query?: z.ZodType;
  /** The schema the route passes to `jsonBody(...)`. */
  body?: z.ZodType;
  /** Descriptions of path and query parameters, by name. */
  paramDocs?: Readonly<Record<string, string>>;
  responses: readonly [SuccessResponse, ...SuccessResponse[]];
  errors: Errors;
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

export const AUTH: Errors = {
  401: "No valid credential (missing, malformed, unknown, wrong secret, expired, or the user is suspended): `You are signed out or your session has expired. Please sign in again to continue.` with a `detail` saying which.",
};
/** State-changing authenticated routes: a cookie-authenticated call must come from an allowed Origin. */
export const AUTH_WRITE: Errors = {
  ...AUTH,
  403: "Authenticated by cookie but without an allowed `Origin`.",
};
export const BODY: Errors = {
  400: "The body is not JSON (`Request body must be valid JSON.`) or fails validation (`Validation failed.` with one `validations` entry per bad field).",
  413: "The body is larger than 1 MiB.",
};
export const QUERY: Errors = {
  400: "A query parameter is invalid or unknown (`Validation failed.` with `validations`).",
};
export const USER_404: Errors = {
  404: "`{user}` does not exist or the caller may not read it: `Resource not found or you do not have access to this resource`.",
};
export const RATE: Errors = {
  429: "Rate limited (per client IP, and per account where an e-mail is known): `You've been rate limited for sending more than N requests in D.` with `Retry-After`.",
};

export const JSON_NO_BODY = "No body.";

export const SET_SESSION_COOKIE: Record<string, HeaderObject> = {
  "Set-Cookie": {
    description:
      "`service_session_token` (`__Host-service_session_token` on https): HttpOnly, SameSite=Lax, Path=/, Secure on https.",
    schema: { type: "string" },
  },
};

export const LOCATION: Record<string, HeaderObject> = {
  Location: { description: "Where the browser goes next.", required: true, schema: { type: "string" } },
};

const userParam = described("A user ID (UUID), a username (case-insensitive), or `me` (the caller).", z.string());

/** `{user}` (documentation only: routes resolve it with `resolveUser`, not with a zod schema). */
export const userPath = z.object({ user: userParam });

/** `{user}` and an API key `{id}` (documentation only). */
export const userKeyPath = z.object({
  user: userParam,
  id: described("The API key id: the public 10-character half of the token.", z.string()),
});
