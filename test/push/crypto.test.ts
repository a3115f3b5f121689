import { env } from "cloudflare:workers";
import { decodeProtectedHeader, importJWK, jwtVerify } from "jose";
import { describe, expect, it } from "vitest";
import { getConfig } from "../../src/config/config";
import type { Env } from "../../src/env";
import { encryptPayload, fromBase64url, MAX_PLAINTEXT_BYTES, toBase64url } from "../../src/push/encryption";
import { VapidKeyError, vapidSigner } from "../../src/push/vapid";
import { TEST_VAPID_KEYS } from "../fixtures/vars";

/**
 * Herald's Web Push cryptography against outside references: the encryption against RFC 8291's worked example
 * (Appendix A), byte for byte, and the VAPID token through jose, an independent JWT implementation.
 */

const bytes = (text: string) => {
  const decoded = fromBase64url(text);
  if (!decoded) throw new Error(`not base64url: ${text}`);
  return decoded;
};

// RFC 8291, Appendix A: the application server's and the user agent's keys, the salt and the auth secret.
const RFC = {
  plaintext: "When I grow up, I want to be a watermelon",
  asPublic: "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8",
  asPrivate: "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw",
  uaPublic: "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4",
  salt: "DGv6ra1nlYgDCS1FRnbzlw",
  auth: "BTBZMqHH6r4Tts7J_aSIgg",
  message:
    "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN",
};

async function rfcSenderKeys(): Promise<CryptoKeyPair> {
  const point = bytes(RFC.asPublic);
  const jwk = { kty: "EC", crv: "P-256", x: toBase64url(point.subarray(1, 33)), y: toBase64url(point.subarray(33)) };
  const ecdh = { name: "ECDH", namedCurve: "P-256" };
  return {
    privateKey: await crypto.subtle.importKey("jwk", { ...jwk, d: RFC.asPrivate }, ecdh, false, ["deriveBits"]),
    publicKey: await crypto.subtle.importKey("raw", point, ecdh, true, []),
  };
}

describe('docs/push.md, "Encryption"', () => {
  it("encrypts RFC 8291's example to exactly the RFC's message", async () => {
    const message = await encryptPayload(
      new TextEncoder().encode(RFC.plaintext),
      { p256dh: bytes(RFC.uaPublic), auth: bytes(RFC.auth) },
      { salt: bytes(RFC.salt), keys: await rfcSenderKeys() },
    );
    expect(toBase64url(message)).toBe(RFC.message);
  });

  it("uses a fresh salt and sender key for every message, and names the sender key in the header", async () => {
    const subscriber = { p256dh: bytes(RFC.uaPublic), auth: bytes(RFC.auth) };
    const plaintext = new TextEncoder().encode(RFC.plaintext);
    const [one, two] = await Promise.all([encryptPayload(plaintext, subscriber), encryptPayload(plaintext, subscriber)]);
    expect(toBase64url(one.subarray(0, 16))).not.toBe(toBase64url(two.subarray(0, 16)));
    expect(toBase64url(one.subarray(21, 86))).not.toBe(toBase64url(two.subarray(21, 86)));
    // Record size 4096, a 65-byte key id that is an uncompressed point, then plaintext + delimiter + 16-byte tag.
    expect([...one.subarray(16, 22)]).toEqual([0, 0, 0x10, 0, 65, 4]);
    expect(one.byteLength).toBe(86 + plaintext.byteLength + 1 + 16);
  });

  it("refuses a plaintext that would not fit a push service's 4,096 bytes, and a p256dh off the curve", async () => {
    const subscriber = { p256dh: bytes(RFC.uaPublic), auth: bytes(RFC.auth) };
    const fits = await encryptPayload(new Uint8Array(MAX_PLAINTEXT_BYTES), subscriber);
    expect(fits.byteLength).toBe(4096);
    await expect(encryptPayload(new Uint8Array(MAX_PLAINTEXT_BYTES + 1), subscriber)).rejects.toThrow(RangeError);
    const offCurve = bytes(RFC.uaPublic);
    offCurve[64] = (offCurve[64] ?? 0) ^ 1;
    await expect(encryptPayload(new Uint8Array(4), { ...subscriber, p256dh: offCurve })).rejects.toThrow(/P-256/);
  });
});

describe('docs/push.md, "Keys"', () => {
  const signerFor = (overrides: Partial<Env>) => {
    const signer = vapidSigner(getConfig({ ...env, ...overrides }));
    if (!signer) throw new Error("Web Push is not configured");
    return signer;
  };

  it("signs an ES256 token that jose verifies with the public key, for the endpoint's origin, valid under 24 hours", async () => {
    const now = Date.now();
    const header = await (await signerFor({})).authorization("https://fcm.googleapis.com", now);
    const match = /^vapid t=([\w-]+\.[\w-]+\.[\w-]+), k=([\w-]+)$/.exec(header);
    expect(match, header).not.toBeNull();
    const [, token = "", key = ""] = match ?? [];
    expect(key).toBe(TEST_VAPID_KEYS.VAPID_PUBLIC_KEY);
    expect(decodeProtectedHeader(token)).toEqual({ typ: "JWT", alg: "ES256" });
    const point = bytes(key);
    const publicKey = await importJWK(
      { kty: "EC", crv: "P-256", x: toBase64url(point.subarray(1, 33)), y: toBase64url(point.subarray(33)) },
      "ES256",
    );
    const { payload } = await jwtVerify(token, publicKey, { algorithms: ["ES256"], audience: "https://fcm.googleapis.com" });
    // No VAPID_SUBJECT in the suite: the default, from EMAIL_FROM.
    expect(payload.sub).toBe("mailto:herald@herald.test");
    expect(payload.exp).toBeGreaterThan(now / 1000);
    expect(payload.exp).toBeLessThanOrEqual(now / 1000 + 24 * 3600);
    expect(Object.keys(payload).sort()).toEqual(["aud", "exp", "sub"]);
  });

  it("says which variable is wrong when the keys do not make a pair or are no P-256 keys, never a key", async () => {
    const other = "UkkQJBJejsrRQ-8NCFCEllw0p5r_dnWTkU7imITcokE";
    await expect(signerFor({ VAPID_PRIVATE_KEY: other })).rejects.toThrow(
      new VapidKeyError("VAPID_PUBLIC_KEY is not the public key of VAPID_PRIVATE_KEY"),
    );
    const offCurve = bytes(TEST_VAPID_KEYS.VAPID_PUBLIC_KEY);
    offCurve[64] = (offCurve[64] ?? 0) ^ 1;
    await expect(signerFor({ VAPID_PUBLIC_KEY: toBase64url(offCurve) })).rejects.toThrow(/^VAPID_PUBLIC_KEY is not a point on P-256$/);
    // The order of the curve: one past the largest private key there is.
    const order = "_____wAAAAD__________7zm-q2nF56E87nKwvxjJVE";
    await expect(signerFor({ VAPID_PRIVATE_KEY: order })).rejects.toThrow(/^VAPID_PRIVATE_KEY is not a P-256 private key$/);
  });

  it("is off without keys", () => {
    expect(vapidSigner(getConfig({ ...env, VAPID_PUBLIC_KEY: "", VAPID_PRIVATE_KEY: "" }))).toBeUndefined();
  });
});
