/**
 * Every authenticated route checks the scope it declares (docs/authorization.md, "API token scopes"), read from the
 * routes' own metadata (`describeRoute({ scope })`), so a new route is checked the moment it exists. For each route,
 * an owner's token carrying every `<resource>:<action>` scope except the declared one is refused with 403, and the
 * refusal names that scope: the route needs exactly what it says. The request is otherwise valid — a body generated
 * from the documented schema, the caller itself on an `anyone` route through `{user}`, another member on an admin
 * route — so the refusal can only come from the missing scope. A route that declares `"none"` answers whatever the
 * token's scopes.
 */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { app } from "../../src/app";
import { issueKey } from "../../src/auth/keys";
import { type Action, EXTERNAL_SCOPES, type ResourceType } from "../../src/authz/catalog";
import { AuthzMessages } from "../../src/authz/messages";
import { database } from "../../src/db/client";
import { operationsOf } from "../../src/openapi/document";
import { apiPath, deref, document, sample } from "../fixtures/requests";
import { call, createUser, json, owner, type TestUser } from "../helpers";

/** Every scope that names one action on one resource type: no `all`, no `<resource>:*`. */
const NARROW_SCOPES = EXTERNAL_SCOPES.filter((s) => s !== "all" && !s.endsWith(":*"));

const ROUTES = operationsOf(app.routes)
  .filter((op) => op.authenticated)
  .map((op) => {
    const body = document.paths[op.path]?.[op.method]?.requestBody?.content["application/json"].schema;
    return {
      id: `${op.method.toUpperCase()} ${op.path}`,
      method: op.method.toUpperCase(),
      path: op.path,
      access: op.doc.access,
      scope: op.doc.scope,
      body: body === undefined ? undefined : sample(deref(body)),
      headers: (op.path.endsWith("/watch") ? { Upgrade: "websocket" } : {}) as Record<string, string>,
    };
  });

let admin: { token: string; id: string };
let member: TestUser;

/**
 * An owner's API token with exactly these scopes, issued straight into D1: through the API, token creation is rate
 * limited, and every route needs a token of its own.
 */
async function tokenWith(scopes: string[]): Promise<string> {
  const key = await issueKey(database(env.DB), {
    userId: admin.id,
    loginType: "token",
    lifetimeMs: 60 * 60 * 1000,
    scopes,
    tokenName: `scopes-${crypto.randomUUID().slice(0, 8)}`,
  });
  await key.insert;
  return key.token;
}

beforeAll(async () => {
  admin = await owner();
  member = await createUser();
});

describe("every route checks the scope it declares (docs/authorization.md, API token scopes)", () => {
  it("every authenticated route declares its scope", () => {
    expect(ROUTES.filter((r) => r.scope === undefined).map((r) => r.id)).toEqual([]);
  });

  for (const route of ROUTES) {
    const { scope } = route;
    if (scope === undefined) continue;
    if (scope === "none") {
      it(`${route.id}: answers a token with one unrelated scope`, async () => {
        const token = await tokenWith(["organization_member:create"]);
        const res = await call(route.method, apiPath(route.path), { token, body: route.body, headers: route.headers });
        expect(res.status, await res.clone().text()).toBeLessThan(300);
      });
      continue;
    }
    it(`${route.id}: 403 for a token with every scope but ${scope}`, async () => {
      const token = await tokenWith(NARROW_SCOPES.filter((s) => s !== scope));
      // On `{user}`: the caller itself where anyone may act on themself; another member on the admin routes (the
      // token can read users, so the target is found and only the missing scope refuses).
      const target = route.access === "anyone" ? "me" : member.id;
      const res = await call(route.method, apiPath(route.path, target), { token, body: route.body, headers: route.headers });
      const text = await res.clone().text();
      expect(res.status, text).toBe(403);
      const [type, action] = scope.split(":") as [ResourceType, Action];
      expect((await json<{ detail?: string }>(res)).detail, text).toBe(AuthzMessages.scopeMissing(type, action));
    });
  }

  it("POST /authcheck: a narrowed token's answers are limited by its scopes", async () => {
    const token = await tokenWith(["organization_member:create"]);
    const res = await call("POST", "/authcheck", { token, body: { checks: { a: { action: "read", object: { resource_type: "user" } } } } });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ a: false });
  });
});
