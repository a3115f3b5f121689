const ALPHANUMERIC = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const encoder = new TextEncoder();

/** Uniform random string over [0-9A-Za-z] from the CSPRNG (rejection sampling avoids modulo bias). */
export function randomAlphanumeric(length: number): string {
  let out = "";
  while (out.length < length) {
    const bytes = crypto.getRandomValues(new Uint8Array(length * 2));
    for (const b of bytes) {
      if (b < 248) out += ALPHANUMERIC[b % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

/** Two hex digits per byte value, built once: hashing is on every cache-missed authentication. */
const HEX = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, "0"));

function toHex(bytes: ArrayBuffer | Uint8Array): string {
  let hex = "";
  for (const b of new Uint8Array(bytes)) hex += HEX[b];
  return hex;
}

export async function sha256Hex(text: string): Promise<string> {
  return toHex(await crypto.subtle.digest("SHA-256", encoder.encode(text)));
}

/**
 * workerd's constant-time comparison of two equally long byte strings. An extension of SubtleCrypto that only the
 * Workers types know, spelled out here so that this module also checks in the browser's type world
 * (tsconfig.browser.json), which sees the Worker's code through the typed client.
 */
export function timingSafeEqualBytes(a: ArrayBuffer | ArrayBufferView, b: ArrayBuffer | ArrayBufferView): boolean {
  const subtle = crypto.subtle as SubtleCrypto & { timingSafeEqual(a: ArrayBuffer | ArrayBufferView, b: ArrayBuffer | ArrayBufferView): boolean };
  return subtle.timingSafeEqual(a, b);
}

/** Constant-time equality of two strings (length differences are not hidden, only content). */
export function timingSafeEqualText(a: string, b: string): boolean {
  const left = encoder.encode(a);
  const right = encoder.encode(b);
  if (left.byteLength !== right.byteLength) return false;
  return timingSafeEqualBytes(left, right);
}

/**
 * Constant-time equality of two strings of the same known length, such as a token's secret and the one an isolate
 * verified earlier (src/auth/key-cache.ts): every UTF-16 unit is compared, with no early exit. Unlike
 * {@link timingSafeEqualText} it encodes nothing, so it costs next to nothing on a hot path.
 */
export function timingSafeEqualShort(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return difference === 0;
}

const hmacKeys = new Map<string, Promise<CryptoKey>>();

function hmacKey(secret: string): Promise<CryptoKey> {
  let key = hmacKeys.get(secret);
  if (!key) {
    key = crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
    hmacKeys.set(secret, key);
  }
  return key;
}

/** HMAC-SHA256 under the server secret, hex encoded (one-time passcodes, signed cookies). */
export async function hmacHex(secret: string, message: string): Promise<string> {
  return toHex(await crypto.subtle.sign("HMAC", await hmacKey(secret), encoder.encode(message)));
}

/** Current time as RFC 3339 UTC with milliseconds (docs/api.md, Conventions). */
export function nowIso(now: number = Date.now()): string {
  return new Date(now).toISOString();
}

let lastV7Ms = 0;
let v7Sequence = 0;

/**
 * UUID version 7 (RFC 9562): a millisecond timestamp first, so ids sort by creation. Within one millisecond a
 * 12-bit counter (rand_a) keeps ids from this isolate increasing, which makes (created_at, id) a stable order.
 */
export function uuidv7(now: number = Date.now()): string {
  if (now <= lastV7Ms) {
    v7Sequence += 1;
    if (v7Sequence > 0xfff) {
      lastV7Ms += 1;
      v7Sequence = 0;
    }
  } else {
    lastV7Ms = now;
    v7Sequence = 0;
  }
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  let ms = lastV7Ms;
  for (let i = 5; i >= 0; i--) {
    bytes[i] = ms & 0xff;
    ms = Math.floor(ms / 256);
  }
  bytes[6] = 0x70 | ((v7Sequence >> 8) & 0x0f);
  bytes[7] = v7Sequence & 0xff;
  bytes[8] = 0x80 | ((bytes[8] ?? 0) & 0x3f);
  return formatUuid(bytes);
}

function formatUuid(bytes: Uint8Array): string {
  const hex = toHex(bytes);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * A UUID derived from its parts (RFC 9562 version 8, the first 122 bits of SHA-256 of the parts): the same parts
 * always give the same id. A broadcast names each recipient's inbox item and message-log rows this way, so a
 * redelivered batch writes the rows it already wrote, and nothing more (docs/broadcasts.md).
 */
export async function derivedUuid(...parts: string[]): Promise<string> {
  const bytes = new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(parts.join("\n")))).slice(0, 16);
  bytes[6] = 0x80 | ((bytes[6] ?? 0) & 0x0f);
  bytes[8] = 0x80 | ((bytes[8] ?? 0) & 0x3f);
  return formatUuid(bytes);
}
