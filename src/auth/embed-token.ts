/**
 * Signed embed tokens (docs/embed.md, "Signed embed tokens"): a short-lived credential for `<herald-inbox>` that a
 * host's backend makes by itself, with no call to Herald and nothing stored, from a key Herald also knows
 * (EMBED_SIGNING_KEYS, docs/configuration.md):
 *
 *     herald-embed.v1.<key id>.<user id>.<expiry>.<signature>
 *
 * `<expiry>` is Unix time in seconds; `<signature>` is HMAC-SHA256, keyed with the UTF-8 bytes of the key's secret,
 * over everything before the last dot, in base64url without padding. Every character is a letter, a digit, `-`,
 * `_` or `.`: an RFC 9110 token, so the token fits both the `Service-Session-Token` header and the watch's
 * `herald.token.<token>` subprotocol. The prefix keeps it apart from session and API tokens (`<id>-<secret>`).
 *
 * This module has no Worker-only import: the typed client re-exports {@link signEmbedToken} for hosts on Node,
 * Deno, Bun or Workers.
 */

const EMBED_TOKEN_PREFIX = "herald-embed.v1.";
/** The longest an embed token may still have to live when it is presented (docs/embed.md, "Signed embed tokens"). */
const EMBED_TOKEN_MAX_LIFETIME_SECONDS = 24 * 60 * 60;
/** What an embed token may do: the inbox and nothing else (docs/authorization.md, "API token scopes"). */
export const EMBED_SCOPES: readonly string[] = ["inbox_notification:read", "inbox_notification:update"];
/** A key id names the key in EMBED_SIGNING_KEYS; no dot, the token's separator. */
export const EMBED_KEY_ID = /^[A-Za-z0-9_-]{1,32}$/;
/** Longer input is refused before any parsing: a real token is under 160 characters. */
const MAX_TOKEN_LENGTH = 256;

/**
 * 43 base64url characters are 258 bits for a 256-bit MAC: the last one carries two zero bits, so only these 16 can
 * end a canonical signature, and no two strings carry the same signature.
 */
const TOKEN_PATTERN =
  /^herald-embed\.v1\.([A-Za-z0-9_-]{1,32})\.([0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12})\.([1-9][0-9]{0,10})\.([A-Za-z0-9_-]{42}[AEIMQUYcgkosw048])$/;

const encoder = new TextEncoder();

export interface EmbedClaims {
  keyId: string;
  /** The user id as signed, lower-cased (UUIDs are accepted in any case, docs/api.md, Conventions). */
  userId: string;
  /** Epoch milliseconds. */
  expiresAt: number;
}

const keys = new Map<string, Promise<CryptoKey>>();

function hmacKey(secret: string, usage: "sign" | "verify"): Promise<CryptoKey> {
  const cacheKey = `${usage}:${secret}`;
  let key = keys.get(cacheKey);
  if (!key) {
    key = crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, [usage]);
    keys.set(cacheKey, key);
  }
  return key;
}

function toBase64Url(bytes: ArrayBuffer): string {
  let binary = "";
  for (const b of new Uint8Array(bytes)) binary += String.fromCharCode(b);
  return btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

function fromBase64Url(text: string): Uint8Array<ArrayBuffer> {
  const binary = atob(text.replaceAll("-", "+").replaceAll("_", "/"));
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

export interface SignEmbedTokenOptions {
  /** The key's id, as named in EMBED_SIGNING_KEYS. */
  keyId: string;
  /** The key's secret, as in EMBED_SIGNING_KEYS (its UTF-8 bytes are the HMAC key). */
  key: string;
  /** Herald's id of the person (a UUID). */
  userId: string;
  /** Seconds from now until the token expires, at most 24 hours (default one hour). */
  expiresIn?: number;
  /** Epoch milliseconds to count from; the current time by default. */
  now?: number;
}

/**
 * Makes an embed token on the host's backend (docs/embed.md, "Signed embed tokens"): no call to Herald, nothing
 * stored. Mint one per page load; it is worth nothing after `expiresIn`.
 */
export async function signEmbedToken(options: SignEmbedTokenOptions): Promise<string> {
  const { keyId, key, userId, expiresIn = 3600, now = Date.now() } = options;
  if (!EMBED_KEY_ID.test(keyId)) throw new TypeError("keyId must be 1–32 letters, digits, '-' or '_'.");
  if (!/^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$/.test(userId)) throw new TypeError("userId must be a UUID.");
  if (!Number.isInteger(expiresIn) || expiresIn < 1 || expiresIn > EMBED_TOKEN_MAX_LIFETIME_SECONDS) {
    throw new RangeError(`expiresIn must be a whole number of seconds from 1 to ${EMBED_TOKEN_MAX_LIFETIME_SECONDS}.`);
  }
  const payload = `${EMBED_TOKEN_PREFIX}${keyId}.${userId}.${Math.floor(now / 1000) + expiresIn}`;
  const signature = await crypto.subtle.sign("HMAC", await hmacKey(key, "sign"), encoder.encode(payload));
  return `${payload}.${toBase64Url(signature)}`;
}

export function isEmbedToken(token: string): boolean {
  return token.startsWith(EMBED_TOKEN_PREFIX);
}

/**
 * The claims of a token signed by one of `signingKeys` (key id → secret) and still within its lifetime, or
 * undefined. Never throws: a malformed token is just not one. The signature is checked by `crypto.subtle.verify`,
 * which compares in constant time; the expiry is checked both ways, so a token signed to live longer than
 * {@link EMBED_TOKEN_MAX_LIFETIME_SECONDS} is refused until it is that close to its end.
 */
export async function verifyEmbedToken(token: string, signingKeys: ReadonlyMap<string, string>, now: number): Promise<EmbedClaims | undefined> {
  if (token.length > MAX_TOKEN_LENGTH) return undefined;
  const match = TOKEN_PATTERN.exec(token);
  const [, keyId, userId, expiry, signature] = match ?? [];
  if (!keyId || !userId || !expiry || !signature) return undefined;
  const expiresAt = Number(expiry) * 1000;
  if (expiresAt <= now || expiresAt > now + EMBED_TOKEN_MAX_LIFETIME_SECONDS * 1000) return undefined;
  const secret = signingKeys.get(keyId);
  if (secret === undefined) return undefined;
  const payload = token.slice(0, token.length - signature.length - 1);
  const valid = await crypto.subtle.verify("HMAC", await hmacKey(secret, "verify"), fromBase64Url(signature), encoder.encode(payload));
  return valid ? { keyId, userId: userId.toLowerCase(), expiresAt } : undefined;
}
