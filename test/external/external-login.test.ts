// External sign-in (OIDC and GitHub) and A7 convert-login, end to end (docs/api.md, "External sign-in").
//
// Every flow is a real browser walk: Herald's own URLs (ACCESS_URL http://localhost:8787) go to the Worker through
// `send` (or `fetchApp` with a modified env where a test needs other configuration); the provider
// hops go to the real OpenID Provider and the GitHub stand-in (test/peers/*) through followRedirects(). One fresh
// CookieJar per flow is the browser: it carries Herald's cookies (host localhost) and the provider's alike.
// The peers are shared by all test files of a run, so every test scripts its login right before its flow and uses
// its own subs, GitHub ids and e-mails.
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { AuthMessages } from "../../src/auth/messages";
import type { Env } from "../../src/env";
import { ExternalMessages } from "../../src/external/messages";
import { Messages } from "../../src/http/errors";
import { signValue } from "../../src/lib/signed";
import { TEMPLATE_IDS } from "../../src/notifications/templates";
import { requestPasscodeSettled } from "../auth/passcode-helpers";
import { untilLimited } from "../fixtures/rate-limits";
import { call, createUser, expectError, fetchApp, json, owner, send, type TestUser } from "../helpers";
import {
  CookieJar,
  followRedirects,
  type GithubAccount,
  githubNextError,
  githubNextLogin,
  type OidcAccount,
  oidcNextError,
  oidcNextLogin,
  type RedirectChain,
} from "./oauth-peers";

const HERALD = "http://localhost:8787";
const OIDC_CALLBACK = `${HERALD}/api/v2/users/oidc/callback`;
const GITHUB_CALLBACK = `${HERALD}/api/v2/users/oauth2/github/callback`;
const CONVERT_URL = `${HERALD}/api/v2/users/me/convert-login`;
const FLOW_COOKIE = "herald_oauth_flow";
const CONVERSION_COOKIE = "herald_login_conversion";
const SESSION_COOKIE = "service_session_token";

function required(value: string | undefined, name: string): string {
  if (!value) throw new Error(`binding ${name} is not set (see vitest.config.ts)`);
  return value;
}
const ISSUER = required(env.OIDC_ISSUER_URL, "OIDC_ISSUER_URL");
const GITHUB_WEB = required(env.GITHUB_WEB_URL, "GITHUB_WEB_URL");
const GITHUB_ISSUER = new URL(GITHUB_WEB).origin;

function unique(prefix: string): string {
  return `${prefix}-${crypto.randomUUID().slice(0, 8)}`;
}

let githubIds = Math.floor(Math.random() * 1_000_000_000) + 5_000_000;
function githubId(): number {
  githubIds += 1;
  return githubIds;
}

function randomIp(): string {
  const byte = () => Math.floor(Math.random() * 255);
  return `10.${byte()}.${byte()}.${byte()}`;
}

type EnvOverride = Partial<Record<keyof Env, string>>;

/**
 * A GET from the browser `jar` to Herald: the jar's cookies go along, the answer's cookies are kept. With `override`
 * the app runs with a modified environment (and its background work is awaited).
 */
async function herald(url: string | URL, jar: CookieJar, override?: EnvOverride): Promise<Response> {
  const headers = new Headers({ "CF-Connecting-IP": randomIp() });
  const cookie = jar.header(url);
  if (cookie !== undefined) headers.set("Cookie", cookie);
  const request = new Request(url, { headers, redirect: "manual" });
  let res: Response;
  if (override) {
    const ctx = createExecutionContext();
    res = await fetchApp(request, { ...env, ...override } as Env, ctx);
    await waitOnExecutionContext(ctx);
  } else {
    res = await send(request);
  }
  jar.absorb(url, res);
  return res;
}

function withQuery(base: string, query: Record<string, string> = {}): string {
  const url = new URL(base);
  for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value);
  return url.href;
}

function stopped(chain: RedirectChain): URL {
  if (chain.stoppedAt === null) {
    const trail = chain.hops.map((h) => `${h.status} ${h.url}`).join("\n");
    throw new Error(`redirect chain ended before Herald's callback:\n${trail}\n${chain.finalBody ?? ""}`);
  }
  return new URL(chain.stoppedAt);
}

/** Herald's answer to the start of a flow: a 302 to the provider. */
async function start(callback: string, jar: CookieJar, query: Record<string, string> = {}, override?: EnvOverride) {
  const res = await herald(withQuery(callback, query), jar, override);
  if (res.status !== 302) throw new Error(`flow start answered ${res.status}: ${await res.text()}`);
  return { res, authorize: new URL(res.headers.get("Location") ?? "") };
}

/** The provider hops, as the browser walks them, up to (not into) Herald's callback. */
async function throughProvider(authorize: URL, jar: CookieJar): Promise<URL> {
  const chain = await followRedirects(authorize, jar, { stopWhen: (url) => url.origin === HERALD });
  return stopped(chain);
}

interface Flow {
  jar: CookieJar;
  authorize: URL;
  callback: URL;
  done: Response;
}

/** A whole sign-in: start at Herald, through the provider, back to Herald's callback. */
async function signIn(callback: string, options: { jar?: CookieJar; query?: Record<string, string>; override?: EnvOverride } = {}): Promise<Flow> {
  const jar = options.jar ?? new CookieJar();
  const { authorize } = await start(callback, jar, options.query, options.override);
  const back = await throughProvider(authorize, jar);
  const done = await herald(back, jar, options.override);
  return { jar, authorize, callback: back, done };
}

/** The session token a successful callback set, after checking its cookie attributes (docs/api.md, "Conventions"). */
function sessionOf(res: Response): string {
  const header = res.headers.getSetCookie().find((c) => c.startsWith(`${SESSION_COOKIE}=`));
  expect(header, "session cookie").toBeDefined();
  expect(header).toMatch(/HttpOnly/i);
  expect(header).toMatch(/SameSite=Lax/i);
  expect(header).toMatch(/Path=\/(;|$)/);
  const token = (header ?? "").split(";")[0]?.slice(SESSION_COOKIE.length + 1) ?? "";
  expect(token).toMatch(/^[0-9A-Za-z]{10}-[0-9A-Za-z]{22}$/);
  return token;
}

/** GET /users/me as a browser holding only the session cookie. */
async function meByCookie(token: string): Promise<Response> {
  return call("GET", "/users/me", { headers: { Cookie: `${SESSION_COOKIE}=${token}` } });
}

async function expectSignedInAs(res: Response, userId: string, loginType: string): Promise<string> {
  expect(res.status, await peek(res)).toBe(302);
  const token = sessionOf(res);
  const me = await meByCookie(token);
  expect(me.status).toBe(200);
  const body = await json<{ id: string; login_type: string }>(me);
  expect(body.id).toBe(userId);
  expect(body.login_type).toBe(loginType);
  return token;
}

/** The body of a non-redirect answer, for assertion messages. */
async function peek(res: Response): Promise<string> {
  return res.status === 302 ? "" : res.clone().text();
}

function noSession(res: Response): void {
  expect(res.headers.getSetCookie().some((c) => c.startsWith(`${SESSION_COOKIE}=`))).toBe(false);
}

interface ExternalUser {
  id: string;
  email: string;
  username: string;
}

/** An account an administrator created for external sign-in (no password). */
async function createExternalUser(loginType: "oidc" | "github", email = `${unique("ext")}@herald.test`): Promise<ExternalUser> {
  const admin = await owner();
  const username = unique("ext");
  const res = await call("POST", "/users", { token: admin.token, body: { email, username, login_type: loginType } });
  expect(res.status).toBe(201);
  return { id: (await json<{ id: string }>(res)).id, email, username };
}

function oidcAccount(email: string, extra: Partial<OidcAccount> = {}): OidcAccount {
  const sub = unique("sub");
  return { sub, email, email_verified: true, name: "Grace Hopper", preferred_username: sub, ...extra };
}

function githubAccount(email: string, extra: Partial<GithubAccount> = {}): GithubAccount {
  const id = githubId();
  return {
    id,
    login: `gh-${id}`,
    name: "Linus Octocat",
    emails: [
      { email: `${id}+noreply@users.noreply.github.test`, primary: false, verified: true, visibility: null },
      { email, primary: true, verified: true, visibility: "private" },
    ],
    ...extra,
  };
}

async function userRow(id: string) {
  return env.DB.prepare("SELECT email, login_type, hashed_password, deleted FROM users WHERE id = ?")
    .bind(id)
    .first<{ email: string; login_type: string; hashed_password: string | null; deleted: number }>();
}

async function linksOf(userId: string) {
  const { results } = await env.DB.prepare("SELECT issuer, subject, login_type, email FROM user_links WHERE user_id = ? ORDER BY created_at")
    .bind(userId)
    .all<{ issuer: string; subject: string; login_type: string; email: string }>();
  return results;
}

/** A7 as the user, its cookie stored in `jar`. */
async function convert(user: TestUser, toType: string, jar: CookieJar): Promise<{ state: string; res: Response }> {
  const res = await call("POST", "/users/me/convert-login", { token: user.token, body: { password: user.password, to_type: toType } });
  expect(res.status, await res.clone().text()).toBe(201);
  jar.absorb(CONVERT_URL, res);
  const { state_string } = await json<{ state_string: string }>(res.clone());
  return { state: state_string, res };
}

/** A cookie value with one character of its signed body changed. */
function tamper(value: string): string {
  const i = Math.floor(value.indexOf(".") / 2);
  const swapped = value[i] === "A" ? "B" : "A";
  return `${value.slice(0, i)}${swapped}${value.slice(i + 1)}`;
}

// ─────────────────────────────────────────────────────────────────────────────────────────────────────────────────

describe('OIDC sign-in (docs/api.md, "External sign-in")', () => {
  it("starts with state, PKCE S256 and nonce; signs an existing OIDC user in; links by (issuer, subject)", async () => {
    const user = await createExternalUser("oidc");
    const account = oidcAccount(user.email);
    await oidcNextLogin(account);

    const jar = new CookieJar();
    const { res: started, authorize } = await start(OIDC_CALLBACK, jar, { redirect: "/notifications?tab=unread" });
    // The authorization request: code flow to the real provider, state + PKCE (S256) + nonce, our redirect URI.
    expect(authorize.origin).toBe(new URL(ISSUER).origin);
    const params = authorize.searchParams;
    expect(params.get("response_type")).toBe("code");
    expect(params.get("client_id")).toBe("herald");
    expect(params.get("redirect_uri")).toBe(OIDC_CALLBACK);
    expect(params.get("scope")?.split(" ")).toEqual(expect.arrayContaining(["openid", "email"]));
    expect(params.get("state")).toMatch(/^[\w-]{20,}$/);
    expect(params.get("nonce")).toMatch(/^[\w-]{20,}$/);
    expect(params.get("code_challenge_method")).toBe("S256");
    expect(params.get("code_challenge")).toMatch(/^[\w-]{43}$/);
    // The flow is kept in a short-lived signed HttpOnly cookie, not in the URL.
    const flowCookie = started.headers.getSetCookie().find((c) => c.startsWith(`${FLOW_COOKIE}=`)) ?? "";
    expect(flowCookie).toMatch(/HttpOnly/i);
    expect(flowCookie).toMatch(/SameSite=Lax/i);
    expect(flowCookie).toMatch(/Path=\/api\/v2\/users/);
    expect(flowCookie).toMatch(/Expires=/i);
    noSession(started);

    const back = await throughProvider(authorize, jar);
    expect(`${back.origin}${back.pathname}`).toBe(OIDC_CALLBACK);
    expect(back.searchParams.get("code")).toBeTruthy();
    expect(back.searchParams.get("state")).toBe(params.get("state"));
    const done = await herald(back, jar);
    expect(done.status, await peek(done)).toBe(302);
    expect(done.headers.get("Location")).toBe("/notifications?tab=unread");
    await expectSignedInAs(done, user.id, "oidc");
    // The flow cookie is cleared once used.
    expect(jar.get(OIDC_CALLBACK, FLOW_COOKIE)).toBeUndefined();
    expect(await linksOf(user.id)).toEqual([{ issuer: ISSUER, subject: account.sub, login_type: "oidc", email: user.email }]);

    // Linked by subject, not by e-mail: the account's e-mail changes, and another OIDC account now holds the old
    // e-mail. The provider still reports (sub, old e-mail): the linked user signs in, not the e-mail's holder.
    const renamed = `${unique("renamed")}@herald.test`;
    await env.DB.prepare("UPDATE users SET email = ? WHERE id = ?").bind(renamed, user.id).run();
    const holder = await createExternalUser("oidc", user.email);
    await oidcNextLogin(account);
    const again = await signIn(OIDC_CALLBACK);
    expect(again.done.headers.get("Location")).toBe("/");
    await expectSignedInAs(again.done, user.id, "oidc");
    expect(await linksOf(holder.id)).toEqual([]);
  });

  it("does not let a second subject take over an already linked account through its e-mail", async () => {
    const user = await createExternalUser("oidc");
    const first = oidcAccount(user.email);
    await oidcNextLogin(first);
    await expectSignedInAs((await signIn(OIDC_CALLBACK)).done, user.id, "oidc");

    // Same issuer, same (verified) e-mail, another subject: e.g. the address was reassigned to someone else.
    await oidcNextLogin(oidcAccount(user.email));
    const { done } = await signIn(OIDC_CALLBACK);
    await expectError(done, 403);
    noSession(done);
    expect((await linksOf(user.id)).map((l) => l.subject)).toEqual([first.sub]);
  });

  it("refuses an unknown e-mail while signups are disabled (the default)", async () => {
    const email = `${unique("nobody")}@idp.test`;
    await oidcNextLogin(oidcAccount(email));
    const { done } = await signIn(OIDC_CALLBACK);
    await expectError(done, 403, ExternalMessages.signupsDisabled);
    noSession(done);
    const row = await env.DB.prepare("SELECT count(*) AS n FROM users WHERE lower(email) = ?").bind(email).first<{ n: number }>();
    expect(row?.n).toBe(0);
  });

  it("creates an OIDC user on first sign-in when OIDC_ALLOW_SIGNUPS is true, and links it", async () => {
    const email = `${unique("newcomer")}@idp.test`;
    const account = oidcAccount(email, { preferred_username: unique("Ada.Lovelace"), name: "Ada Lovelace" });
    await oidcNextLogin(account);
    const override = { OIDC_ALLOW_SIGNUPS: "true" };
    const { done } = await signIn(OIDC_CALLBACK, { override });
    expect(done.status, await peek(done)).toBe(302);
    const token = sessionOf(done);
    const me = await json<{ id: string; email: string; username: string; name: string; login_type: string }>(await meByCookie(token));
    expect(me).toMatchObject({ email, name: "Ada Lovelace", login_type: "oidc" });
    expect(me.username).toMatch(/^[a-z0-9]+(-[a-z0-9]+)*$/);
    expect((await userRow(me.id))?.hashed_password).toBeNull();
    expect(await linksOf(me.id)).toEqual([{ issuer: ISSUER, subject: account.sub, login_type: "oidc", email }]);
    // Written with the name and e-mail, so user search finds the newcomer (docs/api.md, Searching users).
    const keys = await env.DB.prepare("SELECT search_name, search_email FROM users WHERE id = ?").bind(me.id).first();
    expect(keys).toEqual({ search_name: "ada lovelace", search_email: email.toLowerCase() });

    // The next sign-in (signups off again) finds the same account through its link.
    await oidcNextLogin(account);
    await expectSignedInAs((await signIn(OIDC_CALLBACK)).done, me.id, "oidc");
  });

  it('a sign-up whose preferred_username is a reserved name gets another username (docs/api.md, "Conventions")', async () => {
    for (const preferred of ["login", "Me", "validate-password"]) {
      const email = `${unique("reserved")}@idp.test`;
      await oidcNextLogin(oidcAccount(email, { preferred_username: preferred }));
      const { done } = await signIn(OIDC_CALLBACK, { override: { OIDC_ALLOW_SIGNUPS: "true" } });
      expect(done.status, await peek(done)).toBe(302);
      const me = await json<{ username: string }>(await meByCookie(sessionOf(done)));
      expect(me.username).toMatch(new RegExp(`^${preferred.toLowerCase()}-[a-z0-9]{5}$`));
    }
  });

  it("lets a deleted self-signed-up user sign up again (the old link does not block the identity)", async () => {
    const account = oidcAccount(`${unique("returning")}@idp.test`);
    const override = { OIDC_ALLOW_SIGNUPS: "true" };
    await oidcNextLogin(account);
    const first = await signIn(OIDC_CALLBACK, { override });
    const oldId = (await json<{ id: string }>(await meByCookie(sessionOf(first.done)))).id;
    const admin = await owner();
    expect((await call("DELETE", `/users/${oldId}`, { token: admin.token })).status).toBe(200);

    await oidcNextLogin(account);
    const second = await signIn(OIDC_CALLBACK, { override });
    expect(second.done.status, await peek(second.done)).toBe(302);
    const me = await json<{ id: string }>(await meByCookie(sessionOf(second.done)));
    expect(me.id).not.toBe(oldId);
    expect((await linksOf(me.id)).map((l) => l.subject)).toEqual([account.sub]);
  });

  it("on https the flow cookie is __Secure- prefixed and Secure, so a plain-http page cannot plant one (ASVS 3.3.1)", async () => {
    const { res } = await start(OIDC_CALLBACK, new CookieJar(), {}, { ACCESS_URL: "https://herald.example" });
    const flow = res.headers.getSetCookie().find((c) => c.startsWith(`__Secure-${FLOW_COOKIE}=`));
    expect(flow).toMatch(/;\s*Secure/i);
    expect(flow).toMatch(/HttpOnly/i);
  });

  it("a second sign-in from the same browser replaces its session instead of adding one (ASVS 7.2.4)", async () => {
    const user = await createExternalUser("oidc");
    const account = oidcAccount(user.email);
    await oidcNextLogin(account);
    const first = await signIn(OIDC_CALLBACK);
    const old = await expectSignedInAs(first.done, user.id, "oidc");
    await oidcNextLogin(account);
    const second = await signIn(OIDC_CALLBACK, { jar: first.jar });
    const fresh = await expectSignedInAs(second.done, user.id, "oidc");
    expect(fresh).not.toBe(old);
    expect((await meByCookie(old)).status).toBe(401);
  });

  it("refuses an e-mail the provider has not verified, even for an existing user", async () => {
    const user = await createExternalUser("oidc");
    await oidcNextLogin(oidcAccount(user.email, { email_verified: false }));
    const { done } = await signIn(OIDC_CALLBACK, { override: { OIDC_ALLOW_SIGNUPS: "true" } });
    const body = await expectError(done, 403);
    expect(body.detail).toBe(ExternalMessages.emailNotVerified);
    noSession(done);
  });

  it("enforces OIDC_EMAIL_DOMAIN", async () => {
    const user = await createExternalUser("oidc");
    await oidcNextLogin(oidcAccount(user.email));
    const denied = await signIn(OIDC_CALLBACK, { override: { OIDC_EMAIL_DOMAIN: "corp.example, other.example" } });
    const body = await expectError(denied.done, 403);
    expect(body.detail).toBe(ExternalMessages.domainNotAllowed);
    noSession(denied.done);

    await oidcNextLogin(oidcAccount(user.email));
    const allowed = await signIn(OIDC_CALLBACK, { override: { OIDC_EMAIL_DOMAIN: "corp.example, HERALD.test" } });
    expect(allowed.done.status, await peek(allowed.done)).toBe(302);
  });

  it("answers a provider error (access_denied) with 400 in the error shape", async () => {
    await oidcNextError("access_denied", "The user cancelled the sign-in");
    const { done, callback } = await signIn(OIDC_CALLBACK);
    expect(callback.searchParams.get("error")).toBe("access_denied");
    const body = await expectError(done, 400, ExternalMessages.providerError);
    expect(body.detail).toContain("access_denied");
    noSession(done);
  });

  it("refuses a callback without the flow cookie, with a tampered or expired one, or with another state", async () => {
    const user = await createExternalUser("oidc");
    await oidcNextLogin(oidcAccount(user.email));
    const jar = new CookieJar();
    const { authorize } = await start(OIDC_CALLBACK, jar);
    const back = await throughProvider(authorize, jar);
    const flow = jar.get(OIDC_CALLBACK, FLOW_COOKIE) ?? "";
    expect(flow).toMatch(/^[\w-]+\.[0-9a-f]{64}$/);

    // No flow cookie: another browser (or a forged link) bringing a code.
    await expectError(await herald(back, new CookieJar()), 400, ExternalMessages.cookieMissing("sign-in"));
    // Tampered body, or a body re-signed under another key.
    const tampered = new CookieJar();
    tampered.set(OIDC_CALLBACK, `${FLOW_COOKIE}=${tamper(flow)}; Path=/api/v2/users`);
    await expectError(await herald(back, tampered), 400, ExternalMessages.cookieInvalid("sign-in"));
    const foreign = new CookieJar();
    const forged = await signValue(
      "another-secret-0123456789abcdefghijklmnopq",
      FLOW_COOKIE,
      { state: back.searchParams.get("state") },
      Date.now() + 60_000,
    );
    foreign.set(OIDC_CALLBACK, `${FLOW_COOKIE}=${forged}; Path=/api/v2/users`);
    await expectError(await herald(back, foreign), 400, ExternalMessages.cookieInvalid("sign-in"));
    // A correctly signed but expired flow.
    const stale = new CookieJar();
    const expired = await signValue(required(env.SECRET_KEY, "SECRET_KEY"), FLOW_COOKIE, { state: "x" }, Date.now() - 1000);
    stale.set(OIDC_CALLBACK, `${FLOW_COOKIE}=${expired}; Path=/api/v2/users`);
    await expectError(await herald(back, stale), 400, ExternalMessages.cookieExpired("sign-in"));
    // The state in the URL is not the one this browser started with.
    const otherState = new URL(back);
    otherState.searchParams.set("state", "not-the-state");
    await expectError(await herald(otherState, jar), 400, ExternalMessages.stateMismatch);
    const noState = new URL(back);
    noState.searchParams.delete("state");
    await expectError(await herald(noState, jar), 400, ExternalMessages.stateMismatch);

    // None of that used up the real flow.
    await expectSignedInAs(await herald(back, jar), user.id, "oidc");
  });

  it("refuses a code replayed under a fresh flow (the exchange fails), and a flow started for GitHub", async () => {
    const user = await createExternalUser("oidc");
    await oidcNextLogin(oidcAccount(user.email));
    const first = await signIn(OIDC_CALLBACK);
    await expectSignedInAs(first.done, user.id, "oidc");

    // A fresh flow in a fresh browser, given the first flow's (already redeemed) code with the fresh state.
    const jar = new CookieJar();
    const { authorize } = await start(OIDC_CALLBACK, jar);
    const replay = new URL(first.callback);
    replay.searchParams.set("state", authorize.searchParams.get("state") ?? "");
    const res = await herald(replay, jar);
    await expectError(res, 400, ExternalMessages.oidcExchangeFailed);
    noSession(res);

    // A flow cookie made by the GitHub callback does not finish an OIDC sign-in.
    const ghJar = new CookieJar();
    const gh = await start(GITHUB_CALLBACK, ghJar);
    const crossed = withQuery(OIDC_CALLBACK, { code: "x", state: gh.authorize.searchParams.get("state") ?? "" });
    await expectError(await herald(crossed, ghJar), 400, ExternalMessages.otherProvider);
  });

  it.each([
    ["an absolute URL", "https://evil.example.com/steal"],
    ["a scheme-relative URL", "//evil.example.com"],
    ["a backslash host", "/\\evil.example.com"],
    ["a javascript: URL", "javascript:alert(1)"],
    ["a tab-smuggled host", "/\t/evil.example.com"],
    ["a relative path without slash", "evil.example.com"],
  ])("ignores an open-redirect attempt with %s and lands on /", async (_what, target) => {
    const user = await createExternalUser("oidc");
    await oidcNextLogin(oidcAccount(user.email));
    const { done } = await signIn(OIDC_CALLBACK, { query: { redirect: target } });
    expect(done.status, await peek(done)).toBe(302);
    const location = done.headers.get("Location") ?? "";
    expect(location).toBe("/");
    expect(new URL(location, HERALD).origin).toBe(HERALD);
    sessionOf(done);
  });

  it("keeps a same-origin redirect path, query and fragment", async () => {
    const user = await createExternalUser("oidc");
    await oidcNextLogin(oidcAccount(user.email));
    const { done } = await signIn(OIDC_CALLBACK, { query: { redirect: "/inbox/unread?page=2#top" } });
    expect(done.headers.get("Location")).toBe("/inbox/unread?page=2#top");
  });

  it('lands on / (the dashboard) by default, whose API calls the new session cookie then authenticates (docs/api.md, "External sign-in")', async () => {
    const user = await createExternalUser("oidc");
    await oidcNextLogin(oidcAccount(user.email));
    const { done, jar } = await signIn(OIDC_CALLBACK);
    expect(done.headers.get("Location")).toBe("/");
    const dashboard = await herald(new URL("/", HERALD), jar);
    expect(dashboard.status).toBe(200);
    expect(dashboard.headers.get("Content-Type")).toMatch(/^text\/html/);
    const me = await herald(new URL("/api/v2/users/me", HERALD), jar);
    expect(me.status).toBe(200);
    expect(await me.json()).toMatchObject({ username: user.username });
  });

  it('sends the browser back to a dashboard on an origin in CORS_ALLOWED_ORIGINS, and nowhere else (docs/api.md, "External sign-in")', async () => {
    const override = { CORS_ALLOWED_ORIGINS: "https://app.example.com" };
    for (const [target, expected] of [
      ["https://app.example.com/after?x=1", "https://app.example.com/after?x=1"],
      ["https://elsewhere.example.com/after", "/"],
    ]) {
      const user = await createExternalUser("github");
      await githubNextLogin(githubAccount(user.email));
      const { done } = await signIn(GITHUB_CALLBACK, { query: { redirect: target ?? "" }, override });
      expect(done.status, await peek(done)).toBe(302);
      expect(done.headers.get("Location")).toBe(expected);
    }
  });

  it("never takes over a password user through its e-mail (wrong login type)", async () => {
    const user = await createUser();
    await oidcNextLogin(oidcAccount(user.email));
    const { done } = await signIn(OIDC_CALLBACK, { override: { OIDC_ALLOW_SIGNUPS: "true" } });
    await expectError(done, 403, AuthMessages.wrongLoginType("oidc", "password"));
    noSession(done);
    expect(await linksOf(user.id)).toEqual([]);
    expect((await userRow(user.id))?.login_type).toBe("password");
    expect((await call("GET", "/users/me", { token: user.token })).status).toBe(200);
  });
});

// ─────────────────────────────────────────────────────────────────────────────────────────────────────────────────

describe('A7 POST /users/{user}/convert-login (docs/api.md, "Converting a password account")', () => {
  it("answers 201 with the state and sets a signed HttpOnly conversion cookie", async () => {
    const user = await createUser();
    const before = Date.now();
    const res = await call("POST", "/users/me/convert-login", { token: user.token, body: { password: user.password, to_type: "oidc" } });
    expect(res.status).toBe(201);
    expect(res.headers.get("Content-Type")).toMatch(/application\/json/);
    const body = await json<{ state_string: string; expires_at: string; to_type: string; user_id: string }>(res);
    expect(Object.keys(body).sort()).toEqual(["expires_at", "state_string", "to_type", "user_id"]);
    expect(body.state_string).toMatch(/^convert-[0-9A-Za-z]{32}$/);
    expect(body.to_type).toBe("oidc");
    expect(body.user_id).toBe(user.id);
    expect(body.expires_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const expires = Date.parse(body.expires_at);
    expect(expires).toBeGreaterThanOrEqual(before + 5 * 60_000 - 1000);
    expect(expires).toBeLessThanOrEqual(Date.now() + 5 * 60_000 + 1000);

    const cookie = res.headers.getSetCookie().find((c) => c.startsWith(`${CONVERSION_COOKIE}=`)) ?? "";
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Lax/i);
    expect(cookie).toMatch(/Path=\/api\/v2\/users/);
    // Signed: a body and an HMAC.
    expect(cookie.split(";")[0]?.slice(CONVERSION_COOKIE.length + 1)).toMatch(/^[\w-]+\.[0-9a-f]{64}$/);
    // Only an HMAC of the state is stored.
    const row = await env.DB.prepare("SELECT state_hmac, to_type, used_at FROM login_conversions WHERE user_id = ?")
      .bind(user.id)
      .first<{ state_hmac: string; to_type: string; used_at: string | null }>();
    expect(row?.to_type).toBe("oidc");
    expect(row?.used_at).toBeNull();
    expect(row?.state_hmac).not.toContain(body.state_string);

    // The same user by UUID or username works too; github is configured as well.
    const gh = await call("POST", `/users/${user.username}/convert-login`, {
      token: user.token,
      body: { password: user.password, to_type: "github" },
    });
    expect(gh.status).toBe(201);
    expect((await json<{ to_type: string }>(gh)).to_type).toBe("github");
  });

  it.each(["password", "none", "token"])("refuses to_type %s with 400", async (toType) => {
    const user = await createUser();
    const res = await call("POST", "/users/me/convert-login", { token: user.token, body: { password: user.password, to_type: toType } });
    await expectError(res, 400, ExternalMessages.cannotConvertTo(toType));
    expect(res.headers.getSetCookie()).toEqual([]);
  });

  it("refuses an unknown login type with 400", async () => {
    const user = await createUser();
    for (const toType of ["saml", "OIDC", ""]) {
      const res = await call("POST", "/users/me/convert-login", { token: user.token, body: { password: user.password, to_type: toType } });
      await expectError(res, 400, ExternalMessages.unknownLoginType(toType));
    }
  });

  it("answers a wrong password with 401 and starts nothing", async () => {
    const user = await createUser();
    const res = await call("POST", "/users/me/convert-login", { token: user.token, body: { password: "not-my-password-1", to_type: "oidc" } });
    await expectError(res, 401, AuthMessages.incorrectLogin);
    expect(res.headers.getSetCookie()).toEqual([]);
    const row = await env.DB.prepare("SELECT count(*) AS n FROM login_conversions WHERE user_id = ?").bind(user.id).first<{ n: number }>();
    expect(row?.n).toBe(0);
  });

  it("allows only the user themself: the owner converting someone else gets 403", async () => {
    const admin = await owner();
    const user = await createUser();
    const res = await call("POST", `/users/${user.id}/convert-login`, { token: admin.token, body: { password: user.password, to_type: "oidc" } });
    await expectError(res, 403);
    const member = await createUser();
    const other = await call("POST", `/users/${user.id}/convert-login`, { token: member.token, body: { password: user.password, to_type: "oidc" } });
    expect([403, 404]).toContain(other.status);
    await expectError(other, other.status);
  });

  it("refuses a user who is not a password user", async () => {
    const user = await createExternalUser("oidc");
    await oidcNextLogin(oidcAccount(user.email));
    const token = await expectSignedInAs((await signIn(OIDC_CALLBACK)).done, user.id, "oidc");
    const res = await call("POST", "/users/me/convert-login", { token, body: { password: "whatever-password", to_type: "github" } });
    await expectError(res, 400, ExternalMessages.passwordLoginRequired);
  });

  it("validates the body and requires authentication", async () => {
    const user = await createUser();
    const missing = await expectError(await call("POST", "/users/me/convert-login", { token: user.token, body: {} }), 400, Messages.validation);
    expect(missing.validations?.map((v) => v.field).sort()).toEqual(["password", "to_type"]);
    const noType = await expectError(
      await call("POST", "/users/me/convert-login", { token: user.token, body: { password: user.password } }),
      400,
      Messages.validation,
    );
    expect(noType.validations?.map((v) => v.field)).toEqual(["to_type"]);
    await expectError(await call("POST", "/users/me/convert-login", { token: user.token, raw: "{nope" }), 400, Messages.badJson);
    await expectError(await call("POST", "/users/me/convert-login", { body: { password: user.password, to_type: "oidc" } }), 401);
  });
});

describe('rate limits of the callbacks and A7 (docs/api.md, "External sign-in" and "Converting a password account")', () => {
  it("limits each callback per client IP with 429 and Retry-After", async () => {
    for (const callback of [OIDC_CALLBACK, GITHUB_CALLBACK]) {
      const ip = randomIp();
      const limited = await untilLimited(
        20,
        () => send(new Request(callback, { headers: { "CF-Connecting-IP": ip }, redirect: "manual" })),
        async (res) => {
          expect(res.status, callback).toBe(302);
          await res.body?.cancel();
        },
      );
      const body = await expectError(limited, 429);
      expect(body.message).toBe(Messages.rateLimited(20, "1m0s"));
      expect(limited.headers.get("Retry-After")).toBe("60");
    }
  });

  it("limits A7 per account (and client)", async () => {
    const user = await createUser();
    const client = { "CF-Connecting-IP": `198.51.100.${Math.floor(Math.random() * 250)}` };
    const limited = await untilLimited(
      10,
      () =>
        call("POST", "/users/me/convert-login", { token: user.token, headers: client, body: { password: "not-the-password-1", to_type: "oidc" } }),
      async (res) => {
        await expectError(res, 401, AuthMessages.incorrectLogin);
      },
    );
    await expectError(limited, 429);
  });
});

// ─────────────────────────────────────────────────────────────────────────────────────────────────────────────────

/** Messages of `templateId` logged for the user. */
async function messagesOf(userId: string, templateId: string) {
  const { results } = await env.DB.prepare("SELECT method, payload FROM notification_messages WHERE user_id = ? AND template_id = ?")
    .bind(userId, templateId)
    .all<{ method: string; payload: string }>();
  return results;
}

describe('A7 conversion, end to end through the provider (docs/api.md, "Converting a password account")', () => {
  it("converts a password user to OIDC: new session, password gone, old credentials dead, notice and audit", async () => {
    const user = await createUser();
    // An API token and a second session, both to be revoked by the conversion.
    const tokenRes = await call("POST", "/users/me/keys/tokens", { token: user.token, body: { token_name: "ci" } });
    expect(tokenRes.status).toBe(201);
    const apiToken = (await json<{ key: string }>(tokenRes)).key;
    // Control: as a password user, A5 does issue a passcode.
    await requestPasscodeSettled(user.email);
    expect(await messagesOf(user.id, TEMPLATE_IDS.oneTimePasscode)).toHaveLength(1);

    const jar = new CookieJar();
    const { state } = await convert(user, "oidc", jar);
    expect(jar.get(OIDC_CALLBACK, CONVERSION_COOKIE)).toBeTruthy();
    const account = oidcAccount(user.email.toUpperCase());
    await oidcNextLogin(account);
    const flow = await signIn(OIDC_CALLBACK, { jar, query: { oidc_merge_state: state, redirect: "/settings/account" } });
    expect(flow.done.headers.get("Location")).toBe("/settings/account");
    const session = await expectSignedInAs(flow.done, user.id, "oidc");
    expect(jar.get(OIDC_CALLBACK, CONVERSION_COOKIE)).toBeUndefined();
    expect(jar.get(OIDC_CALLBACK, FLOW_COOKIE)).toBeUndefined();

    const row = await userRow(user.id);
    expect(row?.login_type).toBe("oidc");
    expect(row?.hashed_password).toBeNull();
    expect((await linksOf(user.id)).map((l) => [l.issuer, l.subject, l.login_type])).toEqual([[ISSUER, account.sub, "oidc"]]);
    const conversion = await env.DB.prepare("SELECT used_at FROM login_conversions WHERE user_id = ?")
      .bind(user.id)
      .first<{ used_at: string | null }>();
    expect(conversion?.used_at).toBeTruthy();

    // Every old session and token is dead; only the new one works.
    await expectError(await call("GET", "/users/me", { token: user.token }), 401);
    await expectError(await call("GET", "/users/me", { token: apiToken }), 401);
    const { results: keys } = await env.DB.prepare("SELECT login_type FROM api_keys WHERE user_id = ?").bind(user.id).all<{ login_type: string }>();
    expect(keys).toEqual([{ login_type: "oidc" }]);
    expect((await call("GET", "/users/me", { token: session })).status).toBe(200);

    // Password sign-in and the passcode reset no longer work for this user.
    await expectError(await call("POST", "/users/login", { body: { email: user.email, password: user.password } }), 401, AuthMessages.incorrectLogin);
    await requestPasscodeSettled(user.email);
    expect(await messagesOf(user.id, TEMPLATE_IDS.oneTimePasscode)).toHaveLength(1);
    await expectError(
      await call("POST", "/users/otp/change-password", {
        body: { email: user.email, one_time_passcode: crypto.randomUUID(), password: `Fresh-${crypto.randomUUID()}` },
      }),
      400,
      AuthMessages.incorrectPasscode,
    );
    expect((await userRow(user.id))?.hashed_password).toBeNull();

    // The "Login method changed" notice and the audit entry.
    const notices = await messagesOf(user.id, TEMPLATE_IDS.loginMethodChanged);
    expect(notices.length).toBeGreaterThanOrEqual(1);
    expect(JSON.parse(notices[0]?.payload ?? "{}")).toMatchObject({
      notification_name: "Login method changed",
      labels: { old_login_type: "password", new_login_type: "oidc" },
    });
    const audit = await env.DB.prepare("SELECT user_id, diff FROM audit_logs WHERE action = 'convert_login' AND resource_id = ?")
      .bind(user.id)
      .first<{ user_id: string; diff: string }>();
    expect(audit?.user_id).toBe(user.id);
    expect(JSON.parse(audit?.diff ?? "{}")).toMatchObject({ login_type: { old: "password", new: "oidc" } });

    // From now on the provider signs the user in.
    await oidcNextLogin(account);
    await expectSignedInAs((await signIn(OIDC_CALLBACK)).done, user.id, "oidc");
  });

  it("refuses a provider e-mail that is not the user's (403) and leaves the user a password user", async () => {
    const user = await createUser();
    const jar = new CookieJar();
    const { state } = await convert(user, "oidc", jar);
    await oidcNextLogin(oidcAccount(`${unique("someone-else")}@idp.test`));
    const { done } = await signIn(OIDC_CALLBACK, { jar, query: { oidc_merge_state: state } });
    await expectError(done, 403);
    noSession(done);
    const row = await userRow(user.id);
    expect(row?.login_type).toBe("password");
    expect(row?.hashed_password).toBeTruthy();
    expect(await linksOf(user.id)).toEqual([]);
    expect((await call("GET", "/users/me", { token: user.token })).status).toBe(200);
    expect((await call("POST", "/users/login", { body: { email: user.email, password: user.password } })).status).toBe(201);
  });

  it("refuses an unverified provider e-mail", async () => {
    const user = await createUser();
    const jar = new CookieJar();
    const { state } = await convert(user, "oidc", jar);
    await oidcNextLogin(oidcAccount(user.email, { email_verified: false }));
    const { done } = await signIn(OIDC_CALLBACK, { jar, query: { oidc_merge_state: state } });
    await expectError(done, 403);
    expect((await userRow(user.id))?.login_type).toBe("password");
  });

  it("refuses an expired state", async () => {
    const user = await createUser();
    const jar = new CookieJar();
    const { state } = await convert(user, "oidc", jar);
    await env.DB.prepare("UPDATE login_conversions SET expires_at = ? WHERE user_id = ?")
      .bind(new Date(Date.now() - 1000).toISOString(), user.id)
      .run();
    await oidcNextLogin(oidcAccount(user.email));
    const { done } = await signIn(OIDC_CALLBACK, { jar, query: { oidc_merge_state: state } });
    await expectError(done, 400, ExternalMessages.conversionUsed);
    noSession(done);
    expect((await userRow(user.id))?.login_type).toBe("password");
  });

  it("refuses a reused state", async () => {
    const user = await createUser();
    const jar = new CookieJar();
    const { state } = await convert(user, "oidc", jar);
    const cookie = jar.get(OIDC_CALLBACK, CONVERSION_COOKIE) ?? "";
    const account = oidcAccount(user.email);
    await oidcNextLogin(account);
    await expectSignedInAs((await signIn(OIDC_CALLBACK, { jar, query: { oidc_merge_state: state } })).done, user.id, "oidc");

    // The same cookie and state once more, from a browser that kept them.
    const replay = new CookieJar();
    replay.set(OIDC_CALLBACK, `${CONVERSION_COOKIE}=${cookie}; Path=/api/v2/users`);
    await oidcNextLogin(account);
    const { done } = await signIn(OIDC_CALLBACK, { jar: replay, query: { oidc_merge_state: state } });
    await expectError(done, 400, ExternalMessages.conversionUsed);
    noSession(done);
  });

  it("refuses a missing or tampered conversion cookie", async () => {
    const user = await createUser();
    const jar = new CookieJar();
    const { state } = await convert(user, "oidc", jar);
    const missing = await herald(withQuery(OIDC_CALLBACK, { oidc_merge_state: state }), new CookieJar());
    await expectError(missing, 400, ExternalMessages.cookieMissing("login conversion"));
    expect(missing.headers.get("Location")).toBeNull();

    const tampered = new CookieJar();
    tampered.set(OIDC_CALLBACK, `${CONVERSION_COOKIE}=${tamper(jar.get(OIDC_CALLBACK, CONVERSION_COOKIE) ?? "")}; Path=/api/v2/users`);
    await expectError(
      await herald(withQuery(OIDC_CALLBACK, { oidc_merge_state: state }), tampered),
      400,
      ExternalMessages.cookieInvalid("login conversion"),
    );

    // A cookie naming another user, signed under another key, is not accepted either.
    const forged = new CookieJar();
    const value = await signValue(
      "another-secret-0123456789abcdefghijklmnopq",
      CONVERSION_COOKIE,
      { state, userId: user.id, toType: "oidc" },
      Date.now() + 60_000,
    );
    forged.set(OIDC_CALLBACK, `${CONVERSION_COOKIE}=${value}; Path=/api/v2/users`);
    await expectError(
      await herald(withQuery(OIDC_CALLBACK, { oidc_merge_state: state }), forged),
      400,
      ExternalMessages.cookieInvalid("login conversion"),
    );
    expect((await userRow(user.id))?.login_type).toBe("password");
  });

  it("refuses another user's state and a mismatching oidc_merge_state", async () => {
    const alice = await createUser();
    const bob = await createUser();
    const aliceJar = new CookieJar();
    await convert(alice, "oidc", aliceJar);
    const { state: bobState } = await convert(bob, "oidc", new CookieJar());

    const crossed = await herald(withQuery(OIDC_CALLBACK, { oidc_merge_state: bobState }), aliceJar);
    await expectError(crossed, 400, ExternalMessages.conversionStateMismatch);
    const madeUp = await herald(withQuery(OIDC_CALLBACK, { oidc_merge_state: `convert-${"a".repeat(32)}` }), aliceJar);
    await expectError(madeUp, 400, ExternalMessages.conversionStateMismatch);
    const empty = await herald(withQuery(OIDC_CALLBACK, { oidc_merge_state: "" }), aliceJar);
    await expectError(empty, 400, ExternalMessages.conversionStateMismatch);
    expect((await userRow(alice.id))?.login_type).toBe("password");
    expect((await userRow(bob.id))?.login_type).toBe("password");
  });

  it("refuses a GitHub conversion started on the OIDC callback", async () => {
    const user = await createUser();
    const jar = new CookieJar();
    const { state } = await convert(user, "github", jar);
    const res = await herald(withQuery(OIDC_CALLBACK, { oidc_merge_state: state }), jar);
    await expectError(res, 400, ExternalMessages.conversionForOther("github", "oidc"));
  });

  it("refuses an identity that already belongs to another account (409) and keeps the password", async () => {
    const holder = await createExternalUser("oidc");
    const account = oidcAccount(holder.email);
    await oidcNextLogin(account);
    await expectSignedInAs((await signIn(OIDC_CALLBACK)).done, holder.id, "oidc");

    const user = await createUser();
    const jar = new CookieJar();
    const { state } = await convert(user, "oidc", jar);
    // The provider reports the holder's subject with this user's e-mail (e.g. the IdP account's address changed).
    await oidcNextLogin({ ...account, email: user.email });
    const { done } = await signIn(OIDC_CALLBACK, { jar, query: { oidc_merge_state: state } });
    await expectError(done, 409, ExternalMessages.identityTaken);
    expect((await userRow(user.id))?.login_type).toBe("password");
  });

  it("does not convert a user suspended after starting the conversion", async () => {
    const admin = await owner();
    const user = await createUser();
    const jar = new CookieJar();
    const { state } = await convert(user, "oidc", jar);
    expect((await call("PUT", `/users/${user.id}/status/suspend`, { token: admin.token })).status).toBe(200);
    await oidcNextLogin(oidcAccount(user.email));
    const { done } = await signIn(OIDC_CALLBACK, { jar, query: { oidc_merge_state: state } });
    await expectError(done, 401, AuthMessages.suspended);
    noSession(done);
    const row = await userRow(user.id);
    expect(row?.login_type).toBe("password");
    expect(row?.hashed_password).toBeTruthy();
  });
});

// ─────────────────────────────────────────────────────────────────────────────────────────────────────────────────

describe('GitHub sign-in against the stand-in (docs/api.md, "External sign-in")', () => {
  it("signs an existing GitHub user in by its primary verified e-mail, then by its link", async () => {
    const user = await createExternalUser("github");
    const account = githubAccount(user.email);
    await githubNextLogin(account);

    const jar = new CookieJar();
    const { authorize } = await start(GITHUB_CALLBACK, jar, { redirect: "/inbox" });
    expect(`${authorize.origin}${authorize.pathname}`).toBe(`${GITHUB_ISSUER}/login/oauth/authorize`);
    expect(authorize.searchParams.get("client_id")).toBe("herald-gh");
    expect(authorize.searchParams.get("redirect_uri")).toBe(GITHUB_CALLBACK);
    expect(authorize.searchParams.get("state")).toMatch(/^[\w-]{20,}$/);
    expect(authorize.searchParams.get("code_challenge_method")).toBe("S256");
    expect(authorize.searchParams.get("scope")).toContain("user:email");
    expect(jar.get(GITHUB_CALLBACK, FLOW_COOKIE)).toBeTruthy();
    const back = await throughProvider(authorize, jar);
    const done = await herald(back, jar);
    expect(done.headers.get("Location")).toBe("/inbox");
    await expectSignedInAs(done, user.id, "github");
    expect(await linksOf(user.id)).toEqual([{ issuer: GITHUB_ISSUER, subject: String(account.id), login_type: "github", email: user.email }]);

    // Linked by GitHub's numeric id: a renamed account (new primary e-mail at GitHub) is still this user.
    await githubNextLogin({ ...account, login: "renamed", emails: [{ email: `${unique("moved")}@github.test`, primary: true, verified: true }] });
    await expectSignedInAs((await signIn(GITHUB_CALLBACK)).done, user.id, "github");
  });

  it("refuses when the user's e-mail is verified but not primary, or primary but unverified", async () => {
    const user = await createExternalUser("github");
    await githubNextLogin(
      githubAccount(user.email, {
        emails: [
          { email: `${unique("primary")}@github.test`, primary: true, verified: false, visibility: "public" },
          { email: user.email, primary: false, verified: true, visibility: null },
        ],
      }),
    );
    const notPrimary = await signIn(GITHUB_CALLBACK);
    const body = await expectError(notPrimary.done, 403);
    expect(body.detail).toBe(ExternalMessages.emailNotVerified);
    noSession(notPrimary.done);

    await githubNextLogin(githubAccount(user.email, { emails: [{ email: user.email, primary: true, verified: false, visibility: "private" }] }));
    await expectError((await signIn(GITHUB_CALLBACK)).done, 403);
  });

  it("never signs up through GitHub, whatever OIDC_ALLOW_SIGNUPS says", async () => {
    const email = `${unique("stranger")}@github.test`;
    await githubNextLogin(githubAccount(email));
    const { done } = await signIn(GITHUB_CALLBACK, { override: { OIDC_ALLOW_SIGNUPS: "true" } });
    await expectError(done, 403, ExternalMessages.signupsDisabled);
    const row = await env.DB.prepare("SELECT count(*) AS n FROM users WHERE lower(email) = ?").bind(email).first<{ n: number }>();
    expect(row?.n).toBe(0);
  });

  it("refuses a password user's e-mail and an OIDC user's e-mail (wrong login type)", async () => {
    const user = await createUser();
    await githubNextLogin(githubAccount(user.email));
    await expectError((await signIn(GITHUB_CALLBACK)).done, 403, AuthMessages.wrongLoginType("github", "password"));
    const oidcUser = await createExternalUser("oidc");
    await githubNextLogin(githubAccount(oidcUser.email));
    await expectError((await signIn(GITHUB_CALLBACK)).done, 403, AuthMessages.wrongLoginType("github", "oidc"));
  });

  it("converts a password user to GitHub end to end", async () => {
    const user = await createUser();
    const jar = new CookieJar();
    const { state } = await convert(user, "github", jar);
    // The OIDC callback will not run a GitHub conversion, but GitHub's will.
    const account = githubAccount(user.email);
    await githubNextLogin(account);
    const flow = await signIn(GITHUB_CALLBACK, { jar, query: { oidc_merge_state: state } });
    const session = await expectSignedInAs(flow.done, user.id, "github");
    const row = await userRow(user.id);
    expect(row?.login_type).toBe("github");
    expect(row?.hashed_password).toBeNull();
    expect((await linksOf(user.id)).map((l) => [l.issuer, l.subject])).toEqual([[GITHUB_ISSUER, String(account.id)]]);
    await expectError(await call("GET", "/users/me", { token: user.token }), 401);
    expect((await call("GET", "/users/me", { token: session })).status).toBe(200);
    await expectError(await call("POST", "/users/login", { body: { email: user.email, password: user.password } }), 401, AuthMessages.incorrectLogin);
    expect((await messagesOf(user.id, TEMPLATE_IDS.loginMethodChanged)).length).toBeGreaterThanOrEqual(1);

    await githubNextLogin(account);
    await expectSignedInAs((await signIn(GITHUB_CALLBACK)).done, user.id, "github");
  });

  it("refuses an OIDC conversion started on the GitHub callback", async () => {
    const user = await createUser();
    const jar = new CookieJar();
    const { state } = await convert(user, "oidc", jar);
    await expectError(
      await herald(withQuery(GITHUB_CALLBACK, { oidc_merge_state: state }), jar),
      400,
      ExternalMessages.conversionForOther("oidc", "github"),
    );
  });

  it("answers bad_verification_code (a replayed code under a fresh flow) with 400", async () => {
    const user = await createExternalUser("github");
    await githubNextLogin(githubAccount(user.email));
    const first = await signIn(GITHUB_CALLBACK);
    await expectSignedInAs(first.done, user.id, "github");

    const jar = new CookieJar();
    const { authorize } = await start(GITHUB_CALLBACK, jar);
    const replay = new URL(first.callback);
    replay.searchParams.set("state", authorize.searchParams.get("state") ?? "");
    const res = await herald(replay, jar);
    await expectError(res, 400, ExternalMessages.githubExchangeFailed);
    noSession(res);
  });

  it("answers a GitHub authorize error (access_denied) with 400", async () => {
    await githubNextError("access_denied", "The user has denied your application access.");
    const { done } = await signIn(GITHUB_CALLBACK);
    const body = await expectError(done, 400, ExternalMessages.providerError);
    expect(body.detail).toContain("access_denied");
  });
});

describe("provider trouble", () => {
  it("an OpenID provider whose discovery fails answers 502 in the error shape, not a 500", async () => {
    const ctx = createExecutionContext();
    // A live server with no issuer at that path: discovery gets a 404 and fails. (A refused connection takes the same
    // branch; it is not used here because workerd logs the refused socket as an uncaught exception of its own.)
    const res = await fetchApp(
      new Request("http://localhost:8787/api/v2/users/oidc/callback", {
        headers: { "CF-Connecting-IP": `203.0.113.${Math.floor(Math.random() * 250)}` },
      }),
      { ...env, OIDC_ISSUER_URL: `${env.PEER_URL}/no-such-issuer` } as Env,
      ctx,
    );
    await waitOnExecutionContext(ctx);
    await expectError(res, 502, ExternalMessages.oidcUnreachable);
  });

  it("an unconfigured provider answers 400 and starts nothing", async () => {
    const ctx = createExecutionContext();
    const res = await fetchApp(
      new Request("http://localhost:8787/api/v2/users/oauth2/github/callback", {
        headers: { "CF-Connecting-IP": `203.0.113.${Math.floor(Math.random() * 250)}` },
      }),
      { ...env, GITHUB_CLIENT_ID: "", GITHUB_CLIENT_SECRET: "" } as Env,
      ctx,
    );
    await waitOnExecutionContext(ctx);
    await expectError(res, 400, ExternalMessages.notConfigured("GitHub"));
    expect(res.headers.get("Set-Cookie")).toBeNull();
  });
});
