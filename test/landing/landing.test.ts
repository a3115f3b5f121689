import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { authMethods } from "../../src/auth/methods";
import { getConfig } from "../../src/config/config";
import type { Env } from "../../src/env";
import { call, createUser, json } from "../helpers";

// `/` for a browser until the dashboard exists (SPEC §9.4), and the public list of sign-in methods (SPEC §7).

const SESSION_COOKIE = "service_session_token";

async function landing(cookie?: string): Promise<Response> {
  return call("GET", "http://localhost/", cookie ? { headers: { Cookie: `${SESSION_COOKIE}=${cookie}` } } : {});
}

describe("GET / (SPEC §9.4)", () => {
  it("signed out: an HTML page saying how to sign in, with the configured providers' buttons; no script", async () => {
    const res = await landing();
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toMatch(/^text\/html/);
    expect(res.headers.get("Content-Security-Policy")).toContain("default-src 'none'");
    expect(res.headers.get("Cache-Control")).toBe("no-store");
    const html = await res.text();
    expect(html).toContain("You are not signed in.");
    expect(html).toContain('href="/api/v2/users/oidc/callback?redirect=%2F"');
    expect(html).toContain('href="/api/v2/users/oauth2/github/callback?redirect=%2F"');
    expect(html).toContain("POST /api/v2/users/login");
    expect(html).toContain('href="/api/v2/openapi.json"');
    expect(html).not.toMatch(/<script/i);
  });

  it("signed in by cookie: who you are and the API document; values are escaped", async () => {
    const user = await createUser();
    await env.DB.prepare("UPDATE users SET name = ? WHERE id = ?").bind("<script>alert(1)</script>", user.id).run();
    const html = await (await landing(user.token)).text();
    expect(html).toContain(`You are signed in as &#60;script&#62;alert(1)&#60;/script&#62; (<code>${user.username}</code>), ${user.email}.`);
    expect(html).not.toContain("<script>alert(1)");
    expect(html).toContain('href="/api/v2/openapi.json"');
  });

  it("an unknown or malformed cookie is just signed out, never an error page", async () => {
    for (const cookie of ["AAAAAAAAAA-BBBBBBBBBBBBBBBBBBBBBB", "junk", "%00"]) {
      const res = await landing(cookie);
      expect(res.status).toBe(200);
      expect(await res.text()).toContain("You are not signed in.");
    }
  });

  it("other paths outside /api/v2 still answer the JSON 404", async () => {
    const res = await call("GET", "http://localhost/nowhere");
    expect(res.status).toBe(404);
  });
});

describe("GET /users/authmethods (SPEC §7)", () => {
  it("is public, not read as a user name, and answers Coder's shape", async () => {
    const res = await call("GET", "/users/authmethods");
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({
      password: { enabled: true },
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
      password: { enabled: false },
      github: { enabled: false, default_provider_configured: false },
      oidc: { enabled: true, signInText: "Sign in with Acme SSO", iconUrl: "/icon/acme.svg" },
    });
    expect(authMethods(getConfig({ ...env, OIDC_ISSUER_URL: "", OIDC_CLIENT_ID: "" } as Env)).oidc.enabled).toBe(false);
  });
});
