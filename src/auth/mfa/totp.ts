import { hmac } from "@noble/hashes/hmac.js";
import { sha1 } from "@noble/hashes/legacy.js";
import { HOTP, Secret, TOTP } from "otpauth/bare";

/**
 * Time-based one-time passwords as docs/second-factor.md states them: RFC 6238 with HMAC-SHA-1, 6 digits, 30-second
 * steps, the current step and one on either side. The arithmetic, base32 and the `otpauth://` URI are otpauth's;
 * which step was used, and refusing it twice, is Herald's (src/auth/mfa/authenticator.ts).
 */

export const TOTP_PERIOD_SECONDS = 30;
const DIGITS = 6;
/** Steps accepted on either side of the current one: a phone's clock a little off, a code typed as it changed. */
const WINDOW = 1;
/** 160 bits, the length of an HMAC-SHA-1 key (RFC 4226, section 4, R6). */
const SECRET_BYTES = 20;

/**
 * otpauth's bare build hashes nothing itself: it calls this, synchronously, so it cannot be WebCrypto's (a
 * promise). @noble/hashes' audited SHA-1 keeps the Worker bundle a few KiB smaller than otpauth's default build,
 * which carries every SHA-2 and SHA-3 variant.
 */
function hmacSha1(_algorithm: string, key: Uint8Array, message: Uint8Array): Uint8Array {
  return hmac(sha1, key, message);
}

/** A new shared secret from the CSPRNG, in base32 as authenticator apps take it. */
export function newTotpSecret(): string {
  return new Secret({ size: SECRET_BYTES }).base32;
}

/** The time step `now` (epoch ms) falls in. */
export function totpStep(now: number): number {
  return Math.floor(now / 1000 / TOTP_PERIOD_SECONDS);
}

/** The code of one step. `digits` is 6 for Herald; RFC 6238's own test vectors have 8. */
export function totpCode(secret: string, step: number, digits = DIGITS): string {
  return HOTP.generate({ secret: Secret.fromBase32(secret), counter: step, digits, hmac: hmacSha1 });
}

/**
 * The step whose code `code` is, among the current one and one on either side (each compared in constant time), or
 * undefined. Whether that step was already used is the caller's to check.
 */
export function matchingStep(secret: string, code: string, now: number): number | undefined {
  const step = totpStep(now);
  const delta = HOTP.validate({ token: code, secret: Secret.fromBase32(secret), counter: step, window: WINDOW, digits: DIGITS, hmac: hmacSha1 });
  return delta === null ? undefined : step + delta;
}

/** `otpauth://totp/<issuer>:<account>?issuer=<issuer>&secret=…` (the Key URI Format), for the app's QR code. */
export function otpauthUrl(secret: string, issuer: string, account: string): string {
  return new TOTP({
    issuer,
    label: account,
    secret: Secret.fromBase32(secret),
    digits: DIGITS,
    period: TOTP_PERIOD_SECONDS,
    hmac: hmacSha1,
  }).toString();
}
