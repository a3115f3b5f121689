import type { Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import type { Config } from "../config/config";

/** docs/api.md (Conventions): `service_session_token`, `__Host-` prefixed (and `Secure`) when served over https. */
const SESSION_COOKIE = "service_session_token";
const prefixFor = (config: Config) => (config.secure ? "host" : undefined);

export function readSessionCookie(c: Context, config: Config): string | undefined {
  return getCookie(c, SESSION_COOKIE, prefixFor(config));
}

export function setSessionCookie(c: Context, config: Config, token: string, expiresAt: Date): void {
  setCookie(c, SESSION_COOKIE, token, {
    httpOnly: true,
    sameSite: "Lax",
    path: "/",
    secure: config.secure,
    expires: expiresAt,
    prefix: prefixFor(config),
  });
}

export function clearSessionCookie(c: Context, config: Config): void {
  deleteCookie(c, SESSION_COOKIE, { path: "/", secure: config.secure, httpOnly: true, sameSite: "Lax", prefix: prefixFor(config) });
}
