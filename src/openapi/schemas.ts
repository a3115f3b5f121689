import * as z from "zod";

/** `GET /api/v2/openapi.json` itself: only the top-level fields are described. */
export const OpenApiDocumentSchema = z.looseObject({
  openapi: z.string(),
  info: z.looseObject({ title: z.string(), version: z.string() }),
  paths: z.record(z.string(), z.unknown()),
});
