import type { Context } from "hono";
import type { AppEnv } from "../http/types";
import { openApiDocument } from "./document";

let serialized: string | undefined;

/** `GET /api/v2/openapi.json` (public): the document, built and serialized once per isolate. */
export function serveOpenApi(c: Context<AppEnv>): Response {
  serialized ??= JSON.stringify(openApiDocument());
  return c.body(serialized, 200, { "Content-Type": "application/json" });
}
