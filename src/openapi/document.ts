import { z } from "zod";
import { OPERATIONS } from "./operations";
import { components, namedSchemas } from "./registry";
import type { ErrorStatus, Operation, SuccessResponse } from "./table";
import type {
  JsonSchema,
  OpenApiDocument,
  OperationObject,
  ParameterObject,
  PathItem,
  ResponseObject,
  SecurityRequirement,
} from "./types";

/** How every zod schema becomes JSON Schema; the test converts `loginBody` with the same options. */
export const JSON_SCHEMA_OPTIONS = { target: "draft-2020-12", io: "input", unrepresentable: "any" } as const;

const SCHEMA_REF = "#/components/schemas/";
const ERROR_SCHEMA: JsonSchema = { $ref: `${SCHEMA_REF}Response` };
const SESSION: SecurityRequirement[] = [{ SessionToken: [] }, { BearerToken: [] }, { SessionCookie: [] }];

const DESCRIPTION = `Sign-in, authorization and notifications. All bodies are JSON.

**Errors.** Every non-2xx response with a body is a \`Response\`: \`{"message", "detail"?, "validations"?: [{"field", "detail"}]}\`. Besides the statuses listed per operation, any route may answer 500 \`An internal server error occurred.\` (the \`detail\` carries a request id). Under \`/api/v2\`, an unknown path answers 404 \`Route not found.\` and a known path asked with a method it does not serve answers **405** \`Method not allowed.\` with an \`Allow\` header; a body above 1 MiB answers 413.

**Authentication.** A session token or API key (\`<10-char id>-<22-char secret>\`) in the \`Service-Session-Token\` header, else \`Authorization: Bearer\`, else the \`service_session_token\` cookie (\`__Host-\` prefixed on https). A cookie-authenticated request that changes state must come from an allowed \`Origin\` (403 otherwise).`;

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

function schemasOf(op: Operation): z.ZodType[] {
  const out = [op.pathParams, op.query, op.body, ...op.responses.map((r) => r.schema)];
  return out.filter((s): s is z.ZodType => s !== undefined);
}

function parameters(op: Operation, where: "path" | "query", schema: JsonSchema | undefined): ParameterObject[] {
  if (!schema) return [];
  if (schema.type !== "object" || typeof schema.properties !== "object" || schema.properties === null) {
    throw new Error(`${op.operationId}: ${where} parameters must be a zod object`);
  }
  const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
  return Object.entries(schema.properties as Record<string, JsonSchema>).map(([name, property]) => {
    if (where === "path" && !required.has(name)) throw new Error(`${op.operationId}: path parameter ${name} must be required`);
    const { description: fromSchema, ...rest } = property;
    const description = op.paramDocs?.[name] ?? (typeof fromSchema === "string" ? fromSchema : undefined);
    return {
      name,
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

function operationObject(op: Operation, converted: Map<z.ZodType, JsonSchema>): OperationObject {
  const pathParams = parameters(op, "path", op.pathParams && converted.get(op.pathParams));
  const templated = [...op.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]).sort();
  if (JSON.stringify(templated) !== JSON.stringify(pathParams.map((p) => p.name).sort())) {
    throw new Error(`${op.operationId}: path parameters do not match ${op.path}`);
  }
  const params = [...pathParams, ...parameters(op, "query", op.query && converted.get(op.query))];
  for (const name of Object.keys(op.paramDocs ?? {})) {
    if (!params.some((p) => p.name === name)) throw new Error(`${op.operationId}: paramDocs names unknown parameter ${name}`);
  }
  const responses: Record<string, ResponseObject> = {};
  for (const response of op.responses) responses[String(response.status)] = successResponse(response, converted);
  for (const [status, description] of Object.entries(op.errors)) {
    responses[status] = errorResponse(Number(status) as ErrorStatus, description);
  }
  const body = op.body && converted.get(op.body);
  return {
    operationId: op.operationId,
    summary: op.summary,
    ...(op.description ? { description: op.description } : {}),
    tags: [...op.tags],
    security: op.auth === "public" ? [] : SESSION,
    ...(params.length > 0 ? { parameters: params } : {}),
    ...(body ? { requestBody: { required: true, content: { "application/json": { schema: body } } } } : {}),
    responses,
  };
}

export function buildOpenApiDocument(operations: readonly Operation[] = OPERATIONS): OpenApiDocument {
  const { converted, defs } = convertAll([...namedSchemas.values(), ...operations.flatMap(schemasOf)]);
  const paths: Record<string, PathItem> = {};
  const ids = new Set<string>();
  for (const op of operations) {
    if (ids.has(op.operationId)) throw new Error(`Duplicate operationId ${op.operationId}`);
    ids.add(op.operationId);
    const item = (paths[op.path] ??= {});
    if (item[op.method]) throw new Error(`Duplicate operation ${op.method.toUpperCase()} ${op.path}`);
    item[op.method] = operationObject(op, converted);
  }
  return {
    openapi: "3.1.1",
    jsonSchemaDialect: "https://json-schema.org/draft/2020-12/schema",
    info: { title: "Herald", version: "2.0.0", summary: "Herald's /api/v2 interface.", description: DESCRIPTION },
    tags: [
      { name: "Meta", description: "Health and this document." },
      { name: "Authorization", description: "Scopes and authorization checks (A1, A2)." },
      { name: "Sign-in", description: "Password sign-in, logout and password reset (A3–A6)." },
      { name: "External sign-in", description: "OpenID Connect and GitHub sign-in, login conversion (A7)." },
      { name: "Users", description: "Accounts (SPEC §7)." },
      { name: "API keys", description: "Named API tokens (SPEC §7)." },
      { name: "Inbox", description: "The caller's inbox (N3–N6)." },
      { name: "Notifications", description: "Sending, settings, templates and delivery (N1, N2, N7–N11)." },
      { name: "Notification preferences", description: "Per-user template preferences (N12, N13)." },
    ],
    paths,
    components: {
      schemas: defs,
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
      },
    },
  };
}

let cached: OpenApiDocument | undefined;

/** Built on first use and kept for the life of the isolate. */
export function openApiDocument(): OpenApiDocument {
  cached ??= buildOpenApiDocument();
  return cached;
}
