import { zValidator } from "@hono/zod-validator";
import type { MiddlewareHandler } from "hono";
import type * as z from "zod";
import { documents } from "../openapi/describe";
import { badRequest, type FieldValidation, validationFailed } from "./errors";
import type { AppEnv } from "./types";

/** Turns zod issues into docs/api.md (Conventions) `validations`: one entry per bad field, `field` being its JSON path. */
export function toValidations(error: { issues: readonly z.core.$ZodIssue[] }): FieldValidation[] {
  const seen = new Set<string>();
  const out: FieldValidation[] = [];
  for (const issue of error.issues) {
    const fields =
      issue.code === "unrecognized_keys" ? issue.keys.map((k) => [...issue.path, k].join(".")) : [issue.path.map(String).join(".") || "body"];
    for (const field of fields) {
      if (seen.has(field)) continue;
      seen.add(field);
      out.push({ field, detail: issue.message });
    }
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
    throw badRequest(invalidMessage, { detail: validations.map((v) => `${v.field}: ${v.detail}`).join("; "), validations });
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
