// External sign-in of a user with a second factor (docs/second-factor.md, "Signing in"; docs/api.md, "External
// sign-in"): the callback ends at the dashboard's second-factor page before any session exists —
// `<ACCESS_URL origin>/#/second-factor?mfa_token=…&methods=…`, all in the fragment — and
// `POST /users/login/mfa` then signs the browser in and answers the flow's `redirect`, which the server kept. Real flows against the OpenID Provider and the GitHub stand-in
// (test/peers), walked by a cookie jar as in test/external/external-login.test.ts.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { MfaMessages } from "../../src/auth/mfa/messages";
import { codeAt, enrolTotp, forgetUsedStep } from "../auth/mfa-helpers";
import { call, expectError, json, owner, send } from "../helpers";
import { CookieJar, followRedirects, githubNextLogin, oidcNextLogin } from "./oauth-peers";

const HERALD = "http://localhost:8787";
const OIDC_CALLBACK = `${HERALD}/api/v2/users/oidc/callback`;
const GITHUB_CALLBACK = `${HERALD}/api/v2/users/oauth2/github/callback`;
const SESSION_COOKIE = "service_session_token";
const FLOW_COOKIE = "herald_oauth_flow";

const unique = (prefix: string) => `${prefix}-${crypto.randomUUID().slice(0, 8)}`;
const randomIp = () => `10.${[0, 0, 0].map(() => Math.floor(Math.random() * 255)).join(".")}`;

/** A GET from the browser `jar` to Herald, its cookies kept. */
async function herald(url: string | URL, jar: CookieJar): Promise<Response> {
  const headers = new Headers({ "CF-Connecting-IP": randomIp() });
  const cookie = jar.header(url);
  if (cookie !== undefined) headers.set("Cookie", cookie);
  const res = await send(new Request(url, { headers, redirect: "manual" }));
  jar.absorb(url, res);
  return res;
}

/** A whole flow: Herald's start, the provider's hops, and Herald's answer at the callback. */
async function signIn(callback: string, redirect: string): Promise<{ jar: CookieJar; done: Response }> {
  const jar = new CookieJar();
  const start = new URL(callback);
  start.searchParams.set("redirect", redirect);
  const started = await herald(start, jar);
  expect(started.status).toBe(302);
  const chain = await followRedirects(new URL(started.headers.get("Location") ?? ""), jar, { stopWhen: (url) => url.origin === HERALD });
  expect(chain.stoppedAt, chain.hops.map((h) => `${h.status} ${h.url}`).join("\n")).not.toBeNull();
  return { jar, done: await herald(chain.stoppedAt ?? "", jar) };
}

function sessionCookieOf(res: Response): string | undefined {
  const header = res.headers.getSetCookie().find((c) => c.startsWith(`${SESSION_COOKIE}=`));
  return header?.split(";")[0]?.slice(SESSION_COOKIE.length + 1) || undefined;
}

/** The second-factor page a callback sent the browser to, and what its fragment carries. */
function secondFactorPage(res: Response): { mfaToken: string; methods: string[] } {
  expect(res.status).toBe(302);
  const location = res.headers.get("Location") ?? "";
  const [page, query = ""] = location.split("?");
  expect(page).toBe(`${HERALD}/#/second-factor`);
  // Exactly the two parameters, in the fragment: nothing of them in a path or query a server would see, and no
  // target for the page to trust (the server keeps it with the token).
  expect(new URL(location).search).toBe("");
  expect(query).toMatch(/^mfa_token=[0-9A-Za-z-]+&methods=[a-z_,]+$/);
  const params = new URLSearchParams(query);
  return { mfaToken: params.get("mfa_token") ?? "", methods: (params.get("methods") ?? "").split(",") };
}

/** An account an administrator made for external sign-in (no password). */
async function externalUser(loginType: "oidc" | "github", email: string): Promise<string> {
  const admin = await owner();
  const res = await call("POST", "/users", { token: admin.token, body: { email, username: unique("mfa-ext"), login_type: loginType } });
  expect(res.status).toBe(201);
  return (await json<{ id: string }>(res)).id;
}

/** Signs in once through the provider (no factor yet) and enrols an authenticator app with that session. */
async function enrolAfter(callback: string) {
  const token = sessionCookieOf((await signIn(callback, "/")).done);
  expect(token).toBeDefined();
  return enrolTotp({ token: token ?? "" });
}

describe('external sign-in with a second factor (docs/second-factor.md, "Signing in")', () => {
  it("OIDC: the callback sends the browser to the second-factor page with no session; the code then signs it in", async () => {
    const email = `${unique("oidc-mfa")}@herald.test`;
    oidcNextLogin({ sub: unique("sub"), email, email_verified: true, name: "Grace Hopper", preferred_username: unique("grace") });
    const user = { id: await externalUser("oidc", email) };
    const { secret } = await enrolAfter(OIDC_CALLBACK);
    await forgetUsedStep(user.id);

    const { jar, done } = await signIn(OIDC_CALLBACK, "/notifications?tab=unread");
    expect(sessionCookieOf(done)).toBeUndefined();
    // The flow cookie is spent either way.
    expect(
      done.headers.getSetCookie().some((c) => c.startsWith(`${FLOW_COOKIE}=;`) || (c.startsWith(`${FLOW_COOKIE}=`) && /Max-Age=0/i.test(c))),
    ).toBe(true);
    const page = secondFactorPage(done);
    expect(page.methods).toEqual(["totp", "recovery_code"]);
    expect(jar.header(`${HERALD}/`) ?? "").not.toContain(SESSION_COOKIE);

    const finished = await call("POST", "/users/login/mfa", { body: { mfa_token: page.mfaToken, code: codeAt(secret) } });
    expect(finished.status).toBe(201);
    expect(await finished.clone().json()).toMatchObject({ redirect: "/notifications?tab=unread" });
    const token = sessionCookieOf(finished);
    expect(token).toBeDefined();
    const me = await json<{ id: string; login_type: string }>(await call("GET", "/users/me", { token }));
    expect(me).toMatchObject({ id: user.id, login_type: "oidc" });
    const row = await env.DB.prepare("SELECT login_type, auth_methods FROM api_keys WHERE id = ?")
      .bind(token?.slice(0, 10))
      .first<{ login_type: string; auth_methods: string }>();
    expect(row?.login_type).toBe("oidc");
    expect(JSON.parse(row?.auth_methods ?? "[]")).toEqual(["oidc", "otp"]);
    await expectError(
      await call("POST", "/users/login/mfa", { body: { mfa_token: page.mfaToken, code: codeAt(secret, 1) } }),
      401,
      MfaMessages.signInExpired,
    );
  });

  it("GitHub: the same, and an unsafe redirect is already `/` when the second step answers it", async () => {
    const email = `${unique("gh-mfa")}@herald.test`;
    const id = Math.floor(Math.random() * 1_000_000_000) + 2_000_000_000;
    githubNextLogin({
      id,
      login: `gh-${id}`,
      name: "Linus Octocat",
      emails: [{ email, primary: true, verified: true, visibility: "private" }],
    });
    const user = { id: await externalUser("github", email) };
    const { recoveryCodes } = await enrolAfter(GITHUB_CALLBACK);

    const { done } = await signIn(GITHUB_CALLBACK, "https://evil.example/steal");
    expect(sessionCookieOf(done)).toBeUndefined();
    const page = secondFactorPage(done);
    const finished = await call("POST", "/users/login/mfa", { body: { mfa_token: page.mfaToken, code: recoveryCodes[0] ?? "" } });
    expect(finished.status).toBe(201);
    expect(await finished.clone().json()).toMatchObject({ redirect: "/" });
    const me = await json<{ id: string; login_type: string }>(await call("GET", "/users/me", { token: sessionCookieOf(finished) }));
    expect(me).toMatchObject({ id: user.id, login_type: "github" });
  });
});
