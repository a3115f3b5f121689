import type { RouterRoute } from "hono/types";
import * as z from "zod";
import { MfaMessages } from "../auth/mfa/messages";
import { refuseCrossSite, requireAuth, requireAuthToEnrol } from "../auth/session";
import { requireRecentAuth } from "../auth/step-up";
import { BOOKMARK_HEADER, BOOKMARK_PATTERN } from "../db/bookmark";
import { Messages } from "../http/errors";
import { MAX_BODY_BYTES } from "../http/limits";
import { type ErrorStatus, type Errors, errors, ROUTE_DOC, type RouteDoc, type SuccessResponse, VALIDATES, type ValidatorDoc } from "./describe";
import { components, namedSchemas } from "./registry";
import type {
  HttpMethod,
  JsonSchema,
  OpenApiDocument,
  OperationObject,
  ParameterObject,
  PathItem,
  Reference,
  ResponseObject,
  SecurityRequirement,
} from "./types";

/** How every zod schema becomes JSON Schema; the test converts `loginBody` with the same options. */
const JSON_SCHEMA_OPTIONS = { target: "draft-2020-12", io: "input", unrepresentable: "any" } as const;

const SCHEMA_REF = "#/components/schemas/";
const ERROR_SCHEMA: JsonSchema = { $ref: `${SCHEMA_REF}Response` };
const BOOKMARK_REF: Reference = { $ref: `#/components/headers/${BOOKMARK_HEADER}` };
const SESSION: SecurityRequirement[] = [{ SessionToken: [] }, { BearerToken: [] }, { SessionCookie: [] }];

const DESCRIPTION = `Sign-in, authorization and notifications. All bodies are JSON.

**How this document is made.** It is generated from the routes: each route carries its own description, the request schemas are the very zod schemas its validators check, and whether it needs a credential is read from its middleware. Response schemas are the zod schemas each feature keeps beside its routes, which the code's answer types are inferred from; the test suite checks every response it receives against them (docs/api.md, "The OpenAPI document").

**Errors.** Every non-2xx response with a body is a \`Response\`: \`{"message", "detail"?, "validations"?: [{"field", "detail"}]}\`. Any route may answer 500 \`${Messages.internal}\` (the \`detail\` carries a request id), and a body above 1 MiB answers 413.

**Methods.** \`HEAD\` is answered wherever \`GET\` is, with the same status and headers and no body. Under \`/api\`, \`OPTIONS\` answers a CORS preflight (204). Under \`/api/v2\`, an unknown path answers 404 \`${Messages.routeNotFound}\`, and a known path asked with a method it does not serve answers **405** \`${Messages.methodNotAllowed}\` with an \`Allow\` header listing exactly the methods it does serve (\`HEAD\` wherever \`GET\` is, \`OPTIONS\` under \`/api\`). A literal path segment wins over a parameter whatever the method: \`GET /api/v2/users/login\` is a 405, never the user named \`login\`. A path with a trailing slash is another path (404).

**Authentication.** A session token or API key (\`<10-char id>-<22-char secret>\`) in the \`Service-Session-Token\` header, else \`Authorization: Bearer\`, else the \`service_session_token\` cookie (\`__Host-\` prefixed on https). A cookie-authenticated request that changes state must come from an allowed \`Origin\` (403 otherwise).

**Consistency.** Reads may be served by a nearby read replica of the database. An answer under \`/api\` that read or wrote the database carries its position there in the \`${BOOKMARK_HEADER}\` header; a request that sends the latest one it received back in that same header reads at least what that answer had seen (read-your-writes). A malformed bookmark is ignored. Which route reads where: docs/consistency.md.

**Transport.** When the deployment's \`ACCESS_URL\` is https, a plain-http request to that host answers 403 \`${Messages.httpsOnly}\` under \`/api\` (a redirect for pages).`;

/** Replaces zod's `#/$defs/X` references by component references, in place. */
function retarget(node: unknown): void {
  if (Array.isArray(node)) {
    for (const item of node) retarget(item);
    return;
  }
  if (node === null || typeof node !== "object") return;
  for (const [key, value] of Object.entries(node)) {
    if (key === "$ref" && typeof value === "string" && value.startsWith("#/$defs/")) {
      (node as JsonSchema).$ref = SCHEMA_REF + value.slice("#/$defs/".length);
    } else retarget(value);
  }
}

/**
 * Converts every schema of the document in one zod pass: each named component lands in `$defs` exactly once and
 * every use of it becomes a `$ref`, so components and uses can never disagree.
 */
function convertAll(schemas: readonly z.ZodType[]): { converted: Map<z.ZodType, JsonSchema>; defs: Record<string, JsonSchema> } {
  const keys = new Map<z.ZodType, string>();
  for (const schema of schemas) if (!keys.has(schema)) keys.set(schema, `s${keys.size}`);
  const wrapper = z.object(Object.fromEntries([...keys].map(([schema, key]) => [key, schema])));
  const json = z.toJSONSchema(wrapper, { ...JSON_SCHEMA_OPTIONS, metadata: components }) as JsonSchema;
  retarget(json);
  const properties = (json.properties ?? {}) as Record<string, JsonSchema>;
  const converted = new Map<z.ZodType, JsonSchema>();
  for (const [schema, key] of keys) {
    const out = properties[key];
    if (!out) throw new Error(`zod produced no schema for ${key}`);
    converted.set(schema, out);
  }
  return { converted, defs: (json.$defs ?? {}) as Record<string, JsonSchema> };
}

/** Keywords whose value is a schema, or an array or a map of schemas (JSON Schema 2020-12, the applicators). */
const SCHEMA_KEYWORDS = ["items", "additionalProperties", "not", "contains", "propertyNames", "unevaluatedProperties", "unevaluatedItems"];
const SCHEMA_ARRAY_KEYWORDS = ["prefixItems", "anyOf", "oneOf", "allOf"];
const SCHEMA_MAP_KEYWORDS = ["properties", "patternProperties", "$defs"];

const isSchema = (value: unknown): value is JsonSchema => typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * A request body's `default`s, told in its descriptions instead (docs/api.md, "The OpenAPI document"). A field with a
 * default is one the server fills in when it is missing, so zod leaves it out of `required` (the document converts
 * input types); but generated clients (openapi-typescript) read `default` as "always present" and make the field
 * required, which a client then has to send. In place, through the components the body refers to.
 */
function defaultsToDescriptions(schema: JsonSchema, defs: Record<string, JsonSchema>, seen = new Set<JsonSchema>()): void {
  if (seen.has(schema)) return;
  seen.add(schema);
  if (typeof schema.$ref === "string" && schema.$ref.startsWith(SCHEMA_REF)) {
    const target = defs[schema.$ref.slice(SCHEMA_REF.length)];
    if (target) defaultsToDescriptions(target, defs, seen);
  }
  if ("default" in schema) {
    const said = `Default: \`${JSON.stringify(schema.default)}\`.`;
    delete schema.default;
    schema.description = typeof schema.description === "string" ? `${schema.description} ${said}` : said;
  }
  const walk = (value: unknown) => isSchema(value) && defaultsToDescriptions(value, defs, seen);
  for (const key of SCHEMA_KEYWORDS) walk(schema[key]);
  for (const key of SCHEMA_ARRAY_KEYWORDS) for (const item of Array.isArray(schema[key]) ? schema[key] : []) walk(item);
  for (const key of SCHEMA_MAP_KEYWORDS) for (const item of isSchema(schema[key]) ? Object.values(schema[key]) : []) walk(item);
}

/** Everything the document knows about one operation, gathered from a route's handlers. */
interface Operation {
  method: HttpMethod;
  /** OpenAPI form, whole path: `/api/v2/users/{user}`. */
  path: string;
  doc: RouteDoc;
  operationId: string;
  summary: string;
  authenticated: boolean;
  /** Guarded by `requireRecentAuth`: a login session must have signed in or stepped up within STEP_UP_MAX_AGE. */
  stepUp: boolean;
  /** Open to a user MFA_REQUIRED_ROLES still asks for a second factor (`requireAuthToEnrol`). */
  openWithoutFactor: boolean;
  crossSiteRefused: boolean;
  pathParams: z.ZodType | undefined;
  query: z.ZodType | undefined;
  headers: z.ZodType | undefined;
  body: z.ZodType | undefined;
}

function schemasOf(op: Operation): z.ZodType[] {
  const out = [op.pathParams, op.query, op.headers, op.body, ...op.doc.responses.map((r) => r.schema)];
  return out.filter((s): s is z.ZodType => s !== undefined);
}

const AUTH_401 = `No valid credential (missing, malformed, unknown, wrong secret, expired, or the user is suspended): \`${Messages.signedOut}\` with a \`detail\` saying which.`;

/** The error statuses a route's middleware implies, before its own. */
function impliedErrors(op: Operation): Errors {
  const write = op.method !== "get";
  return errors(
    op.body
      ? {
          400: `The body is not JSON (\`${Messages.badJson}\`) or fails validation (\`${Messages.validation}\` with one \`validations\` entry per bad field).`,
        }
      : {},
    op.query ? { 400: `A query parameter is invalid or unknown (\`${Messages.validation}\` with \`validations\`).` } : {},
    op.headers ? { 400: `A header parameter is malformed (\`${Messages.validation}\` with \`validations\`).` } : {},
    op.pathParams && op.doc.pathParams === undefined
      ? { 400: `A path parameter is malformed (\`${Messages.validation}\` with \`validations\`).` }
      : {},
    op.authenticated ? { 401: AUTH_401 } : {},
    op.authenticated ? { 403: "The credential's scopes (an API token made with `scopes`) do not allow this." } : {},
    op.authenticated && write ? { 403: "Authenticated by cookie but without an allowed `Origin`." } : {},
    op.authenticated && !op.openWithoutFactor
      ? {
          403: `MFA_REQUIRED_ROLES asks the caller for a second factor and they have none: \`${MfaMessages.setUpSecondFactor}\`, detail \`${MfaMessages.secondFactorRequired}\`.`,
        }
      : {},
    op.stepUp
      ? {
          403: `A login session that last signed in or stepped up more than STEP_UP_MAX_AGE ago (\`POST /users/me/step-up\` refreshes it): \`${MfaMessages.confirmItIsYou}\`, detail \`${MfaMessages.stepUpRequired}\`.`,
        }
      : {},
    op.crossSiteRefused ? { 403: "An `Origin` header that is not an allowed origin: sign-in from another site is refused." } : {},
    write ? { 413: `The body is larger than ${MAX_BODY_BYTES} bytes (1 MiB).` } : {},
  );
}

function parameters(op: Operation, where: "path" | "query" | "header", schema: JsonSchema | undefined): ParameterObject[] {
  if (!schema) return [];
  if (schema.type !== "object" || typeof schema.properties !== "object" || schema.properties === null) {
    throw new Error(`${op.operationId}: ${where} parameters must be a zod object`);
  }
  const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
  return Object.entries(schema.properties as Record<string, JsonSchema>).map(([name, property]) => {
    if (where === "path" && !required.has(name)) throw new Error(`${op.operationId}: path parameter ${name} must be required`);
    const { description: fromSchema, ...rest } = property;
    const description = op.doc.paramDocs?.[name] ?? (typeof fromSchema === "string" ? fromSchema : undefined);
    return {
      // Hono hands headers to the validator in lower case; the document names them as clients write them.
      name: where === "header" ? name.replace(/(^|-)([a-z])/g, (_, dash: string, ch: string) => dash + ch.toUpperCase()) : name,
      in: where,
      required: where === "path" || required.has(name),
      ...(description ? { description } : {}),
      schema: rest,
    };
  });
}

function successResponse(response: SuccessResponse, converted: Map<z.ZodType, JsonSchema>): ResponseObject {
  const out: ResponseObject = { description: response.description };
  if (response.headers) out.headers = response.headers;
  const schema = response.schema ? converted.get(response.schema) : undefined;
  if (schema) out.content = { [response.contentType ?? "application/json"]: { schema } };
  return out;
}

function errorResponse(status: ErrorStatus, description: string): ResponseObject {
  return {
    description,
    ...(status === 429 ? { headers: { "Retry-After": { $ref: "#/components/headers/Retry-After" } } } : {}),
    content: { "application/json": { schema: ERROR_SCHEMA } },
  };
}

/** An answer under `/api` may carry the D1 bookmark (docs/consistency.md), whatever its status. */
function withBookmark(response: ResponseObject): ResponseObject {
  const { description, headers, ...rest } = response;
  return { description, headers: { ...headers, [BOOKMARK_HEADER]: BOOKMARK_REF }, ...rest };
}

function operationObject(op: Operation, converted: Map<z.ZodType, JsonSchema>): OperationObject {
  const pathParams = parameters(op, "path", op.pathParams && converted.get(op.pathParams));
  const templated = [...op.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]).sort();
  if (JSON.stringify(templated) !== JSON.stringify(pathParams.map((p) => p.name).sort())) {
    throw new Error(`${op.operationId}: path parameters do not match ${op.path}`);
  }
  const params = [
    ...pathParams,
    ...parameters(op, "query", op.query && converted.get(op.query)),
    ...parameters(op, "header", op.headers && converted.get(op.headers)),
  ];
  for (const name of Object.keys(op.doc.paramDocs ?? {})) {
    if (!params.some((p) => p.name === name)) throw new Error(`${op.operationId}: paramDocs names unknown parameter ${name}`);
  }
  const responses: Record<string, ResponseObject | Reference> = {};
  for (const response of op.doc.responses) responses[String(response.status)] = successResponse(response, converted);
  const errorMap = errors(impliedErrors(op), op.doc.errors ?? {});
  for (const status of Object.keys(errorMap).sort()) {
    responses[status] = errorResponse(Number(status) as ErrorStatus, errorMap[Number(status) as ErrorStatus] ?? "");
  }
  responses["500"] ??= { $ref: "#/components/responses/InternalServerError" };
  if (op.path.startsWith("/api/")) {
    for (const [status, response] of Object.entries(responses)) if (!("$ref" in response)) responses[status] = withBookmark(response);
  }
  const body = op.body && converted.get(op.body);
  return {
    operationId: op.operationId,
    summary: op.summary,
    ...(op.doc.description ? { description: op.doc.description } : {}),
    tags: [...op.doc.tags],
    security: op.authenticated ? SESSION : [],
    ...(params.length > 0 ? { parameters: params } : {}),
    ...(body ? { requestBody: { required: true, content: { "application/json": { schema: body } } } } : {}),
    responses,
    // Who may call it and the scope an API token needs (docs/authorization.md): the route's own metadata, for
    // clients and for docs/endpoints.md.
    ...(op.doc.access ? { "x-herald-access": op.doc.access } : {}),
    ...(op.doc.scope ? { "x-herald-scope": op.doc.scope } : {}),
    // Needs a recent sign-in from a login session (docs/second-factor.md, "Step-up").
    ...(op.stepUp ? { "x-herald-step-up": true } : {}),
  };
}

type Handler = RouterRoute["handler"] & { [ROUTE_DOC]?: RouteDoc; [VALIDATES]?: ValidatorDoc; __COMPOSED_HANDLER?: Handler };

/** A sub-app mounted with its own error handler wraps each handler; the original stays reachable. */
function unwrap(handler: Handler): Handler {
  return handler.__COMPOSED_HANDLER ?? handler;
}

/**
 * Hono's path syntax to OpenAPI paths: `:user` becomes `{user}`, and a parameter restricted to an alternation
 * (`:status{suspend|activate}`) becomes one literal path per alternative.
 */
function openApiPaths(path: string): { path: string; alternative?: string }[] {
  const alternation = /:([A-Za-z_]+)\{([A-Za-z0-9_|-]+)\}/.exec(path);
  if (alternation) {
    const [whole, , choices = ""] = alternation;
    return choices.split("|").map((choice) => ({ path: path.replace(whole, choice).replace(/:([A-Za-z_]+)/g, "{$1}"), alternative: choice }));
  }
  if (/[{}*]/.test(path)) throw new Error(`Cannot document the path ${path}`);
  return [{ path: path.replace(/:([A-Za-z_]+)/g, "{$1}") }];
}

/** Every documented operation of the app, read from its routes (`app.routes`), in registration order. */
export function operationsOf(routes: readonly RouterRoute[]): Operation[] {
  const byRoute = new Map<string, { method: HttpMethod; path: string; handlers: Handler[] }>();
  for (const route of routes) {
    if (route.method === "ALL") continue;
    const method = route.method.toLowerCase() as HttpMethod;
    const key = `${method} ${route.path}`;
    const entry = byRoute.get(key) ?? { method, path: route.path, handlers: [] };
    entry.handlers.push(unwrap(route.handler as Handler));
    byRoute.set(key, entry);
  }
  const out: Operation[] = [];
  for (const { method, path, handlers } of byRoute.values()) {
    const docs = handlers.flatMap((h) => (h[ROUTE_DOC] ? [h[ROUTE_DOC]] : []));
    const doc = docs[0];
    if (!doc || docs.length > 1) throw new Error(`${method.toUpperCase()} ${path} needs exactly one describeRoute(...)`);
    const validated = (target: ValidatorDoc["target"]) => handlers.find((h) => h[VALIDATES]?.target === target)?.[VALIDATES]?.schema;
    for (const variant of openApiPaths(path)) {
      const named = variant.alternative === undefined ? doc : doc.alternatives?.[variant.alternative];
      if (!named) throw new Error(`${method.toUpperCase()} ${path}: no alternatives entry for "${variant.alternative ?? ""}"`);
      out.push({
        method,
        path: variant.path,
        doc,
        operationId: named.operationId,
        summary: named.summary,
        authenticated: handlers.includes(requireAuth as Handler) || handlers.includes(requireAuthToEnrol as Handler),
        stepUp: handlers.includes(requireRecentAuth as Handler),
        openWithoutFactor: handlers.includes(requireAuthToEnrol as Handler),
        crossSiteRefused: handlers.includes(refuseCrossSite as Handler),
        pathParams: validated("param") ?? doc.pathParams,
        query: validated("query") ?? doc.query,
        headers: validated("header"),
        body: validated("json"),
      });
    }
  }
  return out;
}

/** `HEAD` mirrors a `GET`: same parameters and statuses, no body. */
function headOf(get: OperationObject): OperationObject {
  const responses: Record<string, ResponseObject | Reference> = {};
  for (const [status, response] of Object.entries(get.responses)) {
    if ("$ref" in response) responses[status] = response;
    else {
      const { content: _content, ...rest } = response;
      responses[status] = rest;
    }
  }
  return {
    ...get,
    operationId: `${get.operationId}Head`,
    summary: `Headers only: ${get.summary}`,
    description: "As `GET`, without the body.",
    responses,
  };
}

/** `OPTIONS` on any `/api` path: the CORS preflight, answered before routing. */
function preflightOf(item: PathItem): OperationObject {
  const first = Object.values(item)[0];
  return {
    operationId: `${first?.operationId ?? "unknown"}Preflight`,
    summary: "CORS preflight",
    description: "Answers 204 with the CORS headers; `Access-Control-Allow-Origin` only for an origin in CORS_ALLOWED_ORIGINS.",
    tags: first ? [...first.tags] : ["Meta"],
    security: [],
    ...(first?.parameters?.some((p) => p.in === "path") ? { parameters: first.parameters.filter((p) => p.in === "path") } : {}),
    responses: {
      "204": {
        description: "The preflight answer.",
        headers: {
          "Access-Control-Allow-Methods": { description: "GET, POST, PUT, PATCH, DELETE.", schema: { type: "string" } },
          "Access-Control-Allow-Origin": { description: "The request's `Origin`, when it is allowed.", schema: { type: "string" } },
        },
      },
    },
  };
}

export interface DocumentOptions {
  /** The deployment's ACCESS_URL: the document's one server. */
  serverUrl: string;
}

/** The OpenAPI document of an app, generated from its routes (`app.routes`). */
export function buildOpenApiDocument(routes: readonly RouterRoute[], options: DocumentOptions): OpenApiDocument {
  const operations = operationsOf(routes);
  const { converted, defs } = convertAll([...namedSchemas.values(), ...operations.flatMap(schemasOf)]);
  for (const op of operations) {
    const body = op.body && converted.get(op.body);
    if (body) defaultsToDescriptions(body, defs);
  }
  const paths: Record<string, PathItem> = {};
  const ids = new Set<string>();
  for (const op of operations) {
    if (ids.has(op.operationId)) throw new Error(`Duplicate operationId ${op.operationId}`);
    ids.add(op.operationId);
    const item = paths[op.path] ?? {};
    paths[op.path] = item;
    if (item[op.method]) throw new Error(`Duplicate operation ${op.method.toUpperCase()} ${op.path}`);
    item[op.method] = operationObject(op, converted);
  }
  for (const [path, item] of Object.entries(paths)) {
    if (item.get) item.head = headOf(item.get);
    if (path.startsWith("/api/")) item.options = preflightOf(item);
  }
  return {
    openapi: "3.1.1",
    jsonSchemaDialect: "https://json-schema.org/draft/2020-12/schema",
    info: {
      title: "Herald",
      version: "2.0.0",
      summary: "Herald's /api/v2 interface.",
      description: DESCRIPTION,
      license: { name: "Proprietary", identifier: "LicenseRef-Proprietary" },
    },
    servers: [{ url: options.serverUrl, description: "This deployment (ACCESS_URL)." }],
    tags: [
      { name: "Meta", description: "The page at `/`, health and this document." },
      { name: "Authorization", description: "Scopes and authorization checks." },
      { name: "Sign-in", description: "Password sign-in, logout, sign-in methods and password reset by one-time passcode." },
      { name: "Passkeys", description: "Adding, listing and removing passkeys (WebAuthn), and passwordless sign-in with one (docs/passkeys.md)." },
      { name: "External sign-in", description: "OpenID Connect and GitHub sign-in, and converting a password login to one." },
      { name: "Users", description: "Accounts: the first owner, users, roles, status and passwords." },
      { name: "API keys", description: "Login sessions and named API tokens." },
      { name: "Inbox", description: "The caller's inbox: list, watch, read state." },
      { name: "Notifications", description: "Sending, dispatch methods, the notifier setting, templates and the delivery log." },
      { name: "Notification preferences", description: "Per-user template preferences." },
      {
        name: "Notification targets",
        description: "A user's own webhook, Slack, Microsoft Teams and Discord channels, each verified with a code sent to it (docs/targets.md).",
      },
      { name: "Web Push", description: "The VAPID public key, and the browsers a user subscribed to Web Push (docs/push.md)." },
      { name: "Broadcasts", description: "One notification to many inboxes, fanned out through the queue (docs/broadcasts.md)." },
      { name: "Audit", description: 'The audit log: who changed what, when and from where (docs/security.md, "The audit log").' },
    ],
    paths,
    components: {
      schemas: defs,
      responses: {
        InternalServerError: {
          description: `An unexpected failure: \`${Messages.internal}\` with the request id in \`detail\`.`,
          headers: { [BOOKMARK_HEADER]: BOOKMARK_REF },
          content: { "application/json": { schema: ERROR_SCHEMA } },
        },
      },
      securitySchemes: {
        SessionToken: { type: "apiKey", in: "header", name: "Service-Session-Token", description: "A session token or API key." },
        BearerToken: { type: "http", scheme: "bearer", description: "The same token as `Authorization: Bearer <token>`." },
        SessionCookie: {
          type: "apiKey",
          in: "cookie",
          name: "service_session_token",
          description:
            "Set by sign-in; named `__Host-service_session_token` on https. State-changing requests (and the watch upgrade) need an allowed `Origin`.",
        },
      },
      headers: {
        "Retry-After": { description: "Seconds until the rate limit resets.", required: true, schema: { type: "integer", minimum: 0 } },
        [BOOKMARK_HEADER]: {
          description:
            "The database position this answer had seen (a D1 bookmark), when it read or wrote the database or was sent one. Send the latest one received back in the same request header to read at least that state (docs/consistency.md).",
          schema: { type: "string", pattern: BOOKMARK_PATTERN },
        },
      },
    },
  };
}
