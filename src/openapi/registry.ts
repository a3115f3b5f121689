import * as z from "zod";
import type { JsonSchema } from "./types";

/** What the document knows about a zod schema: `id` makes it a named component, `description` documents it. */
export interface SchemaMeta {
  id?: string;
  description?: string;
  /**
   * JSON Schema keywords for a rule zod checks in code (a `superRefine`), which zod cannot convert; test/openapi
   * checks that the document and the validator accept the same bodies.
   */
  anyOf?: JsonSchema[];
  /** Values the schema accepts, shown in the document; generated requests use the first (test/fixtures/requests.ts). */
  examples?: unknown[];
}

/**
 * The document's own registry. It is a side table (a WeakMap), so registering a route's request schema here changes
 * nothing about how that schema validates; zod's global registry is left alone.
 */
export const components = z.registry<SchemaMeta>();

/** Every named component, by id, in registration order. */
export const namedSchemas = new Map<string, z.ZodType>();

/** Makes `schema` the component `#/components/schemas/<id>` and returns the very same object. */
export function named<T extends z.ZodType>(id: string, schema: T, description?: string, rules?: Pick<SchemaMeta, "anyOf">): T {
  const existing = components.get(schema);
  if (existing?.id === id) return schema;
  if (existing) throw new Error(`Schema already registered as "${existing.id ?? "(unnamed)"}", not "${id}".`);
  if (namedSchemas.has(id)) throw new Error(`Two schemas are named "${id}".`);
  components.add(schema, { id, ...(description === undefined ? {} : { description }), ...rules });
  namedSchemas.set(id, schema);
  return schema;
}

/**
 * A copy of `schema` with examples, for a schema whose simplest value is not a valid one (a rule across fields): the
 * document shows them, and the suites that generate requests from the document start from the first.
 */
export function exemplified<T extends z.ZodType>(examples: z.input<T>[], schema: T): T {
  const copy = schema.clone();
  // A described schema keeps its description; a named one is never copied (its copy would be a second component).
  const { description } = components.get(schema) ?? {};
  components.add(copy, { ...(description === undefined ? {} : { description }), examples });
  return copy;
}

/** A described copy of `schema` (a copy, so a shared schema such as `z.uuid()` keeps its other uses undescribed). */
export function described<T extends z.ZodType>(description: string, schema: T): T {
  const copy = schema.clone();
  components.add(copy, { description });
  return copy;
}
