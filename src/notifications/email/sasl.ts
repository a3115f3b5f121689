/** SMTP AUTH mechanisms (RFC 4954): PLAIN, LOGIN and CRAM-MD5, the three relays offer in practice. */

export type Mechanism = "PLAIN" | "LOGIN" | "CRAM-MD5";

const encoder = new TextEncoder();

export function base64Text(text: string): string {
  let binary = "";
  for (const byte of encoder.encode(text)) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/**
 * Which mechanism to use among those the server offers. Over TLS, PLAIN (then LOGIN) as Go's net/smtp and nodemailer
 * do; in clear text (only ever with EMAIL_TLS=none) CRAM-MD5 first, since it never sends the password itself.
 */
export function chooseMechanism(offered: readonly string[], encrypted: boolean): Mechanism | undefined {
  const order: Mechanism[] = encrypted ? ["PLAIN", "LOGIN", "CRAM-MD5"] : ["CRAM-MD5", "PLAIN", "LOGIN"];
  const upper = new Set(offered.map((m) => m.toUpperCase()));
  return order.find((m) => upper.has(m));
}

/** HMAC-MD5 (RFC 2104) over WebCrypto's MD5 digest; WebCrypto offers no HMAC with MD5 itself. */
async function hmacMd5(key: Uint8Array<ArrayBuffer>, message: Uint8Array<ArrayBuffer>): Promise<Uint8Array> {
  const md5 = async (data: Uint8Array<ArrayBuffer>) => new Uint8Array(await crypto.subtle.digest("MD5", data));
  const block = new Uint8Array(64);
  block.set(key.length > 64 ? await md5(key) : key);
  const inner = new Uint8Array(64 + message.length);
  const outer = new Uint8Array(64 + 16);
  for (let i = 0; i < 64; i++) {
    inner[i] = (block[i] ?? 0) ^ 0x36;
    outer[i] = (block[i] ?? 0) ^ 0x5c;
  }
  inner.set(message, 64);
  outer.set(await md5(inner), 64);
  return md5(outer);
}

/** The CRAM-MD5 response (RFC 2195): `user hex(HMAC-MD5(password, challenge))`, base64-encoded. */
export async function cramMd5Response(username: string, password: string, challengeBase64: string): Promise<string> {
  const challenge = Uint8Array.from(atob(challengeBase64.trim()), (c) => c.charCodeAt(0));
  const digest = await hmacMd5(Uint8Array.from(encoder.encode(password)), challenge);
  const hex = Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
  return base64Text(`${username} ${hex}`);
}
