/**
 * Floods of unknown keys, generated from the routes' own metadata like the endpoint matrix (docs/testing.md, "The
 * endpoint matrix"): every operation of the OpenAPI document built from `app.routes` whose body holds a strict object
 * (`additionalProperties: false`, at the top, in a property, or in every branch of a property's `anyOf`) gets a valid
 * body with 6,000 and then 60,000 unknown keys in that object, and every validated query gets 2,400 unknown
 * parameters. Each is a 400 in the error shape with one validation for all the unknown keys, no larger than 8 KiB,
 * and nothing stored changes (docs/api.md, "Unknown keys and long validation lists").
 */
import { beforeAll, describe, expect, it } from "vitest";
import { app } from "../../src/app";
import { Messages } from "../../src/http/errors";
import { operationsOf } from "../../src/openapi/document";
import type { JsonSchema } from "../../src/openapi/types";
import { UNKNOWN_KEY_FLOODS, unknownKeys, unknownParameters } from "../fixtures/bad-input";
import { apiPath, deref, document, sample } from "../fixtures/requests";
import { rejectedWithoutChange } from "../fixtures/stored-state";
import { call, owner } from "../helpers";

const isStrictObject = (schema: JsonSchema) => schema.type === "object" && schema.additionalProperties === false;

/** Where a body schema holds a strict object: "" for the body itself, else the property's name. */
function strictPlaces(body: JsonSchema): string[] {
  const places = isStrictObject(body) ? [""] : [];
  for (const [name, raw] of Object.entries((body.properties ?? {}) as Record<string, JsonSchema>)) {
    const property = deref(raw);
    const branches = Array.isArray(property.anyOf) ? (property.anyOf as JsonSchema[]).map(deref) : [property];
    if (branches.every(isStrictObject)) places.push(name);
  }
  return places;
}

interface Flood {
  id: string;
  method: string;
  path: string;
  authenticated: boolean;
  /** The request's valid body, the property the unknown keys go in ("" for the body itself), and its schema. */
  body?: { schema: JsonSchema; place: string };
}

const OPERATIONS = operationsOf(app.routes).map((op) => {
  const operation = document.paths[op.path]?.[op.method];
  if (!operation) throw new Error(`${op.operationId} is not in the document`);
  const body = operation.requestBody?.content["application/json"].schema;
  return { op, body: body === undefined ? undefined : deref(body) };
});

const BODY_FLOODS: Flood[] = OPERATIONS.flatMap(({ op, body }) =>
  body === undefined
    ? []
    : strictPlaces(body).map((place) => ({
        id: `${op.method.toUpperCase()} ${op.path}${place ? ` (in ${place})` : ""}`,
        method: op.method.toUpperCase(),
        path: op.path,
        authenticated: op.authenticated,
        body: { schema: body, place },
      })),
);

const QUERY_FLOODS: Flood[] = OPERATIONS.filter(({ op }) => op.query !== undefined && op.doc.query === undefined).map(({ op }) => ({
  id: `${op.method.toUpperCase()} ${op.path}`,
  method: op.method.toUpperCase(),
  path: op.path,
  authenticated: op.authenticated,
}));

/** The valid body with `n` unknown keys in the object at `place`. */
function flooded(schema: JsonSchema, place: string, n: number): Record<string, unknown> {
  if (place === "") return { ...(sample(schema) as Record<string, unknown>), ...unknownKeys(n) };
  // Where the body must have exactly one of some properties (an `anyOf` of `required`), the branch with `place`.
  const branch = ((schema.anyOf ?? []) as JsonSchema[]).find((b) => ((b.required ?? []) as string[]).includes(place));
  const good = sample(branch ? { ...schema, anyOf: [branch] } : schema) as Record<string, unknown>;
  const inner = good[place] ?? sample(((schema.properties ?? {}) as Record<string, JsonSchema>)[place] ?? {});
  return { ...good, [place]: { ...(inner as Record<string, unknown>), ...unknownKeys(n) } };
}

let admin: { token: string };

beforeAll(async () => {
  admin = await owner();
});

describe("unknown keys in a strict body: one 400 of at most 8 KiB, nothing changed", () => {
  it("some body holds a strict object", () => {
    expect(BODY_FLOODS.length).toBeGreaterThan(0);
  });

  for (const flood of BODY_FLOODS) {
    it(`${flood.id}: ${UNKNOWN_KEY_FLOODS.body.join(" and ")} unknown keys`, async () => {
      const { schema, place } = flood.body ?? { schema: {}, place: "" };
      for (const n of UNKNOWN_KEY_FLOODS.body) {
        const body = flooded(schema, place, n);
        const error = await rejectedWithoutChange(
          () => call(flood.method, apiPath(flood.path), { token: flood.authenticated ? admin.token : undefined, body }),
          {
            status: 400,
            message: Messages.validation,
          },
        );
        // The unknown keys are the one thing wrong, named by the first of them or, inside a union, by the property
        // holding them.
        const fields = (error.validations ?? []).map((v) => v.field);
        expect(fields, `${n} keys`).toEqual([place === "" ? "k0" : fields.find((f) => f === place || f.startsWith(`${place}.`))]);
      }
    });
  }
});

describe("unknown query parameters: one 400 of at most 8 KiB, nothing changed", () => {
  it("some route validates its query", () => {
    expect(QUERY_FLOODS.length).toBeGreaterThan(0);
  });

  for (const flood of QUERY_FLOODS) {
    it(`${flood.id}: ${UNKNOWN_KEY_FLOODS.query} unknown parameters`, async () => {
      const url = `${apiPath(flood.path)}?${unknownParameters(UNKNOWN_KEY_FLOODS.query)}`;
      const headers = flood.id.endsWith("/watch") ? { Upgrade: "websocket" } : undefined;
      const error = await rejectedWithoutChange(() => call(flood.method, url, { token: flood.authenticated ? admin.token : undefined, headers }), {
        status: 400,
        message: Messages.validation,
      });
      expect(error.validations).toEqual([
        { field: "k0", detail: `Unrecognized keys: "k0", "k1", "k2", "k3", "k4" and ${UNKNOWN_KEY_FLOODS.query - 5} more` },
      ]);
    });
  }
});
