/**
 * The OpenAPI document, from the outside: the real Worker serves it, it is committed as `docs/openapi.json` so that
 * every change to the interface shows in review (a snapshot: `npx vitest run --config vitest.node.config.ts -u`
 * rewrites it), and Redocly's recommended rules find no error in it (docs/api.md, "The OpenAPI document").
 */
import { createConfig, lintFromString } from "@redocly/openapi-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHerald } from "./harness";

let herald: Awaited<ReturnType<typeof startHerald>>;
let text = "";

beforeAll(async () => {
  herald = await startHerald();
  const res = await fetch(new URL("/api/v2/openapi.json", herald.url));
  expect(res.status).toBe(200);
  text = await res.text();
});

afterAll(async () => {
  await herald?.server.close();
});

/**
 * Warnings of the recommended rules that are deliberate, by rule, each with why (docs/api.md lists them too).
 * Anything else — and every error — fails.
 */
const DELIBERATE_WARNINGS: Record<string, { why: string; where: RegExp }> = {
  // The test's ACCESS_URL is the local one; a deployment's document names its own https URL.
  "no-server-example.com": { why: "the local run's ACCESS_URL", where: /^#\/servers\/0\/url$/ },
  // Routes that read no input and need no credential cannot fail with a 4xx; neither can a CORS preflight.
  "operation-4xx-response": {
    why: "no input, no credential",
    where:
      /^#\/paths\/(~1healthz|~1|~1reset-password|~1reset-password~1change|~1not-me|~1deployment~1notifications|~1deployment~1users|~1embed~1inbox\.js|~1sw\.js|~1api~1v2~1openapi\.json|~1api~1v2~1auth~1scopes|~1api~1v2~1users~1authmethods)\/(get|head)\/responses$|\/options\/responses$/,
  },
  // The provider callbacks answer 302 (a browser redirect) and the watch 101 (a WebSocket upgrade), never 2xx.
  "operation-2xx-response": {
    why: "redirects and the WebSocket upgrade",
    where:
      /^#\/paths\/(~1api~1v2~1users~1oidc~1callback|~1api~1v2~1users~1oauth2~1github~1callback|~1api~1v2~1notifications~1inbox~1watch)\/(get|head)\/responses$/,
  },
};

/** Who may call an operation, by its `x-herald-access` (docs/authorization.md, "Site roles"). */
const WHO: Record<string, string> = {
  anyone: "any signed-in user, on their own resources",
  reader: "owner, user-admin, auditor",
  "user-admin": "owner, user-admin",
  "config-reader": "owner, auditor",
  "audit-reader": "owner, auditor",
  owner: "owner",
};

/**
 * docs/endpoints.md: every operation with who may call it and the scope a token needs, read from the document's
 * `x-herald-access` and `x-herald-scope`, which come from each route's `describeRoute({ access, scope })`.
 */
function endpointsPage(doc: {
  paths: Record<string, Record<string, { summary?: string; "x-herald-access"?: string; "x-herald-scope"?: string; "x-herald-step-up"?: boolean }>>;
}): string {
  const rows = Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => method !== "head" && method !== "options")
      .map(([method, op]) => {
        const access = op["x-herald-access"];
        const scope = op["x-herald-scope"];
        const role = access === undefined ? "anyone, without a credential" : (WHO[access] ?? access);
        const who = op["x-herald-step-up"] ? `${role}; a login session needs a recent sign-in ([step-up](second-factor.md#step-up))` : role;
        const needs = scope === undefined ? "—" : scope === "none" ? "none: it answers about the caller" : `\`${scope}\``;
        return `| \`${method.toUpperCase()} ${path}\` | ${op.summary ?? ""} | ${who} | ${needs} |`;
      }),
  );
  return `# Endpoints

Every operation of the API, who may call it and the scope an API token needs for it. This page is generated from the
routes' own metadata (\`describeRoute({ access, scope })\`, through the OpenAPI document's \`x-herald-access\` and
\`x-herald-scope\`): \`test/node/openapi-document.test.ts\` fails when it is out of date, and
\`npx vitest run --config vitest.node.config.ts test/node/openapi-document.test.ts -u\` rewrites it.

"Who may call it" is who passes the route's role check; handlers add rules of their own (an owner is managed by owners
only, nobody deletes themselves…), listed in [authorization.md](authorization.md#rules-enforced-in-handlers). Routes
marked with step-up (\`x-herald-step-up\`) also refuse a login session that signed in too long ago. The scope
is the one the route's first check asks for; on a \`{user}\` route, the one for acting on oneself.
\`test/endpoints/scopes.test.ts\` proves each route refuses a token that lacks exactly its scope.

| endpoint | what it does | who may call it | scope a token needs |
|---|---|---|---|
${rows.join("\n")}
`;
}

describe("the OpenAPI document", () => {
  it("is committed as docs/openapi.json (a change to it shows in review)", async () => {
    const pretty = `${JSON.stringify(JSON.parse(text), null, 2)}\n`;
    await expect(pretty).toMatchFileSnapshot("../../docs/openapi.json");
  });

  it("lists every endpoint with who may call it and its scope in docs/endpoints.md", async () => {
    await expect(endpointsPage(JSON.parse(text))).toMatchFileSnapshot("../../docs/endpoints.md");
  });

  it("passes Redocly's recommended rules with no error and only the deliberate warnings", async () => {
    const config = await createConfig({ extends: ["recommended"] });
    const problems = await lintFromString({ source: text, absoluteRef: "openapi.json", config });
    const described = problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} (${p.location[0]?.pointer ?? ""})`);
    expect(problems.filter((p) => p.severity === "error").map((p) => `${p.ruleId}: ${p.message} (${p.location[0]?.pointer ?? ""})`)).toEqual([]);
    const deliberate = (ruleId: string, pointer: string) => DELIBERATE_WARNINGS[ruleId]?.where.test(pointer) ?? false;
    const unexpected = problems.filter((p) => p.severity !== "error" && !deliberate(p.ruleId, p.location[0]?.pointer ?? ""));
    expect(
      unexpected.map((p) => `${p.ruleId}: ${p.message} (${p.location[0]?.pointer ?? ""})`),
      described.join("\n"),
    ).toEqual([]);
  });
});
