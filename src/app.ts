import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import type { H, RouterRoute } from "hono/types";
import * as z from "zod";
import { auditRoutes } from "./audit/routes";
import { mfaRoutes } from "./auth/mfa/routes";
import { passwordResetRoutes } from "./auth/password-reset";
import { onRevocation } from "./auth/revocation";
import { authRoutes } from "./auth/routes";
import { authzRoutes } from "./authz/routes";
import { broadcastRoutes } from "./broadcasts/routes";
import { channelRoutes } from "./channels/routes";
import { d1Bookmarks } from "./db/session";
import { externalLoginRoutes } from "./external/routes";
import { apiCors } from "./http/cors";
import { ApiError, Messages } from "./http/errors";
import { MAX_BODY_BYTES } from "./http/limits";
import { handleError, methodNotAllowedIn, requestFrame, routeNotFound } from "./http/middleware";
import { MemoRouter } from "./http/router";
import type { AppEnv } from "./http/types";
import { jsonWhateverContentType } from "./http/validate";
import { closeRevokedWatches } from "./inbox/revoke";
import { inboxRoutes } from "./inbox/routes";
import { preferenceRoutes } from "./notifications/preferences";
import { notificationRoutes } from "./notifications/routes";
import { describeRoute } from "./openapi/describe";
import { OpenApiDocumentSchema } from "./openapi/schemas";
import { passkeyRoutes } from "./passkeys/routes";
import { privacyRoutes } from "./privacy/routes";
import { pushRoutes } from "./push/routes";
import { scheduleRoutes } from "./schedule/routes";
import { securityRoutes } from "./security/routes";
import { targetRoutes } from "./targets/routes";
import { keyRoutes } from "./users/keys";
import { reserveUsernames } from "./users/reserved";
import { userRoutes } from "./users/routes";
import { staticAsset, webRoutes } from "./web/routes";

/** Every `/api/v2` route, chained so `typeof api` describes the whole interface. */
const api = new Hono<AppEnv>()
  .route("/", authzRoutes)
  .route("/", authRoutes)
  .route("/", mfaRoutes)
  .route("/", passwordResetRoutes)
  .route("/", securityRoutes)
  .route("/", passkeyRoutes)
  .route("/", externalLoginRoutes)
  .route("/", keyRoutes)
  .route("/", inboxRoutes)
  .route("/", notificationRoutes)
  .route("/", broadcastRoutes)
  .route("/", preferenceRoutes)
  .route("/", pushRoutes)
  .route("/", scheduleRoutes)
  .route("/", channelRoutes)
  .route("/", targetRoutes)
  .route("/", auditRoutes)
  .route("/", privacyRoutes)
  .route("/", userRoutes);

// The inbox holds watch sockets that a revoked credential opened: it subscribes, so auth imports no feature.
onRevocation(closeRevokedWatches);

const router = new MemoRouter<[H, RouterRoute]>();
export const app = new Hono<AppEnv>({ router });

/** Where the CORS middleware answers OPTIONS (the preflight), before any route. */
const PREFLIGHT_PREFIX = "/api/";

// Request id, configuration, the headers of every answer, https only (src/http/middleware.ts).
app.use(requestFrame);
app.use(methodNotAllowedIn(router, (path) => path.startsWith(PREFLIGHT_PREFIX)));
app.use(`${PREFLIGHT_PREFIX}*`, apiCors);
// Each request's D1 session and the Herald-D1-Bookmark header of its answer (docs/consistency.md).
app.use("/api/*", d1Bookmarks(app));
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
// The route table is complete: the literal segments beside `{user}` are now known (docs/api.md, Conventions).
reserveUsernames(app.routes);

app.onError(handleError);
// The dashboard's hashed files are the only other things served (from Static Assets); anything else is the JSON 404.
app.notFound(async (c) => (await staticAsset(c)) ?? routeNotFound(c));

export type HeraldApi = typeof api;
