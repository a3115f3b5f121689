import type { ContentfulStatusCode } from "hono/utils/http-status";

import type { ErrorBody, FieldValidation } from "./schemas";

/** The error body every non-2xx response carries (docs/api.md, Conventions), and one entry of its `validations`. */
export type { ErrorBody, FieldValidation };

/**
 * The cross-cutting messages (and their details): conventions every route shares. Clients compare these strings
 * (they follow Coder's wording), so they are written once here and imported by the code that throws them, the route
 * descriptions that quote them and the tests; docs/api.md (Conventions) describes the error shape they go in. Each
 * feature's own messages are in its folder's `messages.ts`.
 */
export const Messages = {
  badJson: "Request body must be valid JSON.",
  validation: "Validation failed.",
  signedOut: "You are signed out or your session has expired. Please sign in again to continue.",
  notFoundOrNoAccess: "Resource not found or you do not have access to this resource",
  forbidden: "Forbidden.",
  routeNotFound: "Route not found.",
  methodNotAllowed: "Method not allowed.",
  tooLarge: "Request body is too large.",
  tooLargeDetail: (maxBytes: number) => `The limit is ${maxBytes} bytes.`,
  httpsOnly: "This server answers over https only.",
  httpsOnlyDetail: (origin: string) => `Use ${origin}.`,
  internal: "An internal server error occurred.",
  /** The `detail` of a 500: the request id to quote when reporting it. */
  requestId: (id: string) => `Request ID: ${id}`,
  /** `period` as Coder writes a duration (`1m0s`, `30s`); the route descriptions pass placeholders. */
  rateLimited: (limit: number | string, period: string) => `You've been rate limited for sending more than ${limit} requests in ${period}.`,
} as const;

/** What the security log calls a refusal (docs/security.md, Logging); 401, 403 and 429 are named by their status. */
export type SecurityEvent = "authentication_failed" | "access_denied" | "rate_limited";

/**
 * An error that becomes an HTTP response in exactly one place, the app's error handler. Handlers and plain
 * functions throw it instead of building responses, so every non-2xx body has the same shape.
 */
export class ApiError extends Error {
  override name = "ApiError";
  readonly status: ContentfulStatusCode;
  readonly detail: string | undefined;
  readonly validations: FieldValidation[] | undefined;
  readonly headers: Record<string, string>;
  /** Set where a 400 is a failed credential check (a wrong passcode or old password), so it is logged like a 401. */
  readonly event: SecurityEvent | undefined;

  constructor(
    status: ContentfulStatusCode,
    message: string,
    options: { detail?: string; validations?: FieldValidation[]; headers?: Record<string, string>; event?: SecurityEvent } = {},
  ) {
    super(message);
    this.status = status;
    this.detail = options.detail;
    this.validations = options.validations;
    this.headers = options.headers ?? {};
    this.event = options.event;
  }

  /**
   * The body, within its bounds (docs/api.md, "Unknown keys and long validation lists"): at most ten validations, every string cut to its
   * limit, so no error body is larger than 8 KiB whatever was thrown (a flood of bad keys or values included).
   */
  body(): ErrorBody {
    const body: ErrorBody = { message: clip(this.message, ErrorBodyLimits.message) };
    const all = this.validations ?? [];
    const kept = all.slice(0, ErrorBodyLimits.validations);
    const left = all.length - kept.length;
    const note = left > 0 ? `${kept.length} of ${all.length} validations are listed.` : "";
    const detail = [this.detail ? clip(this.detail, ErrorBodyLimits.detail - (note ? note.length + 1 : 0)) : "", note].filter(Boolean).join(" ");
    if (detail) body.detail = detail;
    if (kept.length > 0) {
      body.validations = kept.map((v) => ({ field: clip(v.field, ErrorBodyLimits.field), detail: clip(v.detail, ErrorBodyLimits.validationDetail) }));
    }
    return body;
  }
}

export const badRequest = (message: string, options?: { detail?: string; validations?: FieldValidation[]; event?: SecurityEvent }) =>
  new ApiError(400, message, options);

export const validationFailed = (validations: FieldValidation[]) => new ApiError(400, Messages.validation, { validations });

export const unauthorized = (detail: string) => new ApiError(401, Messages.signedOut, { detail });

export const forbidden = (message: string = Messages.forbidden, detail?: string) => new ApiError(403, message, detail ? { detail } : {});

export const notFound = () => new ApiError(404, Messages.notFoundOrNoAccess);

export const conflict = (message: string, detail?: string) => new ApiError(409, message, detail ? { detail } : {});

/** 429 with the message of docs/api.md (Conventions) and a `Retry-After` in seconds. */
export function rateLimited(limit: number, periodSeconds: number, retryAfterSeconds = periodSeconds): ApiError {
  const period =
    periodSeconds % 3600 === 0 ? `${periodSeconds / 3600}h0m0s` : periodSeconds % 60 === 0 ? `${periodSeconds / 60}m0s` : `${periodSeconds}s`;
  return new ApiError(429, Messages.rateLimited(limit, period), {
    headers: { "Retry-After": String(Math.max(1, Math.ceil(retryAfterSeconds))) },
  });
}

/**
 * The bounds of every error body (docs/api.md, "Unknown keys and long validation lists"), in bytes of the
 * JSON answer. With at most ten validations the sum stays under 8 KiB: 512 + 1,024 + 10 × (200 + 400 + 25 of
 * punctuation) + 40 of the body's own punctuation = 7,826 bytes.
 */
export const ErrorBodyLimits = {
  message: 512,
  detail: 1024,
  validations: 10,
  field: 200,
  validationDetail: 400,
  bodyBytes: 8 * 1024,
} as const;

/** Bytes `cp` takes in a JSON string, UTF-8 encoded: `\uXXXX` for controls, two for `"` and `\`. */
function jsonBytes(cp: number): number {
  if (cp < 0x20) return 6;
  if (cp === 0x22 || cp === 0x5c) return 2;
  if (cp < 0x80) return 1;
  if (cp < 0x800) return 2;
  // A lone surrogate is written as a `\uXXXX` escape.
  if (cp >= 0xd800 && cp <= 0xdfff) return 6;
  return cp < 0x10000 ? 3 : 4;
}

const ELLIPSIS = "…";
const ELLIPSIS_BYTES = 3;

/**
 * `text` as it is, when its JSON form fits in `maxBytes`; else its longest prefix of whole code points that fits
 * with a trailing "…". Stops reading at the cut, so the cost is bounded by `maxBytes`, not by the text.
 */
function clip(text: string, maxBytes: number): string {
  let bytes = 0;
  let cut = -1;
  for (let i = 0; i < text.length; ) {
    const cp = text.codePointAt(i) ?? 0;
    const size = jsonBytes(cp);
    if (cut === -1 && bytes + size > maxBytes - ELLIPSIS_BYTES) cut = i;
    bytes += size;
    if (bytes > maxBytes) return `${text.slice(0, cut)}${ELLIPSIS}`;
    i += cp > 0xffff ? 2 : 1;
  }
  return text;
}
