import type { Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import type { Config } from "../config/config";

/** docs/api.md (Conventions): `service_session_token`, with the `__Host-` prefix (and `Secure`) when served over https. */
function sessionCookieName(config: Config): string {
  return config.secure ? "__Host-service_session_token" : "service_session_token";
}

export function readSessionCookie(c: Context, config: Config): string | undefined {
  return getCookie(c, sessionCookieName(config));
}

export function setSessionCookie(c: Context, config: Config, token: string, expiresAt: Date): void {
  setCookie(c, sessionCookieName(config), token, {
    httpOnly: true,
    sameSite: "Lax",
    path: "/",
    secure: config.secure,
    expires: expiresAt,
  });
}

export function clearSessionCookie(c: Context, config: Config): void {
  deleteCookie(c, sessionCookieName(config), { path: "/", secure: config.secure, httpOnly: true, sameSite: "Lax" });
}
