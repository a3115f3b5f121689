/** The subset of OpenAPI 3.1 objects the document uses. Schemas are JSON Schema 2020-12 objects (from zod). */

export type JsonSchema = { [keyword: string]: unknown };

export type HttpMethod = "get" | "post" | "put" | "delete";

export interface Reference {
  $ref: string;
}

interface MediaTypeObject {
  schema: JsonSchema;
}

export interface HeaderObject {
  description?: string;
  required?: boolean;
  schema: JsonSchema;
}

export interface ResponseObject {
  description: string;
  headers?: Record<string, HeaderObject | Reference>;
  content?: Record<string, MediaTypeObject>;
}

export interface ParameterObject {
  name: string;
  in: "path" | "query" | "header";
  required: boolean;
  description?: string;
  schema: JsonSchema;
}

interface RequestBodyObject {
  required: true;
  description?: string;
  content: { "application/json": MediaTypeObject };
}

export type SecurityRequirement = Record<string, string[]>;

export interface OperationObject {
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  security: SecurityRequirement[];
  parameters?: ParameterObject[];
  requestBody?: RequestBodyObject;
  responses: Record<string, ResponseObject | Reference>;
  /** Who may call an authenticated operation (`RouteDoc.access`). */
  "x-herald-access"?: string;
  /** The scope an API token needs for it, or `none` (`RouteDoc.scope`). */
  "x-herald-scope"?: string;
  /** Needs a recent sign-in from a login session (`requireRecentAuth`). */
  "x-herald-step-up"?: boolean;
}

export type PathItem = Partial<Record<HttpMethod | "head" | "options", OperationObject>>;

type SecurityScheme =
  | { type: "apiKey"; in: "header" | "cookie"; name: string; description?: string }
  | { type: "http"; scheme: "bearer"; description?: string };

interface TagObject {
  name: string;
  description?: string;
}

export interface OpenApiDocument {
  openapi: string;
  jsonSchemaDialect: string;
  info: { title: string; version: string; summary?: string; description?: string; license?: { name: string; identifier: string } };
  servers: { url: string; description?: string }[];
  tags: TagObject[];
  paths: Record<string, PathItem>;
  components: {
    schemas: Record<string, JsonSchema>;
    responses: Record<string, ResponseObject>;
    securitySchemes: Record<string, SecurityScheme>;
    headers: Record<string, HeaderObject>;
  };
}
