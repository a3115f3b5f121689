/**
 * The endpoint matrix, generated from the routes' own metadata (docs/testing.md, "The endpoint matrix"): every
 * operation of the OpenAPI document built from `app.routes` is crossed with the checks below, so a new route is
 * fuzzed and permission-checked the moment it exists, without anyone adding it to a table.
 *
 * - credentials: an authenticated route answers 401 without a credential and with a malformed or unknown one;
 * - bodies: for a route with a JSON body — not JSON, not an object, each required field missing, each field of the
 *   wrong type — a 400 in the error shape naming the field, and nothing stored changes;
 * - queries: an unknown parameter, and each parameter with a value of the wrong kind, is a 400;
 * - paths: hostile `{params}` are a 4xx, never a 5xx;
 * - access (`describeRoute({ access })`): a member never succeeds on a route for user-admins or owners, never acts on
 *   another member through `{user}`, and is not refused (401/403) on an `anyone` route acting on itself; a
 *   user-admin is refused the owner-only routes and those that read the deployment's configuration or the audit log.
 *
 * Requests that must pass validation use a body generated from the documented schema (first example, else the
 * simplest valid value), so a refusal can only come from the check under test.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { app } from "../../src/app";
import { operationsOf } from "../../src/openapi/document";
import type { JsonSchema, OperationObject, ParameterObject } from "../../src/openapi/types";
import { assertErrorShape, expectRejected } from "../fixtures/error-shape";
import { apiPath, deref, document, sample, wrongType } from "../fixtures/requests";
import { rejectedWithoutChange } from "../fixtures/stored-state";
import { call, createUser, json, owner, type TestUser } from "../helpers";

interface Case {
  id: string;
  method: string;
  path: string;
  operation: OperationObject;
  authenticated: boolean;
  access: string | undefined;
  body: JsonSchema | undefined;
  query: ParameterObject[];
  /** Checked by a `queryParams(...)` validator (the callbacks read theirs by hand). */
  queryValidated: boolean;
  pathParams: ParameterObject[];
}

const CASES: Case[] = operationsOf(app.routes).map((op) => {
  const operation = document.paths[op.path]?.[op.method];
  if (!operation) throw new Error(`${op.operationId} is not in the document`);
  const body = operation.requestBody?.content["application/json"].schema;
  return {
    id: `${op.method.toUpperCase()} ${op.path}`,
    method: op.method.toUpperCase(),
    path: op.path,
    operation,
    authenticated: op.authenticated,
    access: op.doc.access,
    body: body === undefined ? undefined : deref(body),
    query: (operation.parameters ?? []).filter((p) => p.in === "query"),
    queryValidated: op.query !== undefined && op.doc.query === undefined,
    pathParams: (operation.parameters ?? []).filter((p) => p.in === "path"),
  };
});

let admin: { token: string; id: string };
let member: TestUser;
let otherMember: TestUser;
let userAdmin: TestUser;

beforeAll(async () => {
  admin = await owner();
  [member, otherMember, userAdmin] = await Promise.all([createUser(), createUser(), createUser({ roles: ["user-admin"] })]);
});

describe("every authenticated route refuses a missing or bad credential with 401", () => {
  for (const c of CASES.filter((c) => c.authenticated)) {
    it(`${c.id}`, async () => {
      for (const token of [undefined, "not-a-token", "abcdefghij-abcdefghijklmnopqrstuv"]) {
        const body = c.body ? sample(c.body) : undefined;
        const headers = c.id.endsWith("/watch") ? { Upgrade: "websocket" } : undefined;
        await rejectedWithoutChange(() => call(c.method, apiPath(c.path), { token, body, headers }), { status: 401 });
      }
    });
  }
});

describe("every JSON body is validated: bad bodies are a 400 naming the field, and change nothing", () => {
  for (const c of CASES.filter((c) => c.body)) {
    const schema = c.body as JsonSchema;
    const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
    const required = (schema.required as string[] | undefined) ?? [];
    it(`${c.id}`, async () => {
      const token = c.authenticated ? admin.token : undefined;
      const path = apiPath(c.path);
      const good = sample(schema) as Record<string, unknown>;
      for (const raw of ["{", "[]", "null", '"text"', "12"]) {
        await rejectedWithoutChange(() => call(c.method, path, { token, raw }), { status: 400 });
      }
      for (const name of required) {
        const { [name]: _dropped, ...missing } = good;
        const body = await rejectedWithoutChange(() => call(c.method, path, { token, body: missing }), { status: 400 });
        expect(
          body.validations?.map((v) => v.field.split(".")[0]),
          `${name} missing`,
        ).toContain(name);
      }
      for (const [name, property] of Object.entries(properties)) {
        const body = await rejectedWithoutChange(() => call(c.method, path, { token, body: { ...good, [name]: wrongType(property) } }), {
          status: 400,
        });
        expect(
          body.validations?.map((v) => v.field.split(".")[0]),
          `${name} of the wrong type`,
        ).toContain(name);
      }
    });
  }
});

describe("every validated query refuses unknown and malformed parameters with 400", () => {
  for (const c of CASES.filter((c) => c.queryValidated)) {
    it(`${c.id}`, async () => {
      const token = c.authenticated ? admin.token : undefined;
      await rejectedWithoutChange(() => call(c.method, `${apiPath(c.path)}?no_such_parameter=1`, { token }), { status: 400 });
      for (const p of c.query) {
        const schema = deref(p.schema);
        if (schema.type === "string" && !Array.isArray(schema.enum) && schema.pattern === undefined && schema.format === undefined) continue;
        const res = await call(c.method, `${apiPath(c.path)}?${p.name}=${encodeURIComponent("%not valid%")}`, { token });
        const body = await expectRejected(res, { status: 400 });
        expect(
          body.validations?.map((v) => v.field),
          p.name,
        ).toContain(p.name);
      }
    });
  }
});

describe("hostile path parameters are a 4xx, never a 5xx", () => {
  const HOSTILE = ["..", "%2e%2e%2f", "%00", "a".repeat(2000), "' OR 1=1 --", "__proto__", "constructor", "%F0%9F%92%A9"];
  for (const c of CASES.filter((c) => c.pathParams.length > 0)) {
    it(`${c.id}`, async () => {
      for (const value of HOSTILE) {
        const path = c.path.replace(/\{[^}]+\}/g, value).replace(/^\/api\/v2/, "");
        const body = c.body ? sample(c.body) : undefined;
        const res = await call(c.method, path, { token: admin.token, body });
        expect(res.status, `${value}: ${await res.clone().text()}`).toBeLessThan(500);
        if (res.status >= 400) {
          expect(res.headers.get("Content-Type")).toMatch(/^application\/json/);
          assertErrorShape(await json(res));
        }
      }
    });
  }
});

describe("access, from each route's `access`", () => {
  it("every authenticated route declares who may call it", () => {
    expect(CASES.filter((c) => c.authenticated && c.access === undefined).map((c) => c.id)).toEqual([]);
  });

  for (const c of CASES.filter((c) => c.authenticated && c.access !== "anyone")) {
    it(`${c.id} (${c.access}): a member never succeeds`, async () => {
      const target = c.path.includes("{user}") ? otherMember.id : "me";
      const body = c.body ? sample(c.body) : undefined;
      await rejectedWithoutChange(() => call(c.method, apiPath(c.path, target), { token: member.token, body }));
    });
  }

  for (const c of CASES.filter((c) => c.access === "owner" || c.access === "config-reader" || c.access === "audit-reader")) {
    it(`${c.id} (${c.access}): a user-admin never succeeds`, async () => {
      const target = c.path.includes("{user}") ? otherMember.id : "me";
      const body = c.body ? sample(c.body) : undefined;
      await rejectedWithoutChange(() => call(c.method, apiPath(c.path, target), { token: userAdmin.token, body }));
    });
  }

  for (const c of CASES.filter((c) => c.authenticated && c.path.includes("{user}"))) {
    it(`${c.id}: a member never acts on another member`, async () => {
      const body = c.body ? sample(c.body) : undefined;
      const res = await call(c.method, apiPath(c.path, otherMember.id), { token: member.token, body });
      await expectRejected(res, { status: [403, 404] });
    });
  }

  for (const c of CASES.filter((c) => c.access === "anyone")) {
    it(`${c.id} (anyone): a member acting on itself is not refused`, async () => {
      // A fresh member each time: some of these end the caller's own sessions.
      const self = await createUser();
      const body = c.body ? sample(c.body) : undefined;
      const headers = c.id.endsWith("/watch") ? { Upgrade: "websocket" } : undefined;
      const res = await call(c.method, apiPath(c.path), { token: self.token, body, headers });
      if (res.webSocket) {
        res.webSocket.accept();
        res.webSocket.close();
        expect(res.status).toBe(101);
        return;
      }
      expect([401, 403], `${res.status}: ${await res.clone().text()}`).not.toContain(res.status);
    });
  }

  it("the matrix covers every operation of the document", () => {
    const documented = Object.entries(document.paths).flatMap(([path, item]) =>
      Object.keys(item)
        .filter((m) => m !== "head" && m !== "options")
        .map((m) => `${m.toUpperCase()} ${path}`),
    );
    expect(CASES.map((c) => c.id).sort()).toEqual(documented.sort());
  });
});
