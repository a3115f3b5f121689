const encoder = new TextEncoder();
const keys = new Map<string, Promise<CryptoKey>>();

/**
 * An AES-GCM key derived from SECRET_KEY for one purpose only (the HKDF `info`), so a key never doubles as another
 * purpose's key or as the HMAC key of the same secret (docs/security.md, "Keys and algorithms").
 */
function sealingKey(secret: string, purpose: string): Promise<CryptoKey> {
  const id = `${purpose}\n${secret}`;
  let key = keys.get(id);
  if (!key) {
    key = crypto.subtle
      .importKey("raw", encoder.encode(secret), "HKDF", false, ["deriveKey"])
      .then((base) =>
        crypto.subtle.deriveKey(
          { name: "HKDF", hash: "SHA-256", salt: new Uint8Array(32), info: encoder.encode(purpose) },
          base,
          { name: "AES-GCM", length: 256 },
          false,
          ["encrypt", "decrypt"],
        ),
      );
    keys.set(id, key);
  }
  return key;
}

const toBase64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));
const fromBase64 = (text: string) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));

/** AES-GCM's parameters: a fresh IV, and what the value is bound to (authenticated, not stored) when given. */
function params(iv: Uint8Array<ArrayBuffer>, boundTo: string | undefined): SubtleCryptoEncryptAlgorithm {
  return boundTo === undefined ? { name: "AES-GCM", iv } : { name: "AES-GCM", iv, additionalData: encoder.encode(boundTo) };
}

/**
 * `plain` encrypted and authenticated under the purpose's key: `<base64 IV>.<base64 ciphertext and tag>`. With
 * `boundTo` (say, a user id) the value opens only for that same binding: copied onto another row, it fails.
 */
export async function sealText(secret: string, purpose: string, plain: string, boundTo?: string): Promise<string> {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const cipher = await crypto.subtle.encrypt(params(iv, boundTo), await sealingKey(secret, purpose), encoder.encode(plain));
  return `${toBase64(iv)}.${toBase64(new Uint8Array(cipher))}`;
}

/** The text {@link sealText} sealed for the same purpose and binding; throws when it was changed or sealed for another. */
export async function openSealed(secret: string, purpose: string, sealed: string, boundTo?: string): Promise<string> {
  const [iv, cipher] = sealed.split(".");
  if (!iv || !cipher) throw new Error("malformed sealed value");
  const plain = await crypto.subtle.decrypt(params(fromBase64(iv), boundTo), await sealingKey(secret, purpose), fromBase64(cipher));
  return new TextDecoder().decode(plain);
}
