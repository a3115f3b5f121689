import type { Context } from "hono";
import { Hono } from "hono";
import * as z from "zod";
import type { AppEnv } from "../http/types";
import { describeRoute } from "../openapi/describe";

/**
 * What a browser loads, served from Workers Static Assets (wrangler.toml `[assets]`, built by scripts/build-ui.mjs;
 * docs/dashboard.md). The Worker runs first for every request (`run_worker_first`), so the API keeps every route and
 * these answers get Herald's own headers: the dashboard page a strict Content-Security-Policy, the embed the CORS
 * answer a module script on an allowed origin needs.
 */

/**
 * The dashboard page's policy (docs/dashboard.md#security): scripts and styles only from this origin (no inline
 * script, no eval), API calls and the watch socket only to it, no plugins, no framing, forms only to it.
 */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "manifest-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join("; ");

/** The asset at `path`, fetched through the ASSETS binding with the request's conditional headers. */
function asset(c: Context<AppEnv>, path: string): Promise<Response> {
  const url = new URL(path, c.req.url);
  return c.env.ASSETS.fetch(new Request(url, { headers: c.req.raw.headers }));
}

/**
 * A copy of the asset's answer whose headers the route can set: the ASSETS binding answers with immutable headers.
 * The request id and the other headers every answer carries are added by the frame (`requestFrame`,
 * src/http/middleware.ts).
 */
function served(res: Response): Response {
  return new Response(res.body, res);
}

/** The dashboard's one HTML page, under its policy; it shows what the API says about the person who loads it. */
async function dashboardPage(c: Context<AppEnv>): Promise<Response> {
  const res = served(await asset(c, "/index.html"));
  res.headers.set("Content-Security-Policy", DASHBOARD_CSP);
  // Revalidated on every load, so a deploy's new bundle names are seen at once.
  res.headers.set("Cache-Control", "no-cache");
  return res;
}

/** The OpenAPI description of a path that answers with the dashboard's page. */
function pageDoc(operationId: string, summary: string, description: string) {
  return describeRoute({
    operationId,
    summary,
    description,
    tags: ["Meta"],
    responses: [{ status: 200, description: "The dashboard's HTML page.", schema: z.string(), contentType: "text/html" }],
  });
}

export const webRoutes = new Hono<AppEnv>()
  .get(
    "/",
    pageDoc(
      "dashboard",
      "The dashboard: sign-in, the live inbox, preferences, account and administration",
      "An HTML page that loads the dashboard's script and style from `/assets/` (docs/dashboard.md). The page is the same for everyone; what it shows comes from the API, read with the session cookie.",
    ),
    dashboardPage,
  )
  // The links of the password e-mails (the seeded templates, Coder's paths) open the dashboard's reset page.
  .get(
    "/reset-password",
    pageDoc(
      "resetPasswordPage",
      "The dashboard, opened on its password reset page",
      "Where the Password changed e-mail's link points (docs/dashboard.md#pages).",
    ),
    dashboardPage,
  )
  .get(
    "/reset-password/change",
    pageDoc(
      "resetPasswordChangePage",
      "The dashboard, opened on its password reset page with the e-mailed passcode filled in",
      "Where the passcode e-mail's link points (`?otp=…`). The page takes the passcode into its form and drops it from the address bar at once (docs/dashboard.md#pages).",
    ),
    dashboardPage,
  )
  // The "This wasn't me" link of every security notice: its token is the fragment, which never reaches this route.
  .get(
    "/not-me",
    pageDoc(
      "notMePage",
      "The dashboard, opened on its This wasn't me page",
      "Where a security notice's This wasn't me link points (`/not-me#<token>`). The token is in the fragment, so it never reaches the server; the page takes it into memory, explains the event and, once confirmed, sends it to `POST /api/v2/users/not-me` (docs/dashboard.md, \"This wasn't me\").",
    ),
    dashboardPage,
  )
  // The links of the administrators' notices (the seeded templates keep Coder's paths) open the matching dashboard
  // pages; the dashboard maps the path to its own page (src/dashboard/router.ts, `takeDeepLink`).
  .get(
    "/deployment/notifications",
    pageDoc(
      "deploymentNotificationsPage",
      "The dashboard, opened on its notifier page",
      "Where the Test Notification's link points (docs/dashboard.md#pages).",
    ),
    dashboardPage,
  )
  .get(
    "/deployment/users",
    pageDoc(
      "deploymentUsersPage",
      "The dashboard, opened on its users page",
      "Where the account notices' links point. `?filter=status:active` or `status:suspended` opens the page with that status filter (docs/dashboard.md#pages).",
    ),
    dashboardPage,
  )
  .get(
    "/sw.js",
    describeRoute({
      operationId: "serviceWorkerScript",
      summary: "The dashboard's service worker: shows Web Push messages as system notifications",
      description:
        'Registered by the dashboard at the root, so its scope is the whole origin (docs/push.md, "The dashboard"). It has no fetch handler: it never stands between the dashboard and the network.',
      tags: ["Meta"],
      responses: [{ status: 200, description: "The script (JavaScript).", schema: z.string(), contentType: "text/javascript" }],
    }),
    async (c) => {
      const res = served(await asset(c, "/sw.js"));
      res.headers.set("Content-Type", "text/javascript; charset=utf-8");
      // Browsers look for a new worker at most a day apart anyway; revalidating every time makes a deploy's arrive at once.
      res.headers.set("Cache-Control", "no-cache");
      // The worker's own policy: it loads nothing (the notification icon is the browser's to fetch, from this origin).
      res.headers.set("Content-Security-Policy", "default-src 'none'; img-src 'self'");
      return res;
    },
  )
  .get(
    "/embed/inbox.js",
    describeRoute({
      operationId: "embedInboxScript",
      summary: "The embeddable inbox: a module defining the `<herald-inbox>` element",
      description:
        "Loaded as a module script by a page on `CORS_ALLOWED_ORIGINS` (docs/embed.md). Module scripts are fetched with CORS, so an allowed `Origin` is echoed.",
      tags: ["Meta"],
      responses: [{ status: 200, description: "The script (JavaScript).", schema: z.string(), contentType: "text/javascript" }],
    }),
    async (c) => {
      const res = served(await asset(c, "/embed/inbox.js"));
      const origin = c.req.header("Origin");
      if (origin !== undefined && c.get("config").CORS_ALLOWED_ORIGINS.includes(origin)) {
        res.headers.set("Access-Control-Allow-Origin", origin);
      }
      res.headers.set("Vary", "Origin");
      // Loaded by pages on other sites: the same-site resource policy of every other answer would forbid that.
      res.headers.set("Cross-Origin-Resource-Policy", "cross-origin");
      // A stable address (the snippet in docs/embed.md names it), so a short cache with revalidation.
      res.headers.set("Cache-Control", "public, max-age=300, must-revalidate");
      return res;
    },
  );

/**
 * The dashboard's hashed files (`/assets/dashboard-<hash>.js|css`), for any other GET or HEAD outside `/api/`;
 * `undefined` when there is no such asset, so the caller answers its JSON 404.
 */
export async function staticAsset(c: Context<AppEnv>): Promise<Response | undefined> {
  const path = new URL(c.req.url).pathname;
  if (!path.startsWith("/assets/") || (c.req.method !== "GET" && c.req.method !== "HEAD")) return undefined;
  const res = await asset(c, path);
  if (res.status === 404) return undefined;
  const copy = served(res);
  if (copy.status === 200) copy.headers.set("Cache-Control", "public, max-age=31536000, immutable");
  return copy;
}
