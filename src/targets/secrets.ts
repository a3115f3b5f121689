import { hmacHex, timingSafeEqualText } from "../lib/crypto";
import { openSealed, sealText } from "../lib/sealed";

/**
 * What a target keeps secret (docs/targets.md, "What Herald stores"). The URL and a webhook's signing secret must be
 * read back to send, so they are sealed (AES-GCM under a key derived from SECRET_KEY for this purpose alone,
 * src/lib/sealed.ts, as an authenticator app's secret is) and bound to the target's id: copied onto another row,
 * they do not open. The verification code is only ever compared, so only its HMAC is kept, bound to the target too.
 */
const URL_PURPOSE = "herald target url v1";
const SECRET_PURPOSE = "herald target secret v1";

export function sealUrl(secretKey: string, targetId: string, url: string): Promise<string> {
  return sealText(secretKey, URL_PURPOSE, url, targetId);
}

export function openUrl(secretKey: string, targetId: string, sealed: string): Promise<string> {
  return openSealed(secretKey, URL_PURPOSE, sealed, targetId);
}

export function sealSigningSecret(secretKey: string, targetId: string, secret: string): Promise<string> {
  return sealText(secretKey, SECRET_PURPOSE, secret, targetId);
}

export function openSigningSecret(secretKey: string, targetId: string, sealed: string): Promise<string> {
  return openSealed(secretKey, SECRET_PURPOSE, sealed, targetId);
}

/** A Standard Webhooks secret: `whsec_` and the base64 of 32 random bytes (256 bits, the HMAC-SHA256 key size). */
export function newSigningSecret(): string {
  return `whsec_${btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(32))))}`;
}

/** A uniform 6-digit code from the CSPRNG: 32-bit draws above the largest multiple of 10^6 are drawn again. */
export function newVerificationCode(): string {
  const limit = 2 ** 32 - (2 ** 32 % 1_000_000);
  for (;;) {
    const [draw = 0] = crypto.getRandomValues(new Uint32Array(1));
    if (draw < limit) return String(draw % 1_000_000).padStart(6, "0");
  }
}

/**
 * The code's HMAC under SECRET_KEY, bound to the target: a copied hash does not verify another target, and a leaked
 * table does not give the code away to a search of the million candidates without the key.
 */
export function codeHash(secretKey: string, targetId: string, code: string): Promise<string> {
  return hmacHex(secretKey, `herald target code v1\n${targetId}\n${code}`);
}

/** Whether `code` is the one whose hash the target keeps, compared in constant time. */
export async function codeMatches(secretKey: string, targetId: string, code: string, stored: string): Promise<boolean> {
  return timingSafeEqualText(await codeHash(secretKey, targetId, code), stored);
}
