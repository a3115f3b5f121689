import { Hono } from "hono";
import { z } from "zod";
import { bodyLimit } from "hono/body-limit";
import { cors } from "hono/cors";
import { secureHeaders } from "hono/secure-headers";
import { getConfig } from "./config/config";
import { passwordResetRoutes } from "./auth/password-reset";
import { authRoutes } from "./auth/routes";
import { authzRoutes } from "./authz/routes";
import { broadcastRoutes } from "./broadcasts/routes";
import { onRevocation } from "./auth/revocation";
import { ApiError, Messages } from "./http/errors";
import { MAX_BODY_BYTES } from "./http/limits";
import { handleError, httpsOnly, loadConfig, methodNotAllowedIn, requestIds, routeNotFound } from "./http/middleware";
import type { AppEnv } from "./http/types";
import { jsonWhateverContentType } from "./http/validate";
import { externalLoginRoutes } from "./external/routes";
import { closeRevokedWatches } from "./inbox/revoke";
import { inboxRoutes } from "./inbox/routes";
import { describeRoute } from "./openapi/describe";
import { OpenApiDocumentSchema } from "./openapi/responses";
import { notificationRoutes } from "./notifications/routes";
import { preferenceRoutes } from "./notifications/preferences";
import { keyRoutes } from "./users/keys";
import { userRoutes } from "./users/routes";
import { staticAsset, webRoutes } from "./web/routes";

/** Every `/api/v2` route, chained so `typeof api` describes the whole interface. */
const api = new Hono<AppEnv>()
  .route("/", authzRoutes)
  .route("/", authRoutes)
  .route("/", passwordResetRoutes)
  .route("/", externalLoginRoutes)
  .route("/", keyRoutes)
  .route("/", inboxRoutes)
  .route("/", notificationRoutes)
  .route("/", broadcastRoutes)
  .route("/", preferenceRoutes)
  .route("/", userRoutes);

// The inbox holds watch sockets that a revoked credential opened: it subscribes, so auth imports no feature.
onRevocation(closeRevokedWatches);

export const app = new Hono<AppEnv>();

app.use(requestIds);
app.use(
  secureHeaders({
    crossOriginResourcePolicy: "same-site",
    // A year, as ASVS 3.4.1 asks (Hono's default is 180 days); browsers ignore it over plain http (local runs).
    strictTransportSecurity: "max-age=31536000; includeSubDomains",
    // JSON and text answers load nothing and may not be framed; the dashboard page (`/`) sets its own policy,
    // which `overwrite: false` leaves in place (docs/security.md, V3.4).
    contentSecurityPolicy: { defaultSrc: ["'none'"], frameAncestors: ["'none'"], baseUri: ["'none'"] },
    overwrite: false,
  }),
);
app.use("/api/*", async (c, next) => {
  await next();
  // Authenticated answers must not be cached by browsers or shared caches.
  c.header("Cache-Control", "no-store");
});
app.use(loadConfig);
app.use(httpsOnly);
app.use(methodNotAllowedIn(app));
app.use(
  "/api/*",
  cors({
    // Only the listed origins (CORS_ALLOWED_ORIGINS, docs/configuration.md) may call from a browser; credentials allowed for them.
    origin: (origin, c) => (getConfig(c.env).CORS_ALLOWED_ORIGINS.includes(origin) ? origin : null),
    credentials: true,
    allowHeaders: ["Content-Type", "Service-Session-Token", "Authorization"],
    allowMethods: ["GET", "POST", "PUT", "PATCH", "DELETE"],
    exposeHeaders: ["X-Request-Id", "Retry-After"],
    maxAge: 600,
  }),
);
app.use(
  "/api/*",
  bodyLimit({
    maxSize: MAX_BODY_BYTES,
    onError: () => {
      throw new ApiError(413, Messages.tooLarge, { detail: Messages.tooLargeDetail(MAX_BODY_BYTES) });
    },
  }),
);
app.use("/api/*", jsonWhateverContentType);

app.get(
  "/healthz",
  describeRoute({
    operationId: "healthCheck",
    summary: "Liveness check",
    tags: ["Meta"],
    responses: [{ status: 200, description: "The Worker is up.", schema: z.literal("OK"), contentType: "text/plain" }],
  }),
  (c) => c.text("OK"),
);
app.route("/", webRoutes);
app.get(
  "/api/v2/openapi.json",
  describeRoute({
    operationId: "getOpenApiDocument",
    summary: "This OpenAPI 3.1 document",
    description: 'Generated from the routes themselves (docs/api.md, "The OpenAPI document").',
    tags: ["Meta"],
    responses: [{ status: 200, description: "The document.", schema: OpenApiDocumentSchema }],
  }),
  // Loaded on first use: building the document needs zod's JSON Schema conversion, which no other route does.
  async (c) => (await import("./openapi/routes")).serveOpenApi(c, app.routes),
);
app.route("/api/v2", api);

app.onError(handleError);
// The dashboard's hashed files are the only other things served (from Static Assets); anything else is the JSON 404.
app.notFound(async (c) => (await staticAsset(c)) ?? routeNotFound(c));

export type HeraldApi = typeof api;
