import { decodeBase64urlIgnorePadding, encodeBase64urlNoPadding } from "@oslojs/encoding";

/**
 * Web Push message encryption (docs/push.md, "Encryption"): RFC 8291 on top of RFC 8188's `aes128gcm` content coding,
 * with WebCrypto alone (ECDH P-256, HKDF-SHA-256, AES-128-GCM), so it runs in a Worker without Node's crypto.
 * Each message gets a fresh sender key pair and salt; a push service sees one opaque record.
 */

const encoder = new TextEncoder();

/** An uncompressed P-256 point: 0x04, then x and y of 32 bytes each. */
export const P256_POINT_BYTES = 65;
/** The browser's authentication secret (RFC 8291, section 3.2). */
export const AUTH_SECRET_BYTES = 16;
const SALT_BYTES = 16;
/** The record size written in the header: one record, and push services take at most 4,096 bytes of body. */
const RECORD_SIZE = 4096;
/** salt (16) + record size (4) + key id length (1) + the sender's public key (65) (RFC 8188, section 2.1). */
const HEADER_BYTES = SALT_BYTES + 4 + 1 + P256_POINT_BYTES;
const TAG_BYTES = 16;
/** The most plaintext one message carries: the body stays within 4,096 bytes with the header, the delimiter and the tag. */
export const MAX_PLAINTEXT_BYTES = RECORD_SIZE - HEADER_BYTES - 1 - TAG_BYTES;

/** A browser's subscription keys, decoded: `p256dh` (its public key) and `auth`. */
export interface SubscriberKeys {
  p256dh: Uint8Array<ArrayBuffer>;
  auth: Uint8Array<ArrayBuffer>;
}

/** The sender's one-time values, fixed only by the test against RFC 8291's example (Appendix A). */
export interface SenderValues {
  salt: Uint8Array<ArrayBuffer>;
  keys: CryptoKeyPair;
}

/** Unpadded base64url to bytes; undefined for text that is not base64url. */
export function fromBase64url(text: string): Uint8Array<ArrayBuffer> | undefined {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) return undefined;
  try {
    return Uint8Array.from(decodeBase64urlIgnorePadding(text));
  } catch {
    return undefined;
  }
}

export const toBase64url = (bytes: Uint8Array): string => encodeBase64urlNoPadding(bytes);

/** Imports an uncompressed P-256 point; undefined when the bytes are not a point on the curve. */
export async function importPoint(bytes: Uint8Array<ArrayBuffer>, algorithm: "ECDH" | "ECDSA"): Promise<CryptoKey | undefined> {
  if (bytes.byteLength !== P256_POINT_BYTES || bytes[0] !== 0x04) return undefined;
  try {
    return await crypto.subtle.importKey("raw", bytes, { name: algorithm, namedCurve: "P-256" }, true, algorithm === "ECDH" ? [] : ["verify"]);
  } catch {
    return undefined;
  }
}

function concat(...parts: Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(parts.reduce((n, part) => n + part.byteLength, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.byteLength;
  }
  return out;
}

async function hkdf(salt: Uint8Array<ArrayBuffer>, secret: Uint8Array<ArrayBuffer>, info: Uint8Array<ArrayBuffer>, bytes: number) {
  const key = await crypto.subtle.importKey("raw", secret, "HKDF", false, ["deriveBits"]);
  return new Uint8Array(await crypto.subtle.deriveBits({ name: "HKDF", hash: "SHA-256", salt, info }, key, bytes * 8));
}

const KEY_INFO = Uint8Array.from(encoder.encode("WebPush: info\0"));
const CEK_INFO = Uint8Array.from(encoder.encode("Content-Encoding: aes128gcm\0"));
const NONCE_INFO = Uint8Array.from(encoder.encode("Content-Encoding: nonce\0"));

/** A fresh sender key pair and salt for one message. */
async function freshSenderValues(): Promise<SenderValues> {
  const keys = (await crypto.subtle.generateKey({ name: "ECDH", namedCurve: "P-256" }, true, ["deriveBits"])) as CryptoKeyPair;
  return { salt: crypto.getRandomValues(new Uint8Array(SALT_BYTES)), keys };
}

/**
 * Encrypts `plaintext` to a subscriber as one `aes128gcm` record (RFC 8291, section 3.4): the header names the salt,
 * the record size and the sender's public key, and the record is the plaintext, the last-record delimiter 0x02, no
 * padding, sealed with AES-128-GCM. `subscriber.p256dh` must be a point on P-256 (checked when the subscription was
 * stored); `sender` is for the test against the RFC's example only.
 */
export async function encryptPayload(plaintext: Uint8Array, subscriber: SubscriberKeys, sender?: SenderValues): Promise<Uint8Array<ArrayBuffer>> {
  if (plaintext.byteLength > MAX_PLAINTEXT_BYTES) throw new RangeError(`a push message holds at most ${MAX_PLAINTEXT_BYTES} bytes`);
  const { salt, keys } = sender ?? (await freshSenderValues());
  const receiver = await importPoint(subscriber.p256dh, "ECDH");
  if (!receiver) throw new TypeError("the subscription's p256dh is not a P-256 public key");
  // WebCrypto names the peer's key `public`; the Workers type declarations spell that member `$public`.
  const ecdh = { name: "ECDH", public: receiver } as unknown as Parameters<SubtleCrypto["deriveBits"]>[0];
  const [sharedSecret, senderPublic] = await Promise.all([
    crypto.subtle.deriveBits(ecdh, keys.privateKey, 256),
    crypto.subtle.exportKey("raw", keys.publicKey),
  ]);
  const senderPoint = new Uint8Array(senderPublic as ArrayBuffer);
  // The input keying material binds both public keys and the browser's auth secret (RFC 8291, section 3.3).
  const ikm = await hkdf(subscriber.auth, new Uint8Array(sharedSecret), concat(KEY_INFO, subscriber.p256dh, senderPoint), 32);
  const [cek, nonce] = await Promise.all([hkdf(salt, ikm, CEK_INFO, 16), hkdf(salt, ikm, NONCE_INFO, 12)]);
  const aes = await crypto.subtle.importKey("raw", cek, "AES-GCM", false, ["encrypt"]);
  const sealed = await crypto.subtle.encrypt({ name: "AES-GCM", iv: nonce }, aes, concat(plaintext, Uint8Array.of(0x02)));

  const header = new Uint8Array(HEADER_BYTES);
  header.set(salt, 0);
  new DataView(header.buffer).setUint32(SALT_BYTES, RECORD_SIZE);
  header[SALT_BYTES + 4] = P256_POINT_BYTES;
  header.set(senderPoint, SALT_BYTES + 5);
  return concat(header, new Uint8Array(sealed));
}
