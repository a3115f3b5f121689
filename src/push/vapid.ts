import type { Config } from "../config/config";
import { fromBase64url, importPoint, toBase64url } from "./encryption";

/**
 * VAPID (RFC 8292; docs/push.md, "Keys"): every push request carries a short-lived ES256 JWT that names the push
 * service's origin (`aud`), an expiry (`exp`) and who to contact (`sub`), signed with VAPID_PRIVATE_KEY, and the
 * public key the browser subscribed with. A push service refuses a request whose key is not the subscription's.
 */

/** How long a token is valid: RFC 8292 allows at most 24 hours; half leaves room for a push service's clock. */
const TOKEN_LIFETIME_S = 12 * 60 * 60;

const encoder = new TextEncoder();
const JWT_HEADER = toBase64url(encoder.encode(JSON.stringify({ typ: "JWT", alg: "ES256" })));

/** The configured keys are unusable: the message says which variable and why, never a key. */
export class VapidKeyError extends Error {
  override name = "VapidKeyError";
}

export interface VapidSigner {
  /** VAPID_PUBLIC_KEY, as browsers pass it to `pushManager.subscribe()` (`applicationServerKey`). */
  publicKey: string;
  /** The `Authorization` header for a request to `audience` (the endpoint's origin). */
  authorization(audience: string, now?: number): Promise<string>;
}

/** The order of P-256's group: a private key is a scalar from 1 to one less than it. */
const P256_ORDER = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n;

function isScalar(privateKey: string): boolean {
  const bytes = fromBase64url(privateKey);
  if (bytes?.byteLength !== 32) return false;
  const d = bytes.reduce((n, b) => (n << 8n) | BigInt(b), 0n);
  return d > 0n && d < P256_ORDER;
}

async function loadSigner(publicKey: string, privateKey: string, subject: string): Promise<VapidSigner> {
  const point = fromBase64url(publicKey);
  const verifier = point && (await importPoint(point, "ECDSA"));
  if (!point || !verifier) throw new VapidKeyError("VAPID_PUBLIC_KEY is not a point on P-256");
  const jwk: JsonWebKey = {
    kty: "EC",
    crv: "P-256",
    x: toBase64url(point.subarray(1, 33)),
    y: toBase64url(point.subarray(33)),
    d: privateKey,
  };
  // The runtime checks that the public point is the private key's; a key in range that fails that check names the pair.
  const signingKey = await crypto.subtle.importKey("jwk", jwk, { name: "ECDSA", namedCurve: "P-256" }, false, ["sign"]).catch(() => {
    throw new VapidKeyError(
      isScalar(privateKey) ? "VAPID_PUBLIC_KEY is not the public key of VAPID_PRIVATE_KEY" : "VAPID_PRIVATE_KEY is not a P-256 private key",
    );
  });
  const sign = async (text: string) => new Uint8Array(await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, signingKey, encoder.encode(text)));
  return {
    publicKey,
    async authorization(audience, now = Date.now()) {
      const claims = { aud: audience, exp: Math.floor(now / 1000) + TOKEN_LIFETIME_S, sub: subject };
      const unsigned = `${JWT_HEADER}.${toBase64url(encoder.encode(JSON.stringify(claims)))}`;
      return `vapid t=${unsigned}.${toBase64url(await sign(unsigned))}, k=${publicKey}`;
    },
  };
}

// The keys are the same for the life of an isolate (the configuration is), so they are imported and checked once.
const signers = new WeakMap<Config, Promise<VapidSigner>>();

/** The deployment's signer; undefined when Web Push is not configured. Rejects with a VapidKeyError for unusable keys. */
export function vapidSigner(config: Config): Promise<VapidSigner> | undefined {
  const { VAPID_PUBLIC_KEY: publicKey, VAPID_PRIVATE_KEY: privateKey } = config;
  if (publicKey === undefined || privateKey === undefined) return undefined;
  let signer = signers.get(config);
  if (!signer) {
    signer = loadSigner(publicKey, privateKey, config.vapidSubject);
    signers.set(config, signer);
  }
  return signer;
}
