// Workerd-side helpers for the OAuth peers started by test/peers/global-setup.ts: the OpenID Provider
// (env.OIDC_ISSUER_URL) and the GitHub stand-in (env.GITHUB_WEB_URL / env.GITHUB_API_URL).
//
// A "browser" is a CookieJar plus followRedirects():
// the peers need no forms or JavaScript, so walking the redirect chain with the cookies they set is a complete user
// agent for them. The chain stops before Herald's own callback, which the test hands to the Worker itself (through
// `exports.default.fetch`), because fetch() from here cannot reach the Worker under test at ACCESS_URL.
//
// Who signs in, and which error ends an authorization, is scripted in this module (one copy per test file) and sent by
// followRedirects() with every request to a peer (test/peers/flow-script.ts): test files that run at the same time
// never take each other's login or error. A scripted login holds until changed; a scripted error, for one flow.
import { FLOW_SCRIPT_HEADER, type FlowScript } from "../peers/flow-script";
import type { GithubAccount } from "../peers/github";
import type { OidcAccount } from "../peers/oidc";

export type { GithubAccount } from "../peers/github";
export type { OidcAccount } from "../peers/oidc";

/** This file's script for the peers: what the next flows walked by followRedirects() carry. */
const script: Required<FlowScript> = { oidc: {}, github: {} };

/** The OpenID Provider signs this file's next logins in as `account` (until changed). */
export function oidcNextLogin(account: OidcAccount): void {
  script.oidc.login = account;
}

/** This file's next OIDC authorization ends with redirect_uri?error=<error>&state=… instead of a code (once). */
export function oidcNextError(error: string, description?: string): void {
  script.oidc.error = description === undefined ? { error } : { error, error_description: description };
}

/** The GitHub stand-in signs this file's next authorizations in as `user` (until changed). */
export function githubNextLogin(user: GithubAccount): void {
  script.github.login = user;
}

/** This file's next GitHub authorize redirects back with ?error=<error>&error_description=…&state=… (once). */
export function githubNextError(error: string, description?: string): void {
  script.github.error = description === undefined ? { error } : { error, error_description: description };
}

/** The script one flow carries, as the header's base64url JSON; a scripted error is used up by it. */
function takeFlowScript(): string {
  const json = JSON.stringify(script);
  delete script.oidc.error;
  delete script.github.error;
  let binary = "";
  for (const byte of new TextEncoder().encode(json)) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

interface StoredCookie {
  name: string;
  value: string;
  path: string;
  /** Epoch ms; undefined for a session cookie. */
  expiresAt: number | undefined;
}

/**
 * A minimal browser cookie store, enough for OAuth redirect chains: cookies are kept per host name (like browsers,
 * ignoring the port; Domain attributes are ignored, so no sharing with subdomains), matched by Path, replaced by
 * (name, path), and deleted by Max-Age ≤ 0 or a past Expires. Secure/HttpOnly/SameSite are not enforced: every peer is
 * plain http on loopback, where browsers treat Secure cookies as allowed anyway, and there is no script to hide from.
 */
export class CookieJar {
  private readonly hosts = new Map<string, StoredCookie[]>();

  /** Stores every Set-Cookie of `response`, which answered a request for `url`. */
  absorb(url: string | URL, response: Response): string[] {
    const setCookies = response.headers.getSetCookie();
    for (const header of setCookies) this.set(url, header);
    return setCookies;
  }

  /** Stores one Set-Cookie header value received from `url`. */
  set(url: string | URL, setCookie: string): void {
    const target = new URL(url);
    const [pair = "", ...attributes] = setCookie.split(";");
    const eq = pair.indexOf("=");
    // A nameless cookie (no "=") is legal but never used by the peers or Herald; skip it.
    if (eq <= 0) return;
    const name = pair.slice(0, eq).trim();
    const value = pair.slice(eq + 1).trim();
    let path: string | undefined;
    let expiresAt: number | undefined;
    let maxAgeSeen = false;
    for (const attribute of attributes) {
      const i = attribute.indexOf("=");
      const key = (i < 0 ? attribute : attribute.slice(0, i)).trim().toLowerCase();
      const arg = i < 0 ? "" : attribute.slice(i + 1).trim();
      if (key === "path" && arg.startsWith("/")) path = arg;
      else if (key === "max-age" && /^-?\d+$/.test(arg)) {
        // Max-Age wins over Expires whatever their order (RFC 6265 §5.3 step 3).
        maxAgeSeen = true;
        expiresAt = Date.now() + Number(arg) * 1000;
      } else if (key === "expires" && !maxAgeSeen) {
        const time = Date.parse(arg);
        if (!Number.isNaN(time)) expiresAt = time;
      }
    }
    path ??= defaultPath(target.pathname);

    const cookies = (this.hosts.get(target.hostname) ?? []).filter((c) => !(c.name === name && c.path === path));
    if (expiresAt === undefined || expiresAt > Date.now()) cookies.push({ name, value, path, expiresAt });
    this.hosts.set(target.hostname, cookies);
  }

  /** The Cookie header a browser would send to `url`, or undefined when no cookie applies. */
  header(url: string | URL): string | undefined {
    const target = new URL(url);
    const now = Date.now();
    const cookies = (this.hosts.get(target.hostname) ?? []).filter(
      (c) => (c.expiresAt === undefined || c.expiresAt > now) && pathMatches(target.pathname, c.path),
    );
    if (cookies.length === 0) return undefined;
    // Longer paths first, as browsers order them (RFC 6265 §5.4).
    cookies.sort((a, b) => b.path.length - a.path.length);
    return cookies.map((c) => `${c.name}=${c.value}`).join("; ");
  }

  /** The current value of cookie `name` for `url` (most specific path), if any. */
  get(url: string | URL, name: string): string | undefined {
    const target = new URL(url);
    const now = Date.now();
    return (this.hosts.get(target.hostname) ?? [])
      .filter((c) => c.name === name && (c.expiresAt === undefined || c.expiresAt > now) && pathMatches(target.pathname, c.path))
      .sort((a, b) => b.path.length - a.path.length)[0]?.value;
  }
}

/** RFC 6265 §5.1.4: the request path equals the cookie path or continues it at a "/". */
function pathMatches(requestPath: string, cookiePath: string): boolean {
  if (requestPath === cookiePath) return true;
  if (!requestPath.startsWith(cookiePath)) return false;
  return cookiePath.endsWith("/") || requestPath[cookiePath.length] === "/";
}

/** RFC 6265 §5.1.4: without a Path attribute, a cookie belongs to the "directory" of the request path. */
function defaultPath(requestPath: string): string {
  const slash = requestPath.lastIndexOf("/");
  return slash <= 0 ? "/" : requestPath.slice(0, slash);
}

/** One request of a redirect chain. */
interface Hop {
  url: string;
  status: number;
  /** The Location header resolved against `url`, or null for a non-redirect answer. */
  location: string | null;
  /** The raw Set-Cookie headers of the answer. */
  setCookies: string[];
}

export interface RedirectChain {
  /** Every request made, in order. */
  hops: Hop[];
  /** The URL that matched `stopWhen` and was not fetched, or null if the chain ended at a non-redirect answer. */
  stoppedAt: string | null;
  /** The body of the last answer when the chain ended without reaching `stopWhen` (e.g. a peer's error page). */
  finalBody: string | null;
}

export interface FollowOptions {
  /** Called with each URL before it is fetched, the start URL included; true ends the walk without fetching it. */
  stopWhen: (url: URL) => boolean;
  /** Gives up (throws) after this many requests; default 20, as browsers cap redirect chains. */
  maxHops?: number;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/**
 * Walks a redirect chain like a browser navigating: GET each URL with the jar's cookies, store the answer's cookies,
 * go on to its Location. Stops before fetching a URL for which `stopWhen` is true, or at the first non-redirect
 * answer. (Every hop is a GET: the peers only redirect with 302 and 303, after which browsers GET too.)
 */
export async function followRedirects(startUrl: string | URL, jar: CookieJar, options: FollowOptions): Promise<RedirectChain> {
  const maxHops = options.maxHops ?? 20;
  const flowScript = takeFlowScript();
  const hops: Hop[] = [];
  let url = new URL(startUrl);
  for (;;) {
    if (options.stopWhen(url)) return { hops, stoppedAt: url.href, finalBody: null };
    if (hops.length >= maxHops) {
      throw new Error(`followRedirects: more than ${maxHops} requests:\n${hops.map((h) => `${h.status} ${h.url}`).join("\n")}`);
    }
    const cookie = jar.header(url);
    const headers: Record<string, string> = { [FLOW_SCRIPT_HEADER]: flowScript };
    if (cookie !== undefined) headers.cookie = cookie;
    const res = await fetch(url, { redirect: "manual", headers });
    const setCookies = jar.absorb(url, res);
    const locationHeader = res.headers.get("location");
    const location = REDIRECTS.has(res.status) && locationHeader !== null ? new URL(locationHeader, url).href : null;
    hops.push({ url: url.href, status: res.status, location, setCookies });
    if (location === null) return { hops, stoppedAt: null, finalBody: await res.text() };
    // Drain the redirect's body so workerd can reuse the connection.
    await res.body?.cancel();
    url = new URL(location);
  }
}
