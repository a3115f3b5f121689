// A GitHub stand-in for Herald's GitHub sign-in tests: GitHub's OAuth web flow and the two REST endpoints Herald reads,
// with GitHub's real request and response shapes (docs.github.com "Authorizing OAuth apps", "Troubleshooting OAuth app
// access token request errors", REST "users" and "emails"). It runs in Node (vitest globalSetup) on one 127.0.0.1
// port that plays both hosts: the web host (github.com: /login/oauth/…) at the root, and the API host
// (api.github.com) under /api. No user interaction: authorize redirects straight back as the scripted account.
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { flowScriptOf } from "./flow-script";

export interface GithubEmail {
  email: string;
  primary: boolean;
  verified: boolean;
  /** GitHub reports "public" or "private" for the primary address and null for the others. */
  visibility?: "public" | "private" | null;
}

/** The GitHub user the next authorizations sign in as. */
export interface GithubAccount {
  id: number;
  login: string;
  name?: string | null;
  emails: GithubEmail[];
}

/** An error the next authorize redirects back with, e.g. access_denied when the user clicks "Cancel". */
export interface GithubScriptedError {
  error: string;
  error_description?: string;
}

const GITHUB_CLIENT_ID = "herald-gh";
const GITHUB_CLIENT_SECRET = "herald-gh-secret";
/**
 * The OAuth app's registered "Authorization callback URL". GitHub accepts a redirect_uri on the same host and port
 * whose path is this path or below it, so Herald's /api/v2/users/oauth2/github/callback (and any other callback path
 * it may pick under ACCESS_URL) passes.
 */
const GITHUB_CALLBACK_URL = `${process.env.HERALD_ACCESS_URL ?? "http://localhost:8787"}/`;

const DEFAULT_GITHUB_ACCOUNT: GithubAccount = {
  id: 1_000_001,
  login: "gh-default-user",
  name: "GitHub Default User",
  emails: [{ email: "gh-default-user@github.test", primary: true, verified: true, visibility: "public" }],
};

/** GitHub's authorization codes expire after 10 minutes. */
const CODE_TTL_MS = 10 * 60_000;
const DOCS = "https://docs.github.com";
const TOKEN_ERRORS_DOC = `${DOCS}/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors`;
const AUTHORIZE_ERRORS_DOC = `${DOCS}/apps/managing-oauth-apps/troubleshooting-authorization-request-errors`;

interface IssuedCode {
  clientId: string;
  redirectUri: string;
  scopes: string[];
  account: GithubAccount;
  codeChallenge: string | undefined;
  expiresAt: number;
}

interface IssuedToken {
  account: GithubAccount;
  scopes: string[];
}

/** A token-endpoint error, in GitHub's three fields. GitHub answers these with status 200. */
interface TokenError {
  error: string;
  error_description: string;
  error_uri: string;
}

const BAD_VERIFICATION_CODE: TokenError = {
  error: "bad_verification_code",
  error_description: "The code passed is incorrect or expired.",
  error_uri: `${TOKEN_ERRORS_DOC}/#bad-verification-code`,
};
const INCORRECT_CLIENT_CREDENTIALS: TokenError = {
  error: "incorrect_client_credentials",
  error_description: "The client_id and/or client_secret passed are incorrect.",
  error_uri: `${TOKEN_ERRORS_DOC}/#incorrect-client-credentials`,
};
const REDIRECT_URI_MISMATCH: TokenError = {
  error: "redirect_uri_mismatch",
  error_description: "The redirect_uri MUST match the registered callback URL for this application.",
  error_uri: `${TOKEN_ERRORS_DOC}/#redirect-uri-mismatch2`,
};

export class GithubPeer {
  private readonly codes = new Map<string, IssuedCode>();
  private readonly tokens = new Map<string, IssuedToken>();
  private nextLogin: GithubAccount = DEFAULT_GITHUB_ACCOUNT;
  private nextError: GithubScriptedError | undefined;

  private constructor(
    private readonly server: Server,
    /** The "github.com" base URL: http://127.0.0.1:<port>. */
    readonly webUrl: string,
  ) {}

  /** The "api.github.com" base URL: http://127.0.0.1:<port>/api. */
  get apiUrl(): string {
    return `${this.webUrl}/api`;
  }

  static async start(host: string): Promise<GithubPeer> {
    let peer: GithubPeer | undefined;
    const server = createServer((req, res) => {
      if (!peer) {
        res.writeHead(503).end();
        return;
      }
      peer.handle(req, res).catch((error: unknown) => {
        // A bug in the stand-in must show up in the failing test's response, not kill the process.
        if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
        res.end(`github peer failed: ${error instanceof Error ? error.message : String(error)}`);
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, host, () => {
        server.off("error", reject);
        resolve();
      });
    });
    const { port } = server.address() as AddressInfo;
    peer = new GithubPeer(server, `http://${host}:${port}`);
    return peer;
  }

  /** Sets the user the following authorizations sign in as (until changed or reset). */
  setNextLogin(account: GithubAccount): void {
    this.nextLogin = account;
  }

  /** Makes the next authorize redirect back with this error instead of a code (once). */
  setNextError(error: GithubScriptedError): void {
    this.nextError = error;
  }

  /** Forgets the scripted login and error; issued codes and tokens stay valid for flows still in flight. */
  reset(): void {
    this.nextLogin = DEFAULT_GITHUB_ACCOUNT;
    this.nextError = undefined;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", this.webUrl);
    const body = await readBody(req);
    const route = `${req.method ?? "GET"} ${url.pathname.replace(/\/$/, "")}`;
    switch (route) {
      case "GET /login/oauth/authorize":
        return this.authorize(req, url, res);
      case "POST /login/oauth/access_token":
        return this.accessToken(req, url, body, res);
      case "GET /api/user":
        return this.api(req, res, (token) => ({ status: 200, body: userJson(token.account, this.webUrl, this.apiUrl) }));
      case "GET /api/user/emails":
        return this.api(req, res, (token) =>
          // Listing addresses needs the user:email (or user) scope; without it GitHub answers 404, not 403.
          token.scopes.includes("user:email") || token.scopes.includes("user")
            ? { status: 200, body: token.account.emails.map(emailJson) }
            : { status: 404, body: notFound(`${DOCS}/rest/users/emails#list-email-addresses-for-the-authenticated-user`) },
        );
      default: {
        sendJson(res, 404, notFound(`${DOCS}/rest`));
        return;
      }
    }
  }

  /** GET /login/oauth/authorize: redirects back at once, as if the user had already approved the app. */
  private authorize(req: IncomingMessage, url: URL, res: ServerResponse): void {
    // A test's browser carries its own script; only a flow without one (a real browser) uses the peer's.
    const flow = flowScriptOf(req)?.github;
    const params = url.searchParams;
    if (params.get("client_id") !== GITHUB_CLIENT_ID) {
      // github.com shows its HTML 404 page for an unknown client_id: nothing goes back to the app.
      res.writeHead(404, { "content-type": "text/html; charset=utf-8" });
      res.end("<!DOCTYPE html><title>Page not found · GitHub</title><p>404: unknown OAuth app client_id</p>");
      return;
    }
    const state = params.get("state");
    const requested = params.get("redirect_uri");
    const back = (redirectUri: string, values: Record<string, string>): void => {
      const target = new URL(redirectUri);
      for (const [name, value] of Object.entries(values)) target.searchParams.set(name, value);
      // GitHub echoes state only when the app sent one.
      if (state !== null) target.searchParams.set("state", state);
      res.writeHead(302, { location: target.href });
      res.end();
    };

    if (requested !== null && !redirectUriAllowed(requested)) {
      // GitHub sends the user to the registered callback URL, not to the offending redirect_uri.
      back(GITHUB_CALLBACK_URL, {
        error: "redirect_uri_mismatch",
        error_description: "The redirect_uri MUST match the registered callback URL for this application.",
        error_uri: `${AUTHORIZE_ERRORS_DOC}/#redirect-uri-mismatch`,
      });
      return;
    }
    const redirectUri = requested ?? GITHUB_CALLBACK_URL;

    const scripted = flow ? flow.error : this.nextError;
    if (scripted) {
      if (!flow) this.nextError = undefined;
      back(redirectUri, {
        error: scripted.error,
        error_description:
          scripted.error_description ?? (scripted.error === "access_denied" ? "The user has denied your application access." : scripted.error),
        error_uri: `${AUTHORIZE_ERRORS_DOC}/#${scripted.error.replaceAll("_", "-")}`,
      });
      return;
    }

    // PKCE (GitHub supports it since 2025-07, S256 only, optional for the app).
    const codeChallenge = params.get("code_challenge") ?? undefined;
    const method = params.get("code_challenge_method");
    if (codeChallenge !== undefined && method !== null && method !== "S256") {
      res.writeHead(400, { "content-type": "text/plain" });
      res.end("code_challenge_method must be S256");
      return;
    }

    // GitHub codes are 20 hex characters.
    const code = randomBytes(10).toString("hex");
    this.codes.set(code, {
      clientId: GITHUB_CLIENT_ID,
      redirectUri,
      scopes: splitScopes(params.get("scope") ?? ""),
      account: flow ? (flow.login ?? DEFAULT_GITHUB_ACCOUNT) : this.nextLogin,
      codeChallenge,
      expiresAt: Date.now() + CODE_TTL_MS,
    });
    back(redirectUri, { code });
  }

  /** POST /login/oauth/access_token: form-encoded or JSON body (or query string), answered in the Accept'ed format. */
  private accessToken(req: IncomingMessage, url: URL, body: string, res: ServerResponse): void {
    const params = tokenParams(req, url, body);
    const answer = (value: TokenError | Record<string, string>): void => {
      // Errors come back with 200 too: GitHub signals them only by the `error` field.
      if ((req.headers.accept ?? "").includes("application/json")) {
        sendJson(res, 200, value);
      } else {
        res.writeHead(200, { "content-type": "application/x-www-form-urlencoded; charset=utf-8" });
        res.end(new URLSearchParams({ ...value }).toString());
      }
    };

    const basic = basicCredentials(req.headers.authorization);
    const clientId = params.get("client_id") ?? basic?.id;
    const clientSecret = params.get("client_secret") ?? basic?.secret;
    if (clientId !== GITHUB_CLIENT_ID || clientSecret === undefined || !sameText(clientSecret, GITHUB_CLIENT_SECRET)) {
      answer(INCORRECT_CLIENT_CREDENTIALS);
      return;
    }

    const code = params.get("code") ?? "";
    const issued = this.codes.get(code);
    // A code is good for one exchange, successful or not.
    this.codes.delete(code);
    if (!issued || issued.clientId !== clientId || issued.expiresAt < Date.now()) {
      answer(BAD_VERIFICATION_CODE);
      return;
    }
    const redirectUri = params.get("redirect_uri");
    if (redirectUri !== null && redirectUri !== issued.redirectUri) {
      answer(REDIRECT_URI_MISMATCH);
      return;
    }
    if (issued.codeChallenge !== undefined) {
      const verifier = params.get("code_verifier") ?? "";
      const computed = createHash("sha256").update(verifier).digest("base64url");
      // GitHub documents no dedicated PKCE error code; a failed verification looks like a bad code.
      if (!sameText(computed, issued.codeChallenge)) {
        answer(BAD_VERIFICATION_CODE);
        return;
      }
    }

    // GitHub OAuth app user tokens: "gho_" and 36 base62 characters.
    const accessToken = `gho_${base62(36)}`;
    this.tokens.set(accessToken, { account: issued.account, scopes: issued.scopes });
    answer({ access_token: accessToken, token_type: "bearer", scope: issued.scopes.join(",") });
  }

  /** The REST API's authentication and headers around one endpoint. */
  private api(req: IncomingMessage, res: ServerResponse, endpoint: (token: IssuedToken) => { status: number; body: unknown }): void {
    // api.github.com rejects requests without a User-Agent.
    if (!req.headers["user-agent"]) {
      res.writeHead(403, { "content-type": "text/plain" });
      res.end(
        "Request forbidden by administrative rules. Please make sure your request has a User-Agent header " +
          `(${DOCS}/en/rest/overview/resources-in-the-rest-api#user-agent-required). Check ${DOCS} for other possible causes.`,
      );
      return;
    }
    const authorization = req.headers.authorization;
    if (!authorization) {
      sendJson(res, 401, { message: "Requires authentication", documentation_url: `${DOCS}/rest`, status: "401" });
      return;
    }
    // GitHub takes both `Bearer <token>` and the older `token <token>`.
    const match = /^(?:bearer|token)\s+(\S+)$/i.exec(authorization);
    const token = match?.[1] === undefined ? undefined : this.tokens.get(match[1]);
    if (!token) {
      sendJson(res, 401, { message: "Bad credentials", documentation_url: `${DOCS}/rest`, status: "401" });
      return;
    }
    const { status, body } = endpoint(token);
    sendJson(res, status, body, {
      "x-oauth-scopes": token.scopes.join(", "),
      "x-accepted-oauth-scopes": "",
      "x-github-media-type": "github.v3; format=json",
    });
  }
}

/**
 * GitHub's rule for a redirect_uri: same scheme, host and port as the registered callback URL, and a path equal to
 * or below its path. (GitHub relaxes the port for loopback IPs; Herald's ACCESS_URL uses the name localhost.)
 */
function redirectUriAllowed(redirectUri: string): boolean {
  const requested = URL.parse(redirectUri);
  const registered = new URL(GITHUB_CALLBACK_URL);
  if (!requested || requested.origin !== registered.origin) return false;
  const base = registered.pathname.endsWith("/") ? registered.pathname : `${registered.pathname}/`;
  return requested.pathname === registered.pathname || requested.pathname.startsWith(base);
}

/** Token-request parameters: GitHub reads the query string and a form or JSON body alike. */
function tokenParams(req: IncomingMessage, url: URL, body: string): URLSearchParams {
  const params = new URLSearchParams(url.search);
  const type = req.headers["content-type"] ?? "";
  if (type.includes("application/json")) {
    const parsed: unknown = body ? JSON.parse(body) : {};
    if (typeof parsed === "object" && parsed !== null) {
      for (const [name, value] of Object.entries(parsed)) {
        if (typeof value === "string" || typeof value === "number") params.set(name, String(value));
      }
    }
  } else {
    for (const [name, value] of new URLSearchParams(body)) params.set(name, value);
  }
  return params;
}

function basicCredentials(header: string | undefined): { id: string; secret: string } | undefined {
  const match = /^basic\s+(\S+)$/i.exec(header ?? "");
  if (!match?.[1]) return undefined;
  const decoded = Buffer.from(match[1], "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  if (colon < 0) return undefined;
  return { id: decoded.slice(0, colon), secret: decoded.slice(colon + 1) };
}

/** GitHub separates granted scopes with commas; apps request them separated by spaces (commas also work). */
function splitScopes(scope: string): string[] {
  return [...new Set(scope.split(/[\s,]+/).filter(Boolean))];
}

function userJson(account: GithubAccount, webUrl: string, apiUrl: string): Record<string, unknown> {
  // /user's `email` is the public profile address: the primary one if its visibility is public, else null.
  const primary = account.emails.find((e) => e.primary);
  const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  return {
    login: account.login,
    id: account.id,
    node_id: Buffer.from(`04:User${account.id}`).toString("base64"),
    avatar_url: `${webUrl}/avatars/u/${account.id}?v=4`,
    gravatar_id: "",
    url: `${apiUrl}/users/${account.login}`,
    html_url: `${webUrl}/${account.login}`,
    type: "User",
    user_view_type: "public",
    site_admin: false,
    name: account.name ?? null,
    company: null,
    blog: "",
    location: null,
    email: primary && visibility(primary) === "public" ? primary.email : null,
    hireable: null,
    bio: null,
    twitter_username: null,
    public_repos: 0,
    public_gists: 0,
    followers: 0,
    following: 0,
    created_at: now,
    updated_at: now,
  };
}

function emailJson(email: GithubEmail): Record<string, unknown> {
  return { email: email.email, primary: email.primary, verified: email.verified, visibility: visibility(email) };
}

function visibility(email: GithubEmail): "public" | "private" | null {
  if (email.visibility !== undefined) return email.visibility;
  return email.primary ? "public" : null;
}

function notFound(documentationUrl: string): Record<string, string> {
  return { message: "Not Found", documentation_url: documentationUrl, status: "404" };
}

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function base62(length: number): string {
  const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  // 248 = 4 × 62: rejecting bytes at or above it keeps the characters uniform.
  let out = "";
  while (out.length < length) {
    for (const byte of randomBytes(length)) {
      if (byte < 248 && out.length < length) out += alphabet[byte % 62];
    }
  }
  return out;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

function sendJson(res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", ...headers });
  res.end(JSON.stringify(value));
}
