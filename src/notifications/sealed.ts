const encoder = new TextEncoder();
const keys = new Map<string, Promise<CryptoKey>>();

/** An AES-GCM key derived from SECRET_KEY for one purpose only (HKDF info), so it never doubles as an HMAC key. */
function sealingKey(secret: string): Promise<CryptoKey> {
  let key = keys.get(secret);
  if (!key) {
    key = crypto.subtle
      .importKey("raw", encoder.encode(secret), "HKDF", false, ["deriveKey"])
      .then((base) =>
        crypto.subtle.deriveKey(
          { name: "HKDF", hash: "SHA-256", salt: new Uint8Array(32), info: encoder.encode("herald sealed labels v1") },
          base,
          { name: "AES-GCM", length: 256 },
          false,
          ["encrypt", "decrypt"],
        ),
      );
    keys.set(secret, key);
  }
  return key;
}

const toBase64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));
const fromBase64 = (text: string) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));

/**
 * Seals labels that must not sit in the message log in clear (a one-time passcode): the row keeps only ciphertext,
 * opened at send time and dropped once the message is finished.
 */
export async function seal(secret: string, labels: Record<string, string>): Promise<string> {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const cipher = await crypto.subtle.encrypt({ name: "AES-GCM", iv }, await sealingKey(secret), encoder.encode(JSON.stringify(labels)));
  return `${toBase64(iv)}.${toBase64(new Uint8Array(cipher))}`;
}

export async function unseal(secret: string, sealed: string): Promise<Record<string, string>> {
  const [iv, cipher] = sealed.split(".");
  if (!iv || !cipher) throw new Error("malformed sealed labels");
  const plain = await crypto.subtle.decrypt({ name: "AES-GCM", iv: fromBase64(iv) }, await sealingKey(secret), fromBase64(cipher));
  return JSON.parse(new TextDecoder().decode(plain)) as Record<string, string>;
}
