import type { Context } from "hono";
import type { RouterRoute } from "hono/types";
import type { AppEnv } from "../http/types";
import { buildOpenApiDocument } from "./document";

let served: { serverUrl: string; body: string } | undefined;

/** `GET /api/v2/openapi.json` (public): the document of `routes`, built and serialized once per isolate. */
export function serveOpenApi(c: Context<AppEnv>, routes: readonly RouterRoute[]): Response {
  const serverUrl = new URL(c.get("config").ACCESS_URL).origin;
  if (served?.serverUrl !== serverUrl) served = { serverUrl, body: JSON.stringify(buildOpenApiDocument(routes, { serverUrl })) };
  return c.body(served.body, 200, { "Content-Type": "application/json" });
}
