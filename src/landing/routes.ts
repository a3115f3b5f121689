import { Hono } from "hono";
import { authMethods } from "../auth/methods";
import { authenticate } from "../auth/session";
import { ApiError } from "../http/errors";
import type { AppEnv } from "../http/types";
import { landingPage, type LandingView } from "./page";

/**
 * `/` for a browser: where a sign-in lands, and what a person who types the address sees (README, Endpoints; until the
 * dashboard replaces it). Signed in by cookie (or any credential): who you are; otherwise how to sign in. An invalid
 * or expired credential is simply "signed out" here, never an error page.
 */
export const landingRoutes = new Hono<AppEnv>().get("/", async (c) => {
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
  c.header("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'");
  return c.html(landingPage(view));
});
