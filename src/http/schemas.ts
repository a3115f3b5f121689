import * as z from "zod";
import { described, named } from "../openapi/registry";

/**
 * The shapes every feature's answers are made of: timestamps, counts and the error body (docs/api.md, "Conventions").
 * Each feature's own request and response schemas live in its folder's `schemas.ts`, beside its routes; the types the
 * code builds its answers with are inferred from them, so a body and its documentation cannot drift apart.
 */

export const timestamp = described("RFC 3339 UTC timestamp with milliseconds.", z.iso.datetime());
export const count = z.number().int().min(0);

const ValidationError = named(
  "ValidationError",
  z.strictObject({ field: described("JSON path of the bad field, e.g. `content.title`.", z.string()), detail: z.string() }),
);

/** docs/api.md (Conventions): every error body, and a few success replies. */
export const ResponseBody = named(
  "Response",
  z.strictObject({
    message: z.string(),
    detail: z.string().optional(),
    validations: z.array(ValidationError).optional(),
  }),
  "Generic message body: every non-2xx body with content has this shape; `detail` and `validations` are omitted when empty.",
);

export type FieldValidation = z.infer<typeof ValidationError>;
export type ErrorBody = z.infer<typeof ResponseBody>;
