import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { Messages } from "../../src/http/errors";
import { call, createUser, expectError, fetchApp, json, owner } from "../helpers";

describe('conventions (docs/api.md, "Conventions")', () => {
  it("answers an unknown route under /api/v2 with 404 Route not found.", async () => {
    await expectError(await call("GET", "/no/such/route"), 404, Messages.routeNotFound);
  });

  it("answers a known path with a wrong method with 405 and Allow", async () => {
    const res = await call("DELETE", "/auth/scopes");
    const body = await expectError(res, 405);
    expect(body.message).toBe(Messages.methodNotAllowed);
    expect(res.headers.get("Allow")).toContain("GET");
    const authcheck = await call("GET", "/authcheck");
    expect(authcheck.status).toBe(405);
    expect(authcheck.headers.get("Allow")).toBe("POST, OPTIONS");
  });

  it("a trailing slash is another path: 404, not a 405 whose Allow names the method used", async () => {
    const { token } = await owner();
    const res = await call("GET", "/notifications/inbox/", { token });
    await expectError(res, 404, Messages.routeNotFound);
    expect(res.headers.get("Allow")).toBeNull();
  });

  it("rejects bodies over 1 MiB with 413 in the error shape", async () => {
    const { token } = await owner();
    const res = await call("POST", "/authcheck", { token, raw: JSON.stringify({ checks: {}, pad: "x".repeat(1024 * 1024) }) });
    await expectError(res, 413, Messages.tooLarge);
  });

  it("answers a body that is not JSON with 400 Request body must be valid JSON.", async () => {
    await expectError(await call("POST", "/users/login", { raw: "{not json" }), 400, Messages.badJson);
    await expectError(await call("POST", "/users/login", { raw: "" }), 400, Messages.badJson);
  });

  it("answers schema failures with one validation per bad field, by JSON path", async () => {
    const body = await expectError(await call("POST", "/users/login", { body: { email: "nope", password: 5 } }), 400, Messages.validation);
    expect(body.validations?.map((v) => v.field).sort()).toEqual(["email", "password"]);
  });

  it("sets a request id and secure headers on every response", async () => {
    const res = await call("GET", "/auth/scopes");
    expect(res.headers.get("X-Request-Id")).toBeTruthy();
    expect(res.headers.get("X-Content-Type-Options")).toBe("nosniff");
    expect(res.headers.get("Cache-Control")).toBe("no-store");
  });

  it("HSTS for a year and a load-nothing CSP on API answers; the dashboard page keeps its own policy (ASVS 3.4.1, 3.4.3, 3.4.6)", async () => {
    for (const res of [await call("GET", "/auth/scopes"), await call("GET", "/users/me"), await call("GET", "/nowhere")]) {
      expect(res.headers.get("Strict-Transport-Security")).toBe("max-age=31536000; includeSubDomains");
      expect(res.headers.get("Content-Security-Policy")).toBe("default-src 'none'; frame-ancestors 'none'; base-uri 'none'");
    }
    const page = await call("GET", "http://localhost/");
    expect(page.headers.get("Content-Security-Policy")).toContain("script-src 'self'");
  });

  it("with an https ACCESS_URL, plain http to that host is refused: 403 for the API, 308 to https for pages (ASVS 4.1.2, 12.2.1)", async () => {
    const secure = { ...env, ACCESS_URL: "https://herald.example.com" };
    const ctx = createExecutionContext();
    const api = await fetchApp(new Request("http://herald.example.com/api/v2/users/login", { method: "POST", body: "{}" }), secure, ctx);
    await expectError(api, 403, Messages.httpsOnly);
    const page = await fetchApp(new Request("http://herald.example.com/?x=1"), secure, ctx);
    expect(page.status).toBe(308);
    expect(page.headers.get("Location")).toBe("https://herald.example.com/?x=1");
    // Over https, and on another host (a local run), nothing changes.
    expect((await fetchApp(new Request("https://herald.example.com/api/v2/auth/scopes"), secure, ctx)).status).toBe(200);
    expect((await fetchApp(new Request("http://localhost/api/v2/auth/scopes"), secure, ctx)).status).toBe(200);
    await waitOnExecutionContext(ctx);
  });

  it("over https the session cookie is __Host- prefixed, Secure, Path=/, and is the one read back (docs/api.md, Conventions)", async () => {
    const { email, password } = await createUser();
    const secure = { ...env, ACCESS_URL: "https://herald.example.com" };
    const ctx = createExecutionContext();
    const signIn = await fetchApp(
      new Request("https://herald.example.com/api/v2/users/login", {
        method: "POST",
        body: JSON.stringify({ email, password }),
        headers: { "CF-Connecting-IP": "198.51.100.7" },
      }),
      secure,
      ctx,
    );
    expect(signIn.status).toBe(201);
    const cookie = signIn.headers.get("Set-Cookie") ?? "";
    expect(cookie).toMatch(/^__Host-service_session_token=[0-9A-Za-z]{10}-[0-9A-Za-z]{22};/);
    expect(cookie).toMatch(/; Path=\/(;|$)/);
    expect(cookie).toMatch(/; Secure/);
    expect(cookie).toMatch(/; HttpOnly/);
    const pair = cookie.split(";")[0] ?? "";
    const me = await fetchApp(new Request("https://herald.example.com/api/v2/users/me", { headers: { Cookie: pair } }), secure, ctx);
    expect(me.status).toBe(200);
    // The unprefixed name is not a session over https: a plain-http page on the host could have planted it.
    const planted = await fetchApp(
      new Request("https://herald.example.com/api/v2/users/me", { headers: { Cookie: pair.replace("__Host-", "") } }),
      secure,
      ctx,
    );
    expect(planted.status).toBe(401);
    await waitOnExecutionContext(ctx);
  });

  it("logs every refused credential, permission and rate limit as one JSON line without secrets (ASVS 16.3)", async () => {
    const lines: Record<string, unknown>[] = [];
    const spy = vi.spyOn(console, "log").mockImplementation((line: unknown) => {
      if (typeof line === "string" && line.startsWith('{"herald":"security"')) lines.push(JSON.parse(line) as Record<string, unknown>);
    });
    try {
      const member = await createUser();
      const forged = `${member.token.slice(0, 10)}-${"x".repeat(22)}`;
      await call("GET", "/users/me", { token: forged, headers: { "CF-Connecting-IP": "203.0.113.9", "X-Request-Id": "trace-0001-abc" } });
      await call("POST", "/users/login", { body: { email: member.email, password: "not-the-password-at-all" } });
      await call("GET", "/notifications/settings", { token: member.token });
      await call("PUT", "/users/me/password", {
        token: member.token,
        body: { old_password: "wrong-old-password", password: "brand-new-passphrase-88" },
      });
      await call("PUT", "/notifications/settings", { token: member.token, body: { notifier_paused: true } });
    } finally {
      spy.mockRestore();
    }
    // A member may read the settings: that 200 leaves no line.
    expect(lines.map((l) => [l.event, l.status, l.method, l.path])).toEqual([
      ["authentication_failed", 401, "GET", "/api/v2/users/me"],
      ["authentication_failed", 401, "POST", "/api/v2/users/login"],
      ["authentication_failed", 400, "PUT", "/api/v2/users/me/password"],
      ["access_denied", 403, "PUT", "/api/v2/notifications/settings"],
    ]);
    expect(lines[0]).toMatchObject({ ip: "203.0.113.9", request_id: "trace-0001-abc", user_id: null });
    expect(lines.at(-1)).toMatchObject({ event: "access_denied", user_id: expect.any(String), key_id: expect.any(String) });
    expect(JSON.stringify(lines)).not.toMatch(/x{22}|not-the-password|wrong-old-password/);
  });

  it("allows CORS only for CORS_ALLOWED_ORIGINS", async () => {
    const withCors = { ...env, CORS_ALLOWED_ORIGINS: "https://dash.example.com" };
    const preflight = (origin: string) =>
      new Request("http://localhost/api/v2/authcheck", {
        method: "OPTIONS",
        headers: { Origin: origin, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "Service-Session-Token" },
      });
    const ctx = createExecutionContext();
    const allowed = await fetchApp(preflight("https://dash.example.com"), withCors, ctx);
    expect(allowed.headers.get("Access-Control-Allow-Origin")).toBe("https://dash.example.com");
    expect(allowed.headers.get("Access-Control-Allow-Credentials")).toBe("true");
    const denied = await fetchApp(preflight("https://evil.example.com"), withCors, ctx);
    expect(denied.headers.get("Access-Control-Allow-Origin")).toBeNull();
    await waitOnExecutionContext(ctx);
  });

  // Herald's own CORS step (src/http/cors.ts) answers what Hono's cors middleware answered before it, plus the D1
  // bookmark header (docs/consistency.md).
  it("answers a preflight and a cross-origin call with the same CORS headers as Hono's middleware", async () => {
    const withCors = { ...env, CORS_ALLOWED_ORIGINS: "https://dash.example.com" };
    const ctx = createExecutionContext();
    const preflight = await fetchApp(
      new Request("http://localhost/api/v2/users/me", {
        method: "OPTIONS",
        headers: { Origin: "https://dash.example.com", "Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "Authorization" },
      }),
      withCors,
      ctx,
    );
    expect(preflight.status).toBe(204);
    expect(Object.fromEntries([...preflight.headers].filter(([name]) => name.startsWith("access-control-") || name === "vary"))).toEqual({
      "access-control-allow-origin": "https://dash.example.com",
      "access-control-allow-credentials": "true",
      "access-control-allow-headers": "Content-Type,Service-Session-Token,Authorization,Herald-D1-Bookmark",
      "access-control-allow-methods": "GET,POST,PUT,PATCH,DELETE",
      "access-control-expose-headers": "X-Request-Id,Retry-After,Herald-D1-Bookmark",
      "access-control-max-age": "600",
      vary: "Origin, Access-Control-Request-Headers",
    });
    // A preflight is an answer like any other: it carries the security headers and the request id.
    expect(preflight.headers.get("X-Content-Type-Options")).toBe("nosniff");
    expect(preflight.headers.get("X-Request-Id")).toMatch(/^[0-9a-f-]{36}$/);

    for (const origin of ["https://dash.example.com", "https://evil.example.com", undefined]) {
      const res = await fetchApp(new Request("http://localhost/api/v2/users/me", { headers: origin ? { Origin: origin } : {} }), withCors, ctx);
      expect(res.status).toBe(401);
      expect(res.headers.get("Access-Control-Allow-Origin")).toBe(origin === "https://dash.example.com" ? origin : null);
      expect(res.headers.get("Access-Control-Allow-Credentials")).toBe("true");
      expect(res.headers.get("Access-Control-Expose-Headers")).toBe("X-Request-Id,Retry-After,Herald-D1-Bookmark");
      expect(res.headers.get("Vary")).toBe("Origin");
      expect(res.headers.get("Cache-Control")).toBe("no-store");
    }
    await waitOnExecutionContext(ctx);
  });

  it("sends the security headers on every kind of answer, whoever built it", async () => {
    const ctx = createExecutionContext();
    const secure = { ...env, ACCESS_URL: "https://herald.example.com" };
    const answers = [
      await fetchApp(new Request("http://localhost/healthz"), env, ctx),
      await fetchApp(new Request("http://localhost/api/v2/nothing-here"), env, ctx),
      await fetchApp(new Request("http://localhost/api/v2/auth/scopes"), { ...env, SECRET_KEY: "short" }, ctx),
      await fetchApp(new Request("http://herald.example.com/api/v2/auth/scopes"), secure, ctx),
      await fetchApp(new Request("http://herald.example.com/"), secure, ctx),
    ];
    expect(answers.map((r) => r.status)).toEqual([200, 404, 500, 403, 308]);
    for (const res of answers) {
      expect(res.headers.get("Strict-Transport-Security")).toBe("max-age=31536000; includeSubDomains");
      expect(res.headers.get("Content-Security-Policy")).toBe("default-src 'none'; frame-ancestors 'none'; base-uri 'none'");
      expect(res.headers.get("X-Frame-Options")).toBe("SAMEORIGIN");
      expect(res.headers.get("X-Request-Id")).not.toBeNull();
    }
    await waitOnExecutionContext(ctx);
  });

  // An upgrade is the one answer the runtime builds (relayed from the inbox object): its headers cannot be changed in
  // place, so the frame copies it once (writableHeaders, src/http/middleware.ts) and every later step adds to the copy.
  it("sends the frame's and CORS's headers on a WebSocket upgrade too", async () => {
    const { token } = await owner();
    const withCors = { ...env, CORS_ALLOWED_ORIGINS: "https://dash.example.com" };
    const ctx = createExecutionContext();
    const upgrade = await fetchApp(
      new Request("http://localhost/api/v2/notifications/inbox/watch", {
        headers: { Upgrade: "websocket", "Service-Session-Token": token, Origin: "https://dash.example.com", "X-Request-Id": "client-chosen-id-42" },
      }),
      withCors,
      ctx,
    );
    expect(upgrade.status).toBe(101);
    expect(upgrade.headers.get("X-Request-Id")).toBe("client-chosen-id-42");
    expect(upgrade.headers.get("Strict-Transport-Security")).toBe("max-age=31536000; includeSubDomains");
    expect(upgrade.headers.get("X-Frame-Options")).toBe("SAMEORIGIN");
    expect(upgrade.headers.get("Cache-Control")).toBe("no-store");
    expect(upgrade.headers.get("Access-Control-Allow-Origin")).toBe("https://dash.example.com");
    expect(upgrade.headers.get("Vary")).toBe("Origin");
    upgrade.webSocket?.accept();
    upgrade.webSocket?.close(1000);
    await waitOnExecutionContext(ctx);
  });

  it("fails loudly with a 500 that leaks nothing when the configuration is invalid", async () => {
    const ctx = createExecutionContext();
    const res = await fetchApp(new Request("http://localhost/api/v2/auth/scopes"), { ...env, SECRET_KEY: "short" }, ctx);
    const body = await expectError(res, 500, Messages.internal);
    expect(body.detail).toBe(Messages.requestId(res.headers.get("X-Request-Id") ?? ""));
    expect(JSON.stringify(body)).not.toContain("SECRET_KEY");
    await waitOnExecutionContext(ctx);
  });

  it("serves /healthz", async () => {
    const res = await call("GET", "http://localhost/healthz");
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("OK");
  });
});

describe("request ids", () => {
  // Creating a token writes an audit row carrying the request id.
  const createTokenWith = async (requestId: string) => {
    const admin = await owner();
    const res = await call("POST", "/users/me/keys/tokens", {
      token: admin.token,
      headers: { "X-Request-Id": requestId },
      body: { token_name: `t-${crypto.randomUUID().slice(0, 8)}` },
    });
    expect(res.status).toBe(201);
    return res;
  };
  const auditedId = async (answered: string) =>
    (await env.DB.prepare("SELECT request_id FROM audit_logs WHERE request_id = ?").bind(answered).first<{ request_id: string }>())?.request_id;

  it("keeps a client's id that looks like an id, in the answer and the audit log", async () => {
    const id = `trace-${crypto.randomUUID().slice(0, 13)}`;
    const res = await createTokenWith(id);
    expect(res.headers.get("X-Request-Id")).toBe(id);
    expect(await auditedId(id)).toBe(id);
  });

  it("replaces anything else with a fresh UUID, so no client text reaches the audit log", async () => {
    // Non-ASCII fails the same character class; it is not sent here because workerd warns on building such a header.
    for (const given of [
      "short",
      "x".repeat(65),
      "<script>alert(1)</script>",
      "a b c d e f g h",
      "-leading-dash-1234",
      "request/id/with/slashes",
      "id;with=separators",
    ]) {
      const res = await createTokenWith(given);
      const answered = res.headers.get("X-Request-Id") ?? "";
      expect(answered).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(await auditedId(answered)).toBe(answered);
    }
  });
});

describe("A1 GET /auth/scopes", () => {
  it("is public, sorted and contains all", async () => {
    const res = await call("GET", "/auth/scopes");
    expect(res.status).toBe(200);
    const { external } = await json<{ external: string[] }>(res);
    expect(external).toContain("all");
    expect(external).toEqual([...external].sort());
    expect(external).toContain("user:read");
    expect(external).toContain("inbox_notification:*");
    expect(external).not.toContain("system:read");
  });
});
