// Types for the part of http_ece (MIT; no types of its own) the push-service stand-in uses: decrypting an
// `aes128gcm` body as the browser would (test/peers/push-service.ts).
declare module "http_ece" {
  import type { ECDH } from "node:crypto";

  export interface DecryptParams {
    version: "aes128gcm";
    /** The receiver's (the browser's) ECDH key pair. */
    privateKey: ECDH;
    /** The 16-byte auth secret, as bytes or unpadded base64url. */
    authSecret: Buffer | string;
  }

  export function decrypt(buffer: Buffer, params: DecryptParams): Buffer;
}
