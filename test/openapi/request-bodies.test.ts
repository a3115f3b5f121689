import { describe, expect, it } from "vitest";
import type * as z from "zod";
import { app } from "../../src/app";
import { operationsOf } from "../../src/openapi/document";
import type { JsonSchema } from "../../src/openapi/types";
import { apiPath, deref, document, sample } from "../fixtures/requests";
import { call, owner } from "../helpers";

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value);

interface Property {
  /** The property's JSON path in the body, e.g. `content.title`. */
  path: string[];
  required: boolean;
  /** Required by the `anyOf` branch the simplest body takes (a rule across fields, checked by its own test). */
  conditional: boolean;
  schema: JsonSchema;
}

/** Every property of the body's objects that the simplest valid body reaches (a property of an object it contains). */
function propertiesOf(schema: JsonSchema, body: unknown, at: string[] = []): Property[] {
  const node = deref(schema);
  if (!isObject(body) || !isObject(node.properties)) return [];
  const required = new Set(Array.isArray(node.required) ? (node.required as string[]) : []);
  const branch = Array.isArray(node.anyOf) && isObject(node.anyOf[0]) ? node.anyOf[0] : {};
  const conditional = new Set(Array.isArray(branch.required) ? (branch.required as string[]) : []);
  return Object.entries(node.properties as Record<string, JsonSchema>).flatMap(([name, property]) => [
    { path: [...at, name], required: required.has(name), conditional: conditional.has(name), schema: property },
    ...propertiesOf(property, body[name], [...at, name]),
  ]);
}

function without(body: unknown, path: string[]): unknown {
  if (!isObject(body)) return body;
  const [head, ...rest] = path;
  if (head === undefined) return body;
  if (rest.length === 0) {
    const { [head]: _dropped, ...others } = body;
    return others;
  }
  return { ...body, [head]: without(body[head], rest) };
}

/** Whether a `default` keyword sits anywhere in a schema, through its references. */
function hasDefault(schema: unknown, seen = new Set<unknown>()): boolean {
  if (!isObject(schema) && !Array.isArray(schema)) return false;
  if (seen.has(schema)) return false;
  seen.add(schema);
  if (isObject(schema) && typeof schema.$ref === "string") return hasDefault(deref(schema), seen);
  if (isObject(schema) && "default" in schema && !isObject(schema.default)) return true;
  return Object.values(schema).some((value) => hasDefault(value, seen));
}

const bodies = operationsOf(app.routes).flatMap((op) => {
  const documented = document.paths[op.path]?.[op.method]?.requestBody?.content["application/json"]?.schema;
  return op.body && documented ? [{ method: op.method.toUpperCase(), path: op.path, zod: op.body as z.ZodType, schema: documented }] : [];
});

describe('request bodies: `required` is what the server requires (docs/api.md, "The OpenAPI document")', () => {
  it("every documented body's simplest value is accepted by the route's own schema", () => {
    expect(bodies.length).toBeGreaterThan(15);
    for (const { method, path, zod, schema } of bodies) expect(zod.safeParse(sample(schema)).success, `${method} ${path}`).toBe(true);
  });

  it("a property in `required`, left out, is refused with 400 naming it; one not in `required` may be left out", async () => {
    const { token } = await owner();
    let checkedRequired = 0;
    for (const { method, path, zod, schema } of bodies) {
      const base = sample(schema);
      for (const property of propertiesOf(schema, base)) {
        const where = `${method} ${path}: ${property.path.join(".")}`;
        const body = without(base, property.path);
        if (property.required) {
          checkedRequired++;
          const res = await call(method, apiPath(path), { token, body });
          expect(res.status, where).toBe(400);
          const { validations = [] } = (await res.json()) as { validations?: { field: string }[] };
          expect(
            validations.map((v) => v.field),
            where,
          ).toContain(property.path.join("."));
        } else if (!property.conditional) {
          expect(zod.safeParse(body).success, where).toBe(true);
        }
      }
    }
    expect(checkedRequired).toBeGreaterThan(15);
  });

  it("no request body carries `default`: generated clients would make the field required (it is in the description)", () => {
    for (const { method, path, schema } of bodies) expect(hasDefault(schema), `${method} ${path}`).toBe(false);
    const custom = deref(document.components.schemas.CustomNotificationRequest ?? {});
    const content = deref((custom.properties as Record<string, JsonSchema>).content ?? {});
    expect((content.properties as Record<string, JsonSchema>).message?.description).toContain('Default: `""`.');
  });
});
