// Self-test of the OAuth peers (test/peers/oidc.ts, test/peers/github.ts) and the workerd-side helpers
// (test/external/oauth-peers.ts), driven from inside workerd the way Herald's sign-in tests will drive them: discovery,
// authorize through followRedirects() up to Herald's callback URL, then the back-channel calls Herald would make.
import { env } from "cloudflare:workers";
import * as client from "openid-client";
import { describe, expect, it } from "vitest";
import { CookieJar, followRedirects, githubNextError, githubNextLogin, oidcNextError, oidcNextLogin, type RedirectChain } from "./oauth-peers";

const ACCESS_URL = "http://localhost:8787";
const OIDC_CALLBACK = `${ACCESS_URL}/api/v2/users/oidc/callback`;
const GITHUB_CALLBACK = `${ACCESS_URL}/api/v2/users/oauth2/github/callback`;
/** Stop at anything on Herald's origin: that request belongs to the Worker, not to a peer. */
const atHerald = (url: URL): boolean => url.origin === ACCESS_URL;

function required(value: string | undefined, name: string): string {
  if (!value) throw new Error(`binding ${name} is not set (see vitest.config.ts)`);
  return value;
}
const issuer = required(env.OIDC_ISSUER_URL, "OIDC_ISSUER_URL");
const githubWeb = required(env.GITHUB_WEB_URL, "GITHUB_WEB_URL");
const githubApi = required(env.GITHUB_API_URL, "GITHUB_API_URL");

function unique(prefix: string): string {
  return `${prefix}-${crypto.randomUUID().slice(0, 8)}`;
}

function base64url(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

async function pkce(): Promise<{ verifier: string; challenge: string }> {
  const verifier = base64url(crypto.getRandomValues(new Uint8Array(32)));
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier));
  return { verifier, challenge: base64url(new Uint8Array(digest)) };
}

function jwtPayload(jwt: string): Record<string, unknown> {
  const part = jwt.split(".")[1] ?? "";
  const bytes = Uint8Array.from(atob(part.replaceAll("-", "+").replaceAll("_", "/")), (c) => c.charCodeAt(0));
  return JSON.parse(new TextDecoder().decode(bytes)) as Record<string, unknown>;
}

function stopped(chain: RedirectChain): URL {
  if (chain.stoppedAt === null) {
    const trail = chain.hops.map((h) => `${h.status} ${h.url}`).join("\n");
    throw new Error(`redirect chain ended before the callback:\n${trail}\n${chain.finalBody ?? ""}`);
  }
  return new URL(chain.stoppedAt);
}

interface Discovery {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
  userinfo_endpoint: string;
  jwks_uri: string;
  scopes_supported: string[];
  claims_supported: string[];
  code_challenge_methods_supported: string[];
  token_endpoint_auth_methods_supported: string[];
  response_types_supported: string[];
}

async function discover(): Promise<Discovery> {
  const res = await fetch(`${issuer}/.well-known/openid-configuration`);
  expect(res.status).toBe(200);
  return res.json<Discovery>();
}

/** Starts an OIDC authorization like Herald will, and walks it to the callback URL. */
async function authorizeOidc(discovery: Discovery, challenge: string): Promise<{ state: string; nonce: string; chain: RedirectChain }> {
  const state = unique("state");
  const nonce = unique("nonce");
  const url = new URL(discovery.authorization_endpoint);
  url.search = new URLSearchParams({
    client_id: "herald",
    redirect_uri: OIDC_CALLBACK,
    response_type: "code",
    scope: "openid email profile",
    state,
    nonce,
    code_challenge: challenge,
    code_challenge_method: "S256",
  }).toString();
  const chain = await followRedirects(url, new CookieJar(), { stopWhen: atHerald });
  return { state, nonce, chain };
}

interface TokenResponse {
  access_token?: string;
  id_token?: string;
  token_type?: string;
  error?: string;
  error_description?: string;
}

describe("OpenID Provider peer", () => {
  it("serves a discovery document for its http issuer", async () => {
    const discovery = await discover();
    expect(discovery.issuer).toBe(issuer);
    expect(discovery.authorization_endpoint.startsWith(`${issuer}/`)).toBe(true);
    expect(discovery.code_challenge_methods_supported).toEqual(["S256"]);
    expect(discovery.token_endpoint_auth_methods_supported).toEqual(expect.arrayContaining(["client_secret_basic", "client_secret_post"]));
    expect(discovery.scopes_supported).toEqual(expect.arrayContaining(["openid", "email", "profile"]));
    expect(discovery.claims_supported).toEqual(expect.arrayContaining(["sub", "email", "email_verified", "name", "preferred_username"]));
    const jwks = await (await fetch(discovery.jwks_uri)).json<{ keys: { kty: string; alg: string; d?: string }[] }>();
    expect(jwks.keys).toEqual([expect.objectContaining({ kty: "RSA", alg: "RS256" })]);
    expect(jwks.keys[0]?.d).toBeUndefined();
  });

  it("runs authorization code + PKCE to Herald's callback; the code yields an ID token and userinfo", async () => {
    const sub = unique("oidc-sub");
    const account = {
      sub,
      email: `${sub}@idp.test`,
      email_verified: true,
      name: "Ada Lovelace",
      preferred_username: "ada",
    };
    await oidcNextLogin(account);
    const discovery = await discover();
    const { verifier, challenge } = await pkce();
    const { state, nonce, chain } = await authorizeOidc(discovery, challenge);

    const callback = stopped(chain);
    expect(`${callback.origin}${callback.pathname}`).toBe(OIDC_CALLBACK);
    expect(callback.searchParams.get("state")).toBe(state);
    // RFC 9207: the issuer comes back with the code (openid-client checks it).
    expect(callback.searchParams.get("iss")).toBe(issuer);
    const code = callback.searchParams.get("code");
    expect(code).toBeTruthy();
    // authorize → login interaction → resume → consent interaction → resume → callback, carried by cookies.
    expect(chain.hops.map((h) => new URL(h.url).pathname.split("/")[1])).toEqual(["auth", "interaction", "auth", "interaction", "auth"]);

    const tokenRes = await fetch(discovery.token_endpoint, {
      method: "POST",
      headers: {
        authorization: `Basic ${btoa("herald:herald-oidc-secret")}`,
        "content-type": "application/x-www-form-urlencoded",
      },
      body: new URLSearchParams({
        grant_type: "authorization_code",
        code: code ?? "",
        redirect_uri: OIDC_CALLBACK,
        code_verifier: verifier,
      }),
    });
    const tokens = await tokenRes.json<TokenResponse>();
    expect(tokenRes.status, JSON.stringify(tokens)).toBe(200);
    expect(tokens.token_type).toBe("Bearer");
    const idToken = jwtPayload(tokens.id_token ?? "");
    expect(idToken).toMatchObject({
      iss: issuer,
      aud: "herald",
      sub,
      nonce,
      email: account.email,
      email_verified: true,
      name: "Ada Lovelace",
      preferred_username: "ada",
    });

    const userinfo = await fetch(discovery.userinfo_endpoint, {
      headers: { authorization: `Bearer ${tokens.access_token ?? ""}` },
    });
    expect(userinfo.status).toBe(200);
    expect(await userinfo.json()).toEqual(account);

    // A code is single-use.
    const again = await fetch(discovery.token_endpoint, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "authorization_code",
        code: code ?? "",
        redirect_uri: OIDC_CALLBACK,
        code_verifier: verifier,
        client_id: "herald",
        client_secret: "herald-oidc-secret",
      }),
    });
    expect(again.status).toBe(400);
    expect(await again.json<TokenResponse>()).toMatchObject({ error: "invalid_grant" });
  });

  it("accepts client_secret_post (openid-client's default) and rejects a wrong code_verifier", async () => {
    const discovery = await discover();
    const exchange = async (verifier: string): Promise<Response> => {
      const { challenge } = await pkce();
      const { chain } = await authorizeOidc(discovery, challenge);
      return fetch(discovery.token_endpoint, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({
          grant_type: "authorization_code",
          code: stopped(chain).searchParams.get("code") ?? "",
          redirect_uri: OIDC_CALLBACK,
          code_verifier: verifier,
          client_id: "herald",
          client_secret: "herald-oidc-secret",
        }),
      });
    };
    const wrong = await exchange((await pkce()).verifier);
    expect(wrong.status).toBe(400);
    expect(await wrong.json<TokenResponse>()).toMatchObject({ error: "invalid_grant" });

    // The right verifier through client_secret_post: a fresh flow, since the failed attempt consumed its code.
    const { verifier, challenge } = await pkce();
    const { chain } = await authorizeOidc(discovery, challenge);
    const ok = await fetch(discovery.token_endpoint, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "authorization_code",
        code: stopped(chain).searchParams.get("code") ?? "",
        redirect_uri: OIDC_CALLBACK,
        code_verifier: verifier,
        client_id: "herald",
        client_secret: "herald-oidc-secret",
      }),
    });
    expect(ok.status).toBe(200);
  });

  it("completes a flow with openid-client v6, the library Herald uses (signature, iss, nonce, PKCE checks)", async () => {
    const sub = unique("oidc-sub");
    await oidcNextLogin({ sub, email: `${sub}@idp.test`, email_verified: false });
    // Herald's setup: secret given, so openid-client authenticates with client_secret_post; http only via opt-in.
    const config = await client.discovery(new URL(issuer), "herald", "herald-oidc-secret", undefined, {
      execute: [client.allowInsecureRequests],
    });
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const nonce = client.randomNonce();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: OIDC_CALLBACK,
      scope: "openid email profile",
      state,
      nonce,
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
    });
    const callback = stopped(await followRedirects(url, new CookieJar(), { stopWhen: atHerald }));
    const tokens = await client.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: verifier,
      expectedState: state,
      expectedNonce: nonce,
      idTokenExpected: true,
    });
    expect(tokens.claims()).toMatchObject({ sub, email: `${sub}@idp.test`, email_verified: false });
    expect(await client.fetchUserInfo(config, tokens.access_token, sub)).toEqual({
      sub,
      email: `${sub}@idp.test`,
      email_verified: false,
    });
  });

  it("requires PKCE", async () => {
    const discovery = await discover();
    const url = new URL(discovery.authorization_endpoint);
    const state = unique("state");
    url.search = new URLSearchParams({
      client_id: "herald",
      redirect_uri: OIDC_CALLBACK,
      response_type: "code",
      scope: "openid",
      state,
    }).toString();
    const callback = stopped(await followRedirects(url, new CookieJar(), { stopWhen: atHerald }));
    expect(callback.searchParams.get("error")).toBe("invalid_request");
    expect(callback.searchParams.get("state")).toBe(state);
  });

  it("ends the next authorization with a scripted error", async () => {
    await oidcNextError("access_denied");
    const { challenge } = await pkce();
    const { state, chain } = await authorizeOidc(await discover(), challenge);
    const callback = stopped(chain);
    expect(`${callback.origin}${callback.pathname}`).toBe(OIDC_CALLBACK);
    expect(callback.searchParams.get("error")).toBe("access_denied");
    expect(callback.searchParams.get("state")).toBe(state);
    expect(callback.searchParams.has("code")).toBe(false);
  });
});

interface GithubToken {
  access_token?: string;
  token_type?: string;
  scope?: string;
  error?: string;
  error_description?: string;
  error_uri?: string;
}

describe("GitHub stand-in", () => {
  const headers = { accept: "application/json", "content-type": "application/json", "user-agent": "Herald-test" };

  async function authorizeGithub(state: string): Promise<URL> {
    const url = new URL("/login/oauth/authorize", githubWeb);
    url.search = new URLSearchParams({
      client_id: "herald-gh",
      redirect_uri: GITHUB_CALLBACK,
      scope: "read:user user:email",
      state,
    }).toString();
    const chain = await followRedirects(url, new CookieJar(), { stopWhen: atHerald });
    expect(chain.hops).toHaveLength(1);
    expect(chain.hops[0]?.status).toBe(302);
    return stopped(chain);
  }

  async function exchange(code: string, secret = "herald-gh-secret"): Promise<GithubToken> {
    const res = await fetch(new URL("/login/oauth/access_token", githubWeb), {
      method: "POST",
      headers,
      body: JSON.stringify({ client_id: "herald-gh", client_secret: secret, code, redirect_uri: GITHUB_CALLBACK }),
    });
    // GitHub answers token errors with 200 as well.
    expect(res.status).toBe(200);
    return res.json<GithubToken>();
  }

  it("runs authorize → code → token → /user → /user/emails with GitHub's shapes", async () => {
    const id = 5_000_000 + Math.floor(Math.random() * 1_000_000);
    const login = unique("octo");
    await githubNextLogin({
      id,
      login,
      name: "Octo Cat",
      emails: [
        { email: `${login}@users.github.test`, primary: true, verified: true },
        { email: `${login}@old.test`, primary: false, verified: false },
      ],
    });
    const state = unique("state");
    const callback = await authorizeGithub(state);
    expect(`${callback.origin}${callback.pathname}`).toBe(GITHUB_CALLBACK);
    expect(callback.searchParams.get("state")).toBe(state);
    const code = callback.searchParams.get("code") ?? "";
    expect(code).toMatch(/^[0-9a-f]{20}$/);

    const token = await exchange(code);
    expect(token).toEqual({ access_token: expect.stringMatching(/^gho_[0-9A-Za-z]{36}$/), token_type: "bearer", scope: "read:user,user:email" });

    const api = { authorization: `Bearer ${token.access_token ?? ""}`, accept: "application/vnd.github+json", "user-agent": "Herald-test" };
    const user = await fetch(`${githubApi}/user`, { headers: api });
    expect(user.status).toBe(200);
    expect(user.headers.get("x-oauth-scopes")).toBe("read:user, user:email");
    expect(await user.json()).toMatchObject({ id, login, name: "Octo Cat", email: `${login}@users.github.test`, type: "User" });

    // The older `token` scheme works as well.
    const emails = await fetch(`${githubApi}/user/emails`, { headers: { ...api, authorization: `token ${token.access_token ?? ""}` } });
    expect(emails.status).toBe(200);
    expect(await emails.json()).toEqual([
      { email: `${login}@users.github.test`, primary: true, verified: true, visibility: "public" },
      { email: `${login}@old.test`, primary: false, verified: false, visibility: null },
    ]);

    // A code is single-use: the second exchange gets GitHub's bad_verification_code (with status 200).
    expect(await exchange(code)).toEqual({
      error: "bad_verification_code",
      error_description: "The code passed is incorrect or expired.",
      error_uri: expect.stringContaining("#bad-verification-code"),
    });
  });

  it("answers a wrong secret, a bad token and a form-encoded request like GitHub", async () => {
    const wrongSecret = await exchange((await authorizeGithub(unique("state"))).searchParams.get("code") ?? "", "nope");
    expect(wrongSecret.error).toBe("incorrect_client_credentials");

    // Without Accept: application/json GitHub answers form-encoded, and takes a form-encoded body.
    const code = (await authorizeGithub(unique("state"))).searchParams.get("code") ?? "";
    const form = await fetch(new URL("/login/oauth/access_token", githubWeb), {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ client_id: "herald-gh", client_secret: "herald-gh-secret", code }),
    });
    expect(form.headers.get("content-type")).toContain("application/x-www-form-urlencoded");
    // Decoded by hand: workerd warns when .text() reads a body whose Content-Type is not textual.
    const answer = new URLSearchParams(new TextDecoder().decode(await form.arrayBuffer()));
    expect(answer.get("token_type")).toBe("bearer");
    expect(answer.get("access_token")).toMatch(/^gho_/);

    const bad = await fetch(`${githubApi}/user`, { headers: { authorization: "Bearer gho_nope", "user-agent": "Herald-test" } });
    expect(bad.status).toBe(401);
    expect(await bad.json()).toMatchObject({ message: "Bad credentials" });
  });

  it("redirects back with a scripted error", async () => {
    await githubNextError("access_denied");
    const state = unique("state");
    const callback = await authorizeGithub(state);
    expect(`${callback.origin}${callback.pathname}`).toBe(GITHUB_CALLBACK);
    expect(Object.fromEntries(callback.searchParams)).toEqual({
      error: "access_denied",
      error_description: "The user has denied your application access.",
      error_uri: expect.stringContaining("#access-denied"),
      state,
    });
  });
});

describe("CookieJar", () => {
  it("matches paths, replaces by name and path, and deletes on Max-Age=0 or a past Expires", () => {
    const jar = new CookieJar();
    jar.set("http://127.0.0.1:1/auth/abc", "a=1; path=/; httponly; samesite=lax");
    jar.set("http://127.0.0.1:1/auth/abc", "b=2; path=/interaction/xyz");
    jar.set("http://127.0.0.1:1/auth/abc", "c=3");
    expect(jar.header("http://127.0.0.1:1/interaction/xyz")).toBe("b=2; a=1");
    expect(jar.header("http://127.0.0.1:1/interaction/xyzz")).toBe("a=1");
    expect(jar.header("http://127.0.0.1:1/auth/other")).toBe("c=3; a=1");
    expect(jar.header("http://localhost:1/")).toBeUndefined();
    jar.set("http://127.0.0.1:1/", "a=9; Path=/");
    expect(jar.get("http://127.0.0.1:1/", "a")).toBe("9");
    jar.set("http://127.0.0.1:1/", "a=; path=/; expires=Thu, 01 Jan 1970 00:00:00 GMT");
    jar.set("http://127.0.0.1:1/", "b=; path=/interaction/xyz; max-age=0");
    expect(jar.header("http://127.0.0.1:1/interaction/xyz")).toBeUndefined();
  });
});

describe("OAuth peers' control API", () => {
  it("rejects malformed scripts with 400 and a reason", async () => {
    const post = (path: string, body: unknown): Promise<Response> =>
      fetch(`${env.PEER_URL}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    const oidc = await post("/control/oidc/next-login", { sub: "x", email: "x@idp.test" });
    expect(oidc.status).toBe(400);
    expect(await oidc.text()).toContain("email_verified");
    const github = await post("/control/github/next-login", { id: "1", login: "x", emails: [] });
    expect(github.status).toBe(400);
    expect(await github.text()).toContain("id must be an integer");
  });
});
