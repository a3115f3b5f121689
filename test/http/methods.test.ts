import { describe, expect, it } from "vitest";
import { app } from "../../src/app";
import { Messages } from "../../src/http/errors";
import { buildOpenApiDocument } from "../../src/openapi/document";
import { BASE, call, expectError, owner } from "../helpers";

const document = buildOpenApiDocument(app.routes, { serverUrl: BASE });
const METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] as const;

/** A concrete request path for a documented one: every parameter a value that is no literal of any route. */
const concrete = (path: string) => path.replace(/\{[^}]+\}/g, "someone-else");

/** The methods the document gives a path, as `Allow` names them. */
const documented = (path: string) => Object.keys(document.paths[path] ?? {}).map((m) => m.toUpperCase());

const allowOf = (res: Response) =>
  (res.headers.get("Allow") ?? "")
    .split(",")
    .map((m) => m.trim())
    .filter((m) => m !== "")
    .sort();

describe('405 with the exact Allow on every documented path (docs/api.md, "Conventions")', () => {
  it("every documented path, asked with each method it does not serve → 405 in the error shape, Allow = the documented methods", async () => {
    const paths = Object.keys(document.paths);
    expect(paths.length).toBeGreaterThan(40);
    for (const path of paths) {
      const served = documented(path);
      for (const method of METHODS.filter((m) => !served.includes(m))) {
        const res = await call(method, `${BASE}${concrete(path)}`);
        expect(res.status, `${method} ${path}`).toBe(405);
        expect(allowOf(res), `Allow of ${method} ${path}`).toEqual([...served].sort());
        if (method !== "HEAD") await expectError(res, 405, Messages.methodNotAllowed);
      }
    }
  });

  it("OPTIONS is listed in Allow, and answered, on every /api path; HEAD wherever GET is", async () => {
    for (const path of Object.keys(document.paths)) {
      const served = documented(path);
      if (served.includes("GET")) expect(served, path).toContain("HEAD");
      if (!path.startsWith("/api/")) continue;
      expect(served, path).toContain("OPTIONS");
      expect((await call("OPTIONS", `${BASE}${concrete(path)}`)).status, path).toBe(204);
    }
  });

  it("a literal path is never handed to the {user} or {id} route: its own methods only", async () => {
    const { token } = await owner();
    const cases: [method: string, path: string, allow: string][] = [
      ["GET", "/users/login", "OPTIONS, POST"],
      ["DELETE", "/users/login", "OPTIONS, POST"],
      ["PATCH", "/users/login", "OPTIONS, POST"],
      ["GET", "/users/logout", "OPTIONS, POST"],
      ["DELETE", "/users/validate-password", "OPTIONS, POST"],
      ["DELETE", "/users/authmethods", "GET, HEAD, OPTIONS"],
      ["DELETE", "/users/first", "GET, HEAD, OPTIONS, POST"],
      ["DELETE", "/users/me/keys/tokens", "GET, HEAD, OPTIONS, POST"],
    ];
    for (const [method, path, allow] of cases) {
      // With a credential too: the {user} route would otherwise resolve the literal as a username and answer 404.
      const res = await call(method, path, { token });
      await expectError(res, 405, Messages.methodNotAllowed);
      expect(allowOf(res).join(", "), `${method} ${path}`).toBe(allow);
    }
  });

  it("a method a path serves still answers its own 404 (no such user): no Allow", async () => {
    const { token } = await owner();
    const res = await call("GET", "/users/nobody-by-this-name", { token });
    expect(res.status).toBe(404);
    expect(res.headers.get("Allow")).toBeNull();
  });
});
