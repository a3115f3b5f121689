import { Hono } from "hono";
import { z } from "zod";
import { authMethods } from "../auth/methods";
import { authenticate } from "../auth/session";
import { ApiError } from "../http/errors";
import type { AppEnv } from "../http/types";
import { describeRoute } from "../openapi/describe";
import { landingPage, type LandingView } from "./page";

/**
 * `/` for a browser: where a sign-in lands, and what a person who types the address sees (docs/api.md, Endpoints; until the
 * dashboard replaces it). Signed in by cookie (or any credential): who you are; otherwise how to sign in. An invalid
 * or expired credential is simply "signed out" here, never an error page.
 */
export const landingRoutes = new Hono<AppEnv>().get(
  "/",
  describeRoute({
    operationId: "landingPage",
    summary: "The page a browser sees: who is signed in, or how to sign in",
    description:
      "Where a browser sign-in lands by default. Reads the session like any endpoint (cookie, header or bearer); without a valid one it shows how to sign in, never an error.",
    tags: ["Meta"],
    responses: [{ status: 200, description: "An HTML page, without script.", schema: z.string(), contentType: "text/html" }],
  }),
  async (c) => {
    const methods = authMethods(c.var.config);
    const view: LandingView = { passwordEnabled: methods.password.enabled, oidc: methods.oidc.enabled, github: methods.github.enabled };
    try {
      const { user } = await authenticate(c);
      view.user = { username: user.username, name: user.name, email: user.email, roles: user.roles };
    } catch (error) {
      if (!(error instanceof ApiError && error.status === 401)) throw error;
    }
    c.header("Cache-Control", "no-store");
    // No script at all; only the page's own inline style.
    c.header(
      "Content-Security-Policy",
      "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    );
    return c.html(landingPage(view));
  },
);
