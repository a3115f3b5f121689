import type { MiddlewareHandler } from "hono";
import type { z } from "zod";
import { badRequest, Messages, validationFailed, type FieldValidation } from "./errors";
import type { AppEnv } from "./types";

/** Turns zod issues into SPEC §1 `validations`: one entry per bad field, `field` being its JSON path. */
export function toValidations(error: z.ZodError): FieldValidation[] {
  const seen = new Set<string>();
  const out: FieldValidation[] = [];
  for (const issue of error.issues) {
    const fields =
      issue.code === "unrecognized_keys"
        ? issue.keys.map((k) => [...issue.path, k].join("."))
        : [issue.path.map(String).join(".") || "body"];
    for (const field of fields) {
      if (seen.has(field)) continue;
      seen.add(field);
      out.push({ field, detail: issue.message });
    }
  }
  return out;
}

/**
 * Validates a JSON body against a zod schema (the single source of the request's shape). Unlike Hono's own json
 * validator it does not depend on the Content-Type header — `curl -d` sends form encoding by default — so any
 * body that is not JSON is answered with SPEC §1's 400 "Request body must be valid JSON.".
 */
export function jsonBody<T extends z.ZodType>(
  schema: T,
  options: { invalidMessage?: string } = {},
): MiddlewareHandler<AppEnv, string, { in: { json: z.input<T> }; out: { json: z.output<T> } }> {
  return async (c, next) => {
    const text = await c.req.text();
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      throw badRequest(Messages.badJson);
    }
    c.req.addValidatedData("json", validateOrThrow(schema, raw, options.invalidMessage) as object);
    await next();
  };
}

/** Some endpoints name their own 400 message (N1: "Invalid request body"); the detail then lists the fields. */
function validateOrThrow<T extends z.ZodType>(schema: T, raw: unknown, invalidMessage?: string): z.output<T> {
  const result = schema.safeParse(raw);
  if (result.success) return result.data;
  const validations = toValidations(result.error);
  if (!invalidMessage) throw validationFailed(validations);
  throw badRequest(invalidMessage, { detail: validations.map((v) => `${v.field}: ${v.detail}`).join("; "), validations });
}

/** Validates query parameters; repeated parameters arrive as arrays, single ones as strings. */
export function queryParams<T extends z.ZodType>(
  schema: T,
): MiddlewareHandler<AppEnv, string, { in: { query: Record<string, string> }; out: { query: z.output<T> } }> {
  return async (c, next) => {
    const raw = Object.fromEntries(
      Object.entries(c.req.queries()).map(([k, v]) => [k, v.length === 1 ? v[0] : v] as const),
    );
    c.req.addValidatedData("query", validateOrThrow(schema, raw) as object);
    await next();
  };
}

/** Validates path parameters (e.g. an id that must be a UUID) before any lookup happens. */
export function pathParams<T extends z.ZodType>(
  schema: T,
): MiddlewareHandler<AppEnv, string, { in: { param: Record<string, string> }; out: { param: z.output<T> } }> {
  return async (c, next) => {
    c.req.addValidatedData("param", validateOrThrow(schema, c.req.param()) as object);
    await next();
  };
}
