import type { Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import type { Config } from "../config/config";
import { ApiError } from "../http/errors";
import { openValue, signValue } from "../lib/signed";
import { ExternalMessages } from "./messages";

/** Short-lived, signed, HttpOnly cookies that carry a flow's state between its start and its callback. */
const COOKIE_PATH = "/api/v2/users";

/**
 * On https the cookies are `__Secure-` prefixed, so a plain-http page on the same host cannot plant one (ASVS 3.3.1;
 * `__Host-` would demand `Path=/`, and these belong to the sign-in paths only).
 */
const prefixFor = (config: Config) => (config.secure ? "secure" : undefined);

export async function setSignedCookie(c: Context, config: Config, name: string, value: object, ttlMs: number): Promise<void> {
  const expiresAt = Date.now() + ttlMs;
  setCookie(c, name, await signValue(config.SECRET_KEY, name, value, expiresAt), {
    httpOnly: true,
    sameSite: "Lax",
    secure: config.secure,
    path: COOKIE_PATH,
    expires: new Date(expiresAt),
    prefix: prefixFor(config),
  });
}

/** Opens a signed cookie or explains, in the error shape, why it cannot be used. */
export async function readSignedCookie<T>(c: Context, config: Config, name: string, what: string): Promise<T> {
  const raw = getCookie(c, name, prefixFor(config));
  if (!raw) throw new ApiError(400, ExternalMessages.cookieMissing(what));
  const opened = await openValue<T>(config.SECRET_KEY, name, raw);
  if (!opened.ok) throw new ApiError(400, opened.reason === "expired" ? ExternalMessages.cookieExpired(what) : ExternalMessages.cookieInvalid(what));
  return opened.value;
}

export function clearSignedCookie(c: Context, config: Config, name: string): void {
  deleteCookie(c, name, { path: COOKIE_PATH, secure: config.secure, httpOnly: true, sameSite: "Lax", prefix: prefixFor(config) });
}

export const FLOW_COOKIE = "herald_oauth_flow";
export const CONVERSION_COOKIE = "herald_login_conversion";
