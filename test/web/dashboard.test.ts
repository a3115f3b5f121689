import { createExecutionContext, SELF, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { authMethods } from "../../src/auth/methods";
import { getConfig } from "../../src/config/config";
import { database } from "../../src/db/client";
import { notificationTemplates } from "../../src/db/schema";
import type { Env } from "../../src/env";
import { Messages } from "../../src/http/errors";
import { renderTemplate } from "../../src/notifications/render";
import { TEMPLATE_IDS } from "../../src/notifications/templates";
import { DASHBOARD_CSP } from "../../src/web/routes";
import { call, createUser, fetchApp, json, owner } from "../helpers";

// What a browser loads (docs/dashboard.md, docs/embed.md), and the public list of sign-in methods the dashboard's
// sign-in page reads (docs/api.md, "Endpoints").

/** The dashboard page and the files it names (docs/dashboard.md), fetched through the Worker as a browser would. */
async function page(path = "/", init: RequestInit = {}): Promise<Response> {
  return SELF.fetch(new URL(path, "http://localhost"), init);
}

/** Every `src` and `href` of the dashboard's HTML page. */
async function linkedFiles(): Promise<string[]> {
  const html = await (await page()).text();
  return [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1] ?? "");
}

describe("GET / : the dashboard (docs/dashboard.md)", () => {
  it("is the same HTML page for everyone, from Static Assets, under a strict Content-Security-Policy", async () => {
    const res = await page();
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toMatch(/^text\/html/);
    const csp = res.headers.get("Content-Security-Policy") ?? "";
    expect(csp).toBe(DASHBOARD_CSP);
    // No inline script or style may run, nothing loads from elsewhere, and the page cannot be framed.
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain("unsafe-inline");
    expect(csp).not.toContain("unsafe-eval");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(res.headers.get("Cache-Control")).toBe("no-cache");
    expect(res.headers.get("X-Content-Type-Options")).toBe("nosniff");
    expect(res.headers.get("X-Request-Id")).toMatch(/^[0-9a-f-]{36}$/);
    const html = await res.text();
    // Every script is a file of this origin: no inline script, no event handler attributes.
    for (const tag of html.match(/<script[^>]*>/g) ?? []) expect(tag).toMatch(/ src="\/assets\/dashboard-[0-9a-f]{10}\.js"/);
    expect(html).not.toMatch(/<script[^>]*>[^<]/);
    expect(html).not.toMatch(/ on[a-z]+=/i);
  });

  it("is the same page whether or not a session cookie comes with it: nothing about the person is in it", async () => {
    const user = await createUser();
    const signedIn = await (await page("/", { headers: { Cookie: `service_session_token=${user.token}` } })).text();
    expect(signedIn).toBe(await (await page()).text());
    expect(signedIn).not.toContain(user.email);
  });

  it("names content-hashed script and style files that are served, cached for a year, with their types", async () => {
    const files = (await linkedFiles()).filter((f) => f.startsWith("/assets/"));
    expect(files.map((f) => f.replace(/-[0-9a-f]{10}\./, "-HASH."))).toEqual(["/assets/dashboard-HASH.css", "/assets/dashboard-HASH.js"]);
    for (const file of files) {
      const res = await page(file);
      expect(res.status).toBe(200);
      expect(res.headers.get("Cache-Control")).toBe("public, max-age=31536000, immutable");
      expect(res.headers.get("X-Request-Id")).toBeTruthy();
      expect(res.headers.get("Content-Type")).toMatch(file.endsWith(".js") ? /javascript/ : /^text\/css/);
      expect((await res.arrayBuffer()).byteLength).toBeGreaterThan(0);
    }
  });

  it("a path that is neither the API, the page nor one of its files is the JSON 404; the API keeps its routes", async () => {
    for (const path of ["/nowhere", "/assets/dashboard-0000000000.js", "/index.html/x", "/embed/other.js"]) {
      const res = await page(path);
      expect(res.status, path).toBe(404);
      expect(await json(res)).toEqual({ message: Messages.routeNotFound });
    }
    expect((await page("/healthz")).status).toBe(200);
    expect((await call("GET", "/users/authmethods")).status).toBe(200);
  });
});

describe("GET /embed/inbox.js: the embeddable inbox (docs/embed.md)", () => {
  it("is a JavaScript module that a page on an allowed origin may load with CORS, and no other origin", async () => {
    const withOrigins = { ...env, CORS_ALLOWED_ORIGINS: "http://localhost:5173" } as Env;
    const ctx = createExecutionContext();
    const embed = (origin: string) => fetchApp(new Request("http://localhost/embed/inbox.js", { headers: { Origin: origin } }), withOrigins, ctx);
    const allowed = await embed("http://localhost:5173");
    expect(allowed.status).toBe(200);
    expect(allowed.headers.get("Content-Type")).toMatch(/javascript/);
    expect(allowed.headers.get("Access-Control-Allow-Origin")).toBe("http://localhost:5173");
    expect(allowed.headers.get("Vary")).toContain("Origin");
    expect(allowed.headers.get("Cross-Origin-Resource-Policy")).toBe("cross-origin");
    expect(allowed.headers.get("X-Request-Id")).toBeTruthy();
    expect(await allowed.text()).toContain("herald-inbox");
    const other = await embed("https://evil.example.com");
    expect(other.status).toBe(200);
    expect(other.headers.get("Access-Control-Allow-Origin")).toBeNull();
    await waitOnExecutionContext(ctx);
  });
});

describe('GET /sw.js: the dashboard\'s service worker (docs/push.md, "The dashboard")', () => {
  it("is a classic script at the root, revalidated on every check, under a policy that loads nothing", async () => {
    const res = await page("/sw.js");
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toBe("text/javascript; charset=utf-8");
    expect(res.headers.get("Cache-Control")).toBe("no-cache");
    expect(res.headers.get("Content-Security-Policy")).toBe("default-src 'none'; img-src 'self'");
    // No Service-Worker-Allowed: at the root, its scope is the whole origin without it.
    expect(res.headers.get("Service-Worker-Allowed")).toBeNull();
    const script = await res.text();
    expect(script).not.toMatch(/^\s*(import|export)\b/m);
    expect(script).toContain('addEventListener("push"');
    expect(script).toContain('addEventListener("notificationclick"');
    expect(script).not.toContain('addEventListener("fetch"');
  });

  it("shows the Herald icon, a PNG it names by content, served for a year", async () => {
    const script = await (await page("/sw.js")).text();
    const icon = /"(\/assets\/herald-icon-[0-9a-f]{10}\.png)"/.exec(script)?.[1] ?? "";
    const res = await page(icon);
    expect(res.status, icon).toBe(200);
    expect(res.headers.get("Content-Type")).toBe("image/png");
    expect(res.headers.get("Cache-Control")).toBe("public, max-age=31536000, immutable");
    const bytes = new Uint8Array(await res.arrayBuffer());
    expect([...bytes.subarray(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    // 192 × 192, as the IHDR chunk says.
    const header = new DataView(bytes.buffer, 16, 8);
    expect([header.getUint32(0), header.getUint32(4)]).toEqual([192, 192]);
  });
});

describe('GET /users/authmethods (docs/api.md, "Endpoints")', () => {
  it("is public, not read as a user name, and answers Coder's shape", async () => {
    const res = await call("GET", "/users/authmethods");
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({
      password: { enabled: true, reset_passcode_deliverable: true },
      github: { enabled: true, default_provider_configured: false },
      oidc: { enabled: true, signInText: "", iconUrl: "" },
    });
  });

  it("follows the configuration: password sign-in off, providers off, OIDC button text and icon", () => {
    const config = getConfig({
      ...env,
      PASSWORD_AUTH_DISABLED: "true",
      GITHUB_CLIENT_ID: "",
      GITHUB_CLIENT_SECRET: "",
      OIDC_SIGN_IN_TEXT: "Sign in with Acme SSO",
      OIDC_ICON_URL: "/icon/acme.svg",
    } as Env);
    expect(authMethods(config)).toEqual({
      password: { enabled: false, reset_passcode_deliverable: true },
      github: { enabled: false, default_provider_configured: false },
      oidc: { enabled: true, signInText: "Sign in with Acme SSO", iconUrl: "/icon/acme.svg" },
    });
    expect(authMethods(getConfig({ ...env, OIDC_ISSUER_URL: "", OIDC_CLIENT_ID: "" } as Env)).oidc.enabled).toBe(false);
  });

  it('says whether a reset passcode can be sent at all, by the default method (docs/api.md, "Password reset by one-time passcode")', () => {
    expect(authMethods(getConfig({ ...env, EMAIL_SMARTHOST: "" } as Env)).password.reset_passcode_deliverable).toBe(false);
    expect(authMethods(getConfig({ ...env, EMAIL_SMARTHOST: "mail.example.com:25" } as Env)).password.reset_passcode_deliverable).toBe(true);
    const webhook = { ...env, EMAIL_SMARTHOST: "", NOTIFICATIONS_METHOD: "webhook", NOTIFICATIONS_WEBHOOK_URL: "https://hooks.example.com/herald" };
    expect(authMethods(getConfig(webhook as Env)).password.reset_passcode_deliverable).toBe(true);
  });

  it('follows a method an owner set for the passcode template (docs/api.md, "Password reset by one-time passcode")', async () => {
    const admin = await owner();
    const noMail = { ...env, EMAIL_SMARTHOST: "", NOTIFICATIONS_WEBHOOK_URL: "https://hooks.example.com/herald" } as Env;
    const deliverable = async () => {
      const ctx = createExecutionContext();
      const res = await fetchApp(new Request("http://localhost/api/v2/users/authmethods"), noMail, ctx);
      await waitOnExecutionContext(ctx);
      return (await json<{ password: { reset_passcode_deliverable: boolean } }>(res)).password.reset_passcode_deliverable;
    };
    const setMethod = async (method: string) =>
      (await call("PUT", `/notifications/templates/${TEMPLATE_IDS.oneTimePasscode}/method`, { token: admin.token, body: { method } })).status;
    expect(await deliverable()).toBe(false);
    expect(await setMethod("webhook")).toBe(200);
    expect(await deliverable()).toBe(true);
    expect(await setMethod("")).toBe(200);
    expect(await deliverable()).toBe(false);
  });
});

describe("the links system notices carry (docs/dashboard.md#pages)", () => {
  it("every action of every system template opens the dashboard's page, not the JSON 404", async () => {
    const templates = await database(env.DB).select().from(notificationTemplates);
    const system = templates.filter((template) => template.kind === "system");
    expect(system.length).toBeGreaterThan(5);
    const urls = system.flatMap(
      (template) =>
        renderTemplate(template, {
          user: { name: "Ada", username: "ada", email: "ada@herald.test" },
          // Every label a seeded template names, with a value of its kind.
          labels: new Proxy({} as Record<string, string>, {
            get: () => "x1",
            has: () => true,
            getOwnPropertyDescriptor: () => ({ value: "x1", enumerable: true, configurable: true }),
          }),
          data: {},
          baseUrl: "http://localhost",
        }).actions,
    );
    expect(urls.length).toBeGreaterThan(5);
    for (const { label, url } of urls) {
      expect(url, label).toMatch(/^http:\/\/localhost(\/|$)/);
      const res = await page(url);
      expect(res.status, `${label}: ${url}`).toBe(200);
      expect(res.headers.get("Content-Type"), url).toMatch(/^text\/html/);
      await res.body?.cancel();
    }
  });
});
