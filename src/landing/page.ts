import { escapeHtml } from "../markdown/html";

/** What the landing page knows of its visitor and of the sign-in methods on offer. */
export interface LandingView {
  user?: { username: string; name: string; email: string; roles: string[] };
  passwordEnabled: boolean;
  oidc: boolean;
  github: boolean;
}

const API_DOCUMENT = "/api/v2/openapi.json";

/**
 * The page a browser sees at `/` until the dashboard exists: who is signed in and where the API is described, or how
 * to sign in. No script; every value from the database is escaped.
 */
export function landingPage(view: LandingView): string {
  const body = view.user ? signedIn(view.user) : signedOut(view);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Herald</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem;color:#1d1d1f}code{background:#f2f2f4;padding:0 .25em;border-radius:3px}a.button{display:inline-block;margin:.25rem .5rem .25rem 0;padding:.4rem .9rem;border:1px solid #888;border-radius:6px;text-decoration:none;color:inherit}</style>
</head>
<body>
<h1>Herald</h1>
${body}
<p>The API is described at <a href="${API_DOCUMENT}">${API_DOCUMENT}</a> (OpenAPI 3.1).</p>
</body>
</html>
`;
}

function signedIn(user: NonNullable<LandingView["user"]>): string {
  const who = user.name ? `${escapeHtml(user.name)} (<code>${escapeHtml(user.username)}</code>)` : `<code>${escapeHtml(user.username)}</code>`;
  const roles = user.roles.length > 0 ? user.roles.map((r) => `<code>${escapeHtml(r)}</code>`).join(", ") : "member";
  return `<p>You are signed in as ${who}${user.email ? `, ${escapeHtml(user.email)}` : ""}.</p>
<p>Roles: ${roles}. Your account: <a href="/api/v2/users/me">/api/v2/users/me</a>.</p>`;
}

function signedOut(view: LandingView): string {
  const buttons = [
    view.oidc ? `<a class="button" href="/api/v2/users/oidc/callback?redirect=%2F">Sign in with OpenID Connect</a>` : "",
    view.github ? `<a class="button" href="/api/v2/users/oauth2/github/callback?redirect=%2F">Sign in with GitHub</a>` : "",
  ].join("");
  const password = view.passwordEnabled
    ? `<p>With a password: <code>POST /api/v2/users/login</code> with <code>{"email", "password"}</code> answers a
session token and sets the session cookie. A forgotten password is reset by a one-time passcode sent by e-mail:
<code>POST /api/v2/users/otp/request</code>.</p>`
    : "";
  const none = !view.passwordEnabled && !view.oidc && !view.github ? "<p>No sign-in method is enabled on this server.</p>" : "";
  return `<p>You are not signed in.</p>
${buttons ? `<p>${buttons}</p>` : ""}
${password}${none}`;
}
