import { hmacHex, timingSafeEqualText } from "./crypto";

const encoder = new TextEncoder();

function toBase64Url(text: string): string {
  return btoa(String.fromCharCode(...encoder.encode(text)))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
}

function fromBase64Url(text: string): string {
  const bytes = Uint8Array.from(atob(text.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));
  return new TextDecoder().decode(bytes);
}

/**
 * A value the client holds but cannot change: JSON, base64url, then an HMAC under SECRET_KEY with a purpose tag, so
 * a value signed for one cookie is never accepted as another. Includes an expiry checked on open.
 */
export async function signValue(secret: string, purpose: string, value: object, expiresAt: number): Promise<string> {
  const body = toBase64Url(JSON.stringify({ v: value, exp: expiresAt }));
  return `${body}.${await hmacHex(secret, `${purpose}:${body}`)}`;
}

export type Opened<T> = { ok: true; value: T } | { ok: false; reason: "malformed" | "tampered" | "expired" };

export async function openValue<T>(secret: string, purpose: string, signed: string): Promise<Opened<T>> {
  // Exactly a body and its MAC: anything after a second dot would otherwise ride along unchecked, and a value would
  // have many spellings.
  const parts = signed.split(".");
  const [body, mac] = parts;
  if (parts.length !== 2 || !body || !mac) return { ok: false, reason: "malformed" };
  if (!timingSafeEqualText(await hmacHex(secret, `${purpose}:${body}`), mac)) return { ok: false, reason: "tampered" };
  try {
    const { v, exp } = JSON.parse(fromBase64Url(body)) as { v: T; exp: number };
    if (typeof exp !== "number" || exp <= Date.now()) return { ok: false, reason: "expired" };
    return { ok: true, value: v };
  } catch {
    return { ok: false, reason: "malformed" };
  }
}
