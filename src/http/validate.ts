import { zValidator } from "@hono/zod-validator";
import type { MiddlewareHandler } from "hono";
import type * as z from "zod";
import { documents } from "../openapi/describe";
import { badRequest, ErrorBodyLimits, type FieldValidation, validationFailed } from "./errors";
import type { AppEnv } from "./types";

/** How many unknown keys one validation quotes, and how much of each (docs/api.md, "Unknown keys and long validation lists"). */
const UNKNOWN_KEYS_SHOWN = 5;
const UNKNOWN_KEY_CHARS = 40;

/**
 * The one validation for all the unknown keys of an object (docs/api.md, "Unknown keys and long validation lists"): named by the first of them,
 * quoting at most five and counting the rest. zod's own message lists every key, and it used to be repeated in one
 * entry per key, which made the answer grow with the square of the key count.
 */
function unknownKeys(path: readonly PropertyKey[], keys: readonly string[]): FieldValidation {
  const quoted = keys
    .slice(0, UNKNOWN_KEYS_SHOWN)
    .map((key) => JSON.stringify(key.length > UNKNOWN_KEY_CHARS ? `${key.slice(0, UNKNOWN_KEY_CHARS)}…` : key))
    .join(", ");
  const more = keys.length > UNKNOWN_KEYS_SHOWN ? ` and ${keys.length - UNKNOWN_KEYS_SHOWN} more` : "";
  const first = keys[0] ?? "";
  const field = [...path.map(String), first.length > UNKNOWN_KEY_CHARS ? `${first.slice(0, UNKNOWN_KEY_CHARS)}…` : first].join(".");
  return { field, detail: `Unrecognized key${keys.length > 1 ? "s" : ""}: ${quoted}${more}` };
}

/**
 * Turns zod issues into docs/api.md (Conventions) `validations`: one entry per bad field, `field` being its JSON path,
 * and one for all the unknown keys of an object. Linear in the issues; `ApiError.body` bounds what is answered.
 */
export function toValidations(error: { issues: readonly z.core.$ZodIssue[] }): FieldValidation[] {
  const seen = new Set<string>();
  const out: FieldValidation[] = [];
  for (const issue of error.issues) {
    const validation =
      issue.code === "unrecognized_keys"
        ? unknownKeys(issue.path, issue.keys)
        : { field: issue.path.map(String).join(".") || "body", detail: issue.message };
    if (seen.has(validation.field)) continue;
    seen.add(validation.field);
    out.push(validation);
  }
  return out;
}

/**
 * Bodies are JSON whatever their `Content-Type` (`curl -d` sends form encoding by default). `@hono/zod-validator`
 * reads a JSON body only from a request that says it is JSON, so this one step in front of every `/api/*` route
 * says so for any request with a body. A body that is not JSON then fails in the validator's parse, which the error
 * handler answers with the error shape's (docs/api.md, Conventions) 400 "Request body must be valid JSON." (docs/api.md, Decisions).
 */
export const jsonWhateverContentType: MiddlewareHandler<AppEnv> = async (c, next) => {
  const type = c.req.header("Content-Type");
  if (c.req.raw.body !== null && (type === undefined || !JSON_MEDIA_TYPE.test(type.split(";")[0]?.trim() ?? ""))) {
    const headers = new Headers(c.req.raw.headers);
    headers.set("Content-Type", "application/json");
    c.req.raw = new Request(c.req.raw, { headers });
  }
  await next();
};

const JSON_MEDIA_TYPE = /^application\/([\w.-]+\+)?json$/i;

/** Every validator's failure, in Herald's 400 shape; some endpoints name their own message (`POST /notifications/custom`: "Invalid request body"). */
function refuse(invalidMessage?: string) {
  return (result: { success: boolean; error?: { issues: readonly z.core.$ZodIssue[] } }): void => {
    if (result.success || !result.error) return;
    const validations = toValidations(result.error);
    if (!invalidMessage) throw validationFailed(validations);
    // The detail repeats what the body lists, so it is made of the validations the body keeps (ApiError.body).
    const listed = validations.slice(0, ErrorBodyLimits.validations);
    throw badRequest(invalidMessage, { detail: listed.map((v) => `${v.field}: ${v.detail}`).join("; "), validations });
  };
}

/** Validates the JSON body against its zod schema, the single source of the request's shape. */
export function jsonBody<T extends z.ZodType>(schema: T, options: { invalidMessage?: string } = {}) {
  return documents(zValidator("json", schema, refuse(options.invalidMessage)), { target: "json", schema, ...options });
}

/** Validates query parameters; repeated parameters arrive as arrays, single ones as strings. */
export function queryParams<T extends z.ZodType>(schema: T) {
  return documents(zValidator("query", schema, refuse()), { target: "query", schema });
}

/** Validates path parameters (e.g. an id that must be a UUID) before any lookup happens. */
export function pathParams<T extends z.ZodType>(schema: T) {
  return documents(zValidator("param", schema, refuse()), { target: "param", schema });
}

/**
 * Validates request headers the route reads (e.g. `Idempotency-Key`). Header names arrive in lower case; the schema
 * names them so, and the OpenAPI document lists them as header parameters.
 */
export function headerParams<T extends z.ZodType>(schema: T) {
  return documents(zValidator("header", schema, refuse()), { target: "header", schema });
}
