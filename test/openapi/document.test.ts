import { Ajv2020 } from "ajv/dist/2020.js";
import { beforeAll, describe, expect, it } from "vitest";
import * as z from "zod";
import { app } from "../../src/app";
import { LoginWithPasswordResponse, loginBody, ValidateUserPasswordResponse } from "../../src/auth/schemas";
import { ExternalAPIKeyScopes } from "../../src/authz/schemas";
import { ResponseBody } from "../../src/http/schemas";
import { listInboxQuery, readStatusBody } from "../../src/inbox/schemas";
import { customNotificationBody, NotificationMethodsResponse, NotificationTemplate, settingsBody } from "../../src/notifications/schemas";
import { APIKey, createUserBody, GenerateAPIKeyResponse, User } from "../../src/users/schemas";
import { conformanceProblems } from "../fixtures/conformance";
import { call, json, login, OWNER, owner } from "../helpers";

type Json = { [key: string]: unknown };

const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"] as const;
const PATH_ITEM_KEYS = new Set<string>([...METHODS, "parameters", "summary", "description", "servers", "$ref"]);
const OPTIONS = { target: "draft-2020-12", io: "input", unrepresentable: "any" } as const;

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function obj(value: unknown, where: string): Json {
  if (!isObject(value)) throw new Error(`${where} is not an object`);
  return value;
}

/** JSON Pointer resolution of a local `$ref` (RFC 6901). */
function resolvePointer(doc: Json, ref: string): unknown {
  if (!ref.startsWith("#/")) throw new Error(`non-local $ref ${ref}`);
  let node: unknown = doc;
  for (const raw of ref.slice(2).split("/")) {
    const token = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    if (!isObject(node) || !(token in node)) return undefined;
    node = node[token];
  }
  return node;
}

/** Follows `$ref`s until a concrete object. */
function deref(doc: Json, value: unknown): Json {
  let node = obj(value, "schema");
  for (let i = 0; typeof node.$ref === "string" && i < 10; i++) node = obj(resolvePointer(doc, node.$ref), node.$ref);
  return node;
}

function walk(node: unknown, visit: (key: string, value: unknown, path: string) => void, path = "#"): void {
  if (Array.isArray(node)) {
    for (const [i, item] of node.entries()) walk(item, visit, `${path}/${i}`);
  } else if (isObject(node)) {
    for (const [key, value] of Object.entries(node)) {
      visit(key, value, path);
      walk(value, visit, `${path}/${key}`);
    }
  }
}

interface Op {
  method: string;
  path: string;
  op: Json;
}

function operations(doc: Json): Op[] {
  const out: Op[] = [];
  for (const [path, item] of Object.entries(obj(doc.paths, "paths"))) {
    for (const [method, op] of Object.entries(obj(item, path))) {
      if ((METHODS as readonly string[]).includes(method)) out.push({ method, path, op: obj(op, `${method} ${path}`) });
    }
  }
  return out;
}

/** Hono's `:param` and `:param{regex}` in OpenAPI form; a regex that is a plain alternation expands to its literals. */
function openApiPaths(honoPath: string): string[] {
  let paths = [""];
  for (const segment of honoPath.split("/").slice(1)) {
    const match = /^:(\w+)(?:\{(.+)\})?\??$/.exec(segment);
    let options = [segment];
    if (match) {
      const [, name, regex] = match;
      options = regex !== undefined && /^[\w-]+(\|[\w-]+)*$/.test(regex) ? regex.split("|") : [`{${name}}`];
    }
    paths = paths.flatMap((p) => options.map((o) => `${p}/${o}`));
  }
  return paths;
}

/** zod strips unknown keys, so an exact round trip proves the body has the documented keys and nothing else. */
function expectExact(schema: z.ZodType, value: unknown) {
  expect(schema.parse(value)).toEqual(value);
}

let doc: Json;

beforeAll(async () => {
  const res = await call("GET", "/openapi.json");
  expect(res.status).toBe(200);
  expect(res.headers.get("Content-Type")).toMatch(/^application\/json/);
  doc = await json<Json>(res);
});

describe("GET /api/v2/openapi.json", () => {
  it("is public and the same document on every call", async () => {
    const again = await call("GET", "/openapi.json");
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual(doc);
  });

  it("is structurally an OpenAPI 3.1 document", () => {
    expect(doc.openapi).toMatch(/^3\.1\.\d+$/);
    const info = obj(doc.info, "info");
    expect(typeof info.title).toBe("string");
    expect(typeof info.version).toBe("string");
    const schemes = obj(obj(doc.components, "components").securitySchemes, "securitySchemes");
    const tags = new Set((doc.tags as Json[]).map((t) => t.name));

    const ids = new Set<string>();
    for (const [path, item] of Object.entries(obj(doc.paths, "paths"))) {
      expect(path.startsWith("/"), path).toBe(true);
      for (const key of Object.keys(obj(item, path))) expect(PATH_ITEM_KEYS.has(key), `${path}: ${key}`).toBe(true);
    }
    for (const { method, path, op } of operations(doc)) {
      const where = `${method.toUpperCase()} ${path}`;
      expect(typeof op.operationId, where).toBe("string");
      expect(ids.has(op.operationId as string), `duplicate operationId ${String(op.operationId)}`).toBe(false);
      ids.add(op.operationId as string);
      for (const tag of op.tags as string[]) expect(tags.has(tag), `${where}: tag ${tag}`).toBe(true);

      // Responses: at least one, valid status keys, each with a description and schemas for its content.
      const responses = obj(op.responses, `${where} responses`);
      expect(Object.keys(responses).length, where).toBeGreaterThan(0);
      for (const [status, response] of Object.entries(responses)) {
        expect(status, where).toMatch(/^([1-5]\d\d|[1-5]XX|default)$/);
        const r = deref(doc, response);
        expect(typeof r.description, `${where} ${status}`).toBe("string");
        for (const media of Object.values(obj(r.content ?? {}, "content"))) expect(isObject(obj(media, "media").schema)).toBe(true);
        if (Number(status) >= 400 && method !== "head") {
          // Every error uses the shared Response schema.
          const schema = obj(obj(obj(r.content, `${where} ${status}`)["application/json"], "json").schema, "schema");
          expect(schema.$ref, `${where} ${status}`).toBe("#/components/schemas/Response");
        }
      }

      // Security: public is explicit, authenticated routes document 401.
      const security = op.security as Json[];
      expect(Array.isArray(security), where).toBe(true);
      for (const requirement of security) for (const name of Object.keys(requirement)) expect(name in schemes, name).toBe(true);
      if (security.length > 0) expect(responses, where).toHaveProperty("401");

      // Bodies: application/json with a schema, and their 400 and 413.
      if (op.requestBody !== undefined) {
        const body = deref(doc, op.requestBody);
        const media = obj(obj(body.content, `${where} content`)["application/json"], `${where} application/json`);
        expect(isObject(media.schema), where).toBe(true);
        expect(responses, where).toHaveProperty("400");
        expect(responses, where).toHaveProperty("413");
      }

      // Parameters: well formed, unique, and path templating matches the path parameters exactly.
      const params = ((op.parameters ?? []) as unknown[]).map((p) => deref(doc, p));
      const seen = new Set<string>();
      for (const p of params) {
        expect(["query", "header", "path", "cookie"]).toContain(p.in);
        expect(typeof p.name).toBe("string");
        expect(isObject(p.schema), `${where} ${String(p.name)}`).toBe(true);
        expect(seen.has(`${String(p.in)}:${String(p.name)}`)).toBe(false);
        seen.add(`${String(p.in)}:${String(p.name)}`);
        if (p.in === "path") expect(p.required, `${where} ${String(p.name)}`).toBe(true);
        if (p.in === "query") expect(responses, `${where} has query parameters`).toHaveProperty("400");
      }
      const templated = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]).sort();
      expect(
        params
          .filter((p) => p.in === "path")
          .map((p) => p.name)
          .sort(),
        where,
      ).toEqual(templated);
    }
  });

  it("resolves every $ref, and carries no stray $id, $schema or $defs", () => {
    const refs: string[] = [];
    walk(doc, (key, value, path) => {
      if (key === "$ref") {
        expect(typeof value, path).toBe("string");
        refs.push(value as string);
        expect(resolvePointer(doc, value as string), `${path}: ${String(value)}`).toBeDefined();
      }
      expect(["$id", "$schema", "$defs"], path).not.toContain(key);
    });
    expect(refs.length).toBeGreaterThan(0);
  });

  it("documents exactly the routes the app serves", () => {
    const served = new Set<string>();
    for (const route of app.routes) {
      if (route.method === "ALL") continue; // middleware
      for (const path of openApiPaths(route.path)) served.add(`${route.method} ${path}`);
    }
    const all = operations(doc);
    const documented = all
      .filter(({ method }) => method !== "head" && method !== "options")
      .map(({ method, path }) => `${method.toUpperCase()} ${path}`);
    expect(new Set(documented).size).toBe(documented.length);
    expect([...documented].sort()).toEqual([...served].sort());
    // HEAD wherever GET is served (Hono answers it), OPTIONS (the CORS preflight) on every /api path.
    const has = (method: string, path: string) => all.some((o) => o.method === method && o.path === path);
    for (const { method, path } of all) {
      if (method === "get") expect(has("head", path), `HEAD ${path}`).toBe(true);
      if (path.startsWith("/api/")) expect(has("options", path), `OPTIONS ${path}`).toBe(true);
    }
    // The watch, the callbacks and the status route are in it (the hard ones to describe).
    expect(served).toContain("GET /api/v2/notifications/inbox/watch");
    expect(served).toContain("PUT /api/v2/users/{user}/status/suspend");
    expect(served).toContain("PUT /api/v2/users/{user}/status/activate");
  });

  it("generates request bodies and queries from the routes' own zod schemas", () => {
    const paths = obj(doc.paths, "paths");
    const rawBodyOf = (path: string, method: string) => {
      const op = obj(obj(paths[path], path)[method], `${method} ${path}`);
      return deref(doc, obj(obj(deref(doc, op.requestBody).content, "content")["application/json"], "json").schema);
    };
    // The document also shows the examples some schemas carry (`exemplified` in src/openapi/registry.ts): they are
    // documentation, and what is compared here is the rules.
    const withoutExamples = (node: unknown): unknown =>
      Array.isArray(node)
        ? node.map(withoutExamples)
        : node !== null && typeof node === "object"
          ? Object.fromEntries(Object.entries(node).flatMap(([k, v]) => (k === "examples" ? [] : [[k, withoutExamples(v)]])))
          : node;
    const bodyOf = (path: string, method: string) => withoutExamples(rawBodyOf(path, method)) as Json;
    const expected = (schema: z.ZodType) => {
      const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, OPTIONS);
      return rest;
    };
    const login = obj(obj(paths["/api/v2/users/login"], "login").post, "login post");
    expect(obj(obj(obj(login.requestBody, "body").content, "c")["application/json"], "json").schema).toEqual({
      $ref: "#/components/schemas/LoginWithPasswordRequest",
    });
    expect(bodyOf("/api/v2/users/login", "post")).toEqual(expected(loginBody));
    // A request body's defaults are stated in descriptions, not as `default` (docs/api.md, "The OpenAPI document").
    const described = (node: unknown): unknown =>
      Array.isArray(node)
        ? node.map(described)
        : isObject(node)
          ? "default" in node && "type" in node
            ? described({
                ...Object.fromEntries(Object.entries(node).filter(([k]) => k !== "default")),
                description: `Default: \`${JSON.stringify(node.default)}\`.`,
              })
            : Object.fromEntries(Object.entries(node).map(([k, v]) => [k, described(v)]))
          : node;
    expect(bodyOf("/api/v2/notifications/custom", "post")).toEqual(described(expected(customNotificationBody)));
    expect(bodyOf("/api/v2/notifications/inbox/{id}/read-status", "put")).toEqual(expected(readStatusBody));
    const { description: _description, ...settings } = bodyOf("/api/v2/notifications/settings", "put");
    expect(settings).toEqual(expected(settingsBody));

    const list = obj(obj(paths["/api/v2/notifications/inbox"], "inbox").get, "inbox get");
    const params = (list.parameters as Json[]).filter((p) => p.in === "query");
    expect(params.map((p) => p.name).sort()).toEqual(Object.keys(listInboxQuery.shape).sort());
    const generated = obj(expected(listInboxQuery).properties, "properties");
    for (const p of params) {
      const { description: _d, ...schema } = generated[p.name as string] as Json;
      expect(p.schema, String(p.name)).toEqual(schema);
    }
  });

  it("documents the special responses: 101, 302, 304, 200 without body, 500", () => {
    const paths = obj(doc.paths, "paths");
    const responses = (path: string, method: string) => obj(obj(obj(paths[path], path)[method], path).responses, path);
    expect(Object.keys(responses("/api/v2/notifications/inbox/watch", "get"))).toContain("101");
    expect(obj(obj(paths["/api/v2/notifications/inbox/watch"], "w").get, "w").description).toMatch(/101/);
    expect(Object.keys(responses("/api/v2/users/oidc/callback", "get"))).toContain("302");
    expect(Object.keys(responses("/api/v2/users/oauth2/github/callback", "get"))).toContain("302");
    const settings = responses("/api/v2/notifications/settings", "put");
    expect(obj(settings["304"], "304").content).toBeUndefined();
    const test = responses("/api/v2/notifications/test", "post");
    expect(obj(test["200"], "200").content).toBeUndefined();
    expect(Object.keys(responses("/api/v2/notifications/custom", "post"))).toEqual(expect.arrayContaining(["204", "400", "403", "500"]));
    expect(Object.keys(responses("/api/v2/notifications/templates/custom", "get"))).toContain("500");
    expect(Object.keys(responses("/api/v2/notifications/templates/system", "get"))).toContain("500");
    expect(Object.keys(responses("/api/v2/users/login", "post"))).toEqual(expect.arrayContaining(["201", "400", "401", "413", "429"]));
  });
});

describe("documented response schemas match what the routes send", () => {
  it("for sign-in, users, keys, scopes, settings and templates", async () => {
    const admin = await owner();
    const signIn = await call("POST", "/users/login", { body: { email: OWNER.email, password: OWNER.password } });
    expect(signIn.status).toBe(201);
    expectExact(LoginWithPasswordResponse, await signIn.json());
    const token = admin.token;

    expectExact(User, await json(await call("GET", "/users/me", { token })));
    expectExact(ExternalAPIKeyScopes, await json(await call("GET", "/auth/scopes")));
    expectExact(z.array(NotificationMethodsResponse), await (await call("GET", "/notifications/dispatch-methods", { token })).json());
    expectExact(settingsBody, await json(await call("GET", "/notifications/settings", { token })));
    const templates = await (await call("GET", "/notifications/templates/system", { token })).json();
    expect((templates as unknown[]).length).toBeGreaterThan(0);
    expectExact(z.array(NotificationTemplate), templates);
    expectExact(ValidateUserPasswordResponse, await json(await call("POST", "/users/validate-password", { token, body: { password: "x" } })));

    const created = await call("POST", "/users/me/keys/tokens", { token, body: { token_name: `openapi-${crypto.randomUUID().slice(0, 8)}` } });
    expect(created.status).toBe(201);
    expectExact(GenerateAPIKeyResponse, await created.json());
    expectExact(z.array(APIKey), await (await call("GET", "/users/me/keys/tokens", { token })).json());

    const error = await call("POST", "/users/login", { body: { email: "not-an-email" } });
    expect(error.status).toBe(400);
    expectExact(ResponseBody, await error.json());
    // A fresh sign-in still works with the documented body (the helper asserts the 201).
    expect(await login(OWNER.email, OWNER.password)).toMatch(/^[0-9A-Za-z]{10}-[0-9A-Za-z]{22}$/);
  });
});

describe("responses are checked against the document (test/fixtures/conformance.ts)", () => {
  const me = "http://localhost/api/v2/users/me";
  const jsonResponse = (status: number, body: unknown) =>
    new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });

  it("accepts what the route really sends", async () => {
    const { token } = await owner();
    const res = await call("GET", "/users/me", { token });
    expect(await conformanceProblems("GET", me, res)).toEqual([]);
  });

  it("fails a body that drifted from its schema: a new field, a missing one, a wrong type", async () => {
    const { token } = await owner();
    const real = await json<Record<string, unknown>>(await call("GET", "/users/me", { token }));
    const { roles: _roles, ...missing } = real;
    for (const drifted of [{ ...real, nickname: "x" }, missing, { ...real, status: 1 }]) {
      const problems = await conformanceProblems("GET", me, jsonResponse(200, drifted));
      expect(problems.length, JSON.stringify(drifted)).toBeGreaterThan(0);
      expect(problems[0]).toContain("GET /api/v2/users/{user} → 200");
    }
  });

  it("fails an undocumented status, a body where none is documented, and the wrong Content-Type", async () => {
    expect(await conformanceProblems("GET", me, jsonResponse(409, { message: "Conflict." }))).toEqual([
      "GET /api/v2/users/{user} → 409: status 409 is not documented for getUser",
    ]);
    const noBody = await conformanceProblems("POST", "http://localhost/api/v2/notifications/test", new Response("{}", { status: 200 }));
    expect(noBody.length).toBe(1);
    const text = await conformanceProblems("GET", me, new Response("{}", { status: 200, headers: { "Content-Type": "text/plain" } }));
    expect(text[0]).toContain("Content-Type text/plain");
  });

  it("the document's CreateUserRequest accepts exactly the bodies the validator accepts", () => {
    const schema = obj(obj(obj(doc.components, "components").schemas, "schemas").CreateUserRequest, "CreateUserRequest");
    const validate = new Ajv2020({ strict: false }).compile({ ...schema, $defs: undefined });
    const base = { username: "ann", email: "ann@herald.test" };
    const bodies: Record<string, unknown>[] = [
      { ...base, password: "a-password" },
      { ...base },
      { username: "ann", password: "a-password" },
      { ...base, login_type: "password", password: "p" },
      { ...base, login_type: "oidc" },
      { ...base, login_type: "oidc", password: "p" },
      { ...base, login_type: "none" },
      { username: "ann", login_type: "github" },
      { username: "svc", service_account: true },
      { username: "svc", service_account: true, login_type: "none", email: "svc@herald.test" },
      { username: "svc", service_account: true, login_type: "password" },
      { username: "svc", service_account: true, password: "p" },
      { ...base, service_account: false, password: "p" },
      { ...base, service_account: false },
    ];
    for (const body of bodies) expect(validate(body), JSON.stringify(body)).toBe(createUserBody.safeParse(body).success);
  });
});
