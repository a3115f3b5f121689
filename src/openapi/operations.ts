import { z } from "zod";
import { authOperations } from "./ops-auth";
import { notificationOperations } from "./ops-notifications";
import { userOperations } from "./ops-users";
import { OpenApiDocumentSchema } from "./responses";
import type { Operation } from "./table";

export type { Operation } from "./table";

/** Routes outside the feature groups: the landing page, health and this document. */
const metaOperations: Operation[] = [
  {
    method: "get",
    path: "/",
    operationId: "landingPage",
    summary: "The page a browser sees: who is signed in, or how to sign in",
    description: "Where a browser sign-in lands by default. Reads the session like any endpoint (cookie, header or bearer); without a valid one it shows how to sign in, never an error.",
    tags: ["Meta"],
    auth: "public",
    responses: [{ status: 200, description: "An HTML page, without script.", schema: z.string(), contentType: "text/html" }],
    errors: {},
  },
  {
    method: "get",
    path: "/healthz",
    operationId: "healthCheck",
    summary: "Liveness check",
    tags: ["Meta"],
    auth: "public",
    responses: [{ status: 200, description: "The Worker is up.", schema: z.literal("OK"), contentType: "text/plain" }],
    errors: {},
  },
  {
    method: "get",
    path: "/api/v2/openapi.json",
    operationId: "getOpenApiDocument",
    summary: "This OpenAPI 3.1 document",
    description: "Generated from the zod schemas that validate the requests.",
    tags: ["Meta"],
    auth: "public",
    responses: [{ status: 200, description: "The document.", schema: OpenApiDocumentSchema }],
    errors: {},
  },
];

/**
 * One entry per route the app serves (test/openapi.test.ts checks this against `app.routes` both ways). Request
 * bodies and queries are the very zod objects the routes pass to `jsonBody(...)` / `queryParams(...)`.
 */
export const OPERATIONS: readonly Operation[] = [
  ...metaOperations,
  ...authOperations,
  ...userOperations,
  ...notificationOperations,
];
