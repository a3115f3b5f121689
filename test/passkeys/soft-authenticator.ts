import { type CBORType, encodeCBOR } from "@levischuck/tiny-cbor";
import { decodeBase64urlIgnorePadding, encodeBase64urlNoPadding } from "@oslojs/encoding";

/**
 * A software authenticator for the passkey tests (docs/passkeys.md): a key pair made here with WebCrypto (ES256 or
 * RS256), answering Herald's options the way a browser and an authenticator would — clientDataJSON, authenticator
 * data (RP id hash, flags, signature counter, and on registration the attested credential data with the COSE public
 * key), attestation `none` (or `packed` self-attestation), and assertions signed over authenticatorData ‖
 * SHA-256(clientDataJSON). Every part can be bent, one at a time, to make the answer Herald must refuse. ES384 and
 * EdDSA keys are here to be refused: Herald takes ES256 and RS256 only.
 *
 * Bytes are base64url through @oslojs/encoding, as Herald's; CBOR is written by @levischuck/tiny-cbor, an encoder
 * Herald does not use (oslo's CBOR package only decodes), so what the authenticator writes is not read back by its
 * own code.
 *
 * This file imports nothing of the test harness, so the bench (scripts/bench/second-factor.mjs) signs in with the same
 * authenticator; the calls through the Worker are in test/passkeys/authenticator.ts.
 */

export type Algorithm = "ES256" | "RS256" | "ES384" | "EdDSA";

/** The JSON Herald's creation options carry (the parts used here). */
export interface CreationOptions {
  challenge: string;
  rp: { id: string; name: string };
  user: { id: string; name: string; displayName: string };
  excludeCredentials: { id: string }[];
  authenticatorSelection: { userVerification: string; residentKey: string };
  pubKeyCredParams: { alg: number }[];
  timeout: number;
}

/** The JSON Herald's request options carry (the parts used here). */
export interface RequestOptions {
  challenge: string;
  rpId: string;
  allowCredentials: { id: string }[];
  userVerification: string;
}

/** What a test may bend in an answer; anything left out is what a real authenticator would send. */
export interface Bend {
  origin?: string;
  /** The RP id whose hash goes into the authenticator data. */
  rpId?: string;
  challenge?: string;
  type?: string;
  /** User present and user verified flags. */
  up?: boolean;
  uv?: boolean;
  /** The counter to report instead of the next one. */
  counter?: number;
  /** Flip a bit of the signature (an assertion's, or a packed attestation's). */
  badSignature?: boolean;
  /** The user handle to send instead of the one registered; `null` for none. */
  userHandle?: string | null;
  /** Client data as a browser writes it for a cross-origin frame: `crossOrigin: true`, and the page around it. */
  crossOrigin?: boolean;
  topOrigin?: string;
  /** The backed-up flag without the backup-eligible one, which no authenticator sets. */
  backedUpOnly?: boolean;
  /** The credential id the response names, instead of the one in the authenticator data. */
  responseId?: string;
  /** The algorithm a packed attestation statement names, instead of the key's. */
  attestationAlg?: number;
  /** ES256: sign again until r or s begins with a zero byte, so the DER integer is shorter or only its sign byte is 0. */
  zeroByte?: boolean;
}

/** An attestation statement written as given, for the formats Herald refuses. */
export interface Attestation {
  fmt: string;
  attStmt: Map<string, CBORType>;
}

const ORIGIN = "http://localhost:8787";
const FLAG = { up: 0x01, uv: 0x04, be: 0x08, bs: 0x10, at: 0x40 } as const;
const COSE = { kty: 1, alg: 3, crvOrN: -1, xOrE: -2, y: -3 } as const;

const utf8 = (text: string) => new Uint8Array(new TextEncoder().encode(text));
export const base64url = (bytes: Uint8Array) => encodeBase64urlNoPadding(bytes);
/** base64url of UTF-8 text, as WebAuthn's JSON writes a user handle. */
export const base64urlText = (text: string) => encodeBase64urlNoPadding(utf8(text));
const sha256 = async (bytes: Uint8Array<ArrayBuffer>) => new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));

function concat(...parts: Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

const uint32 = (n: number) => new Uint8Array([(n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff]);

/** One DER INTEGER from an unsigned big-endian value: leading zeros dropped, a zero added when the top bit is set. */
function derInteger(bytes: Uint8Array): Uint8Array {
  let start = 0;
  while (start < bytes.length - 1 && bytes[start] === 0) start++;
  let value = bytes.slice(start);
  if ((value[0] ?? 0) & 0x80) value = concat(new Uint8Array([0]), value);
  return concat(new Uint8Array([0x02, value.length]), value);
}

/** WebCrypto's ECDSA signature is r ‖ s, each the curve's width; WebAuthn's is their DER SEQUENCE. */
export function derSignature(raw: Uint8Array): Uint8Array<ArrayBuffer> {
  const body = concat(derInteger(raw.slice(0, raw.length / 2)), derInteger(raw.slice(raw.length / 2)));
  return concat(new Uint8Array([0x30, body.length]), body);
}

const PARAMS = {
  ES256: { generate: { name: "ECDSA", namedCurve: "P-256" }, sign: { name: "ECDSA", hash: "SHA-256" }, cose: -7 },
  RS256: {
    generate: { name: "RSASSA-PKCS1-v1_5", modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: "SHA-256" },
    sign: { name: "RSASSA-PKCS1-v1_5" },
    cose: -257,
  },
  ES384: { generate: { name: "ECDSA", namedCurve: "P-384" }, sign: { name: "ECDSA", hash: "SHA-384" }, cose: -35 },
  EdDSA: { generate: { name: "Ed25519" }, sign: { name: "Ed25519" }, cose: -8 },
} as const;

/** Whether a 32-byte half of an ES256 signature (r or s) begins with a zero byte. */
const leadingZero = (raw: Uint8Array, half: 0 | 1) => raw[half * 32] === 0;

export class SoftAuthenticator {
  /** The signature counter; `counting: false` keeps it at 0, as synced passkeys do. */
  counter = 0;
  /** The user handle stored with the credential at registration (base64url). */
  userHandle: string | undefined;

  private constructor(
    readonly algorithm: Algorithm,
    readonly credentialId: string,
    private readonly keys: CryptoKeyPair,
    private readonly counting: boolean,
    private readonly backup: boolean,
  ) {}

  static async create(algorithm: Algorithm = "ES256", options: { counting?: boolean; backup?: boolean } = {}): Promise<SoftAuthenticator> {
    const keys = (await crypto.subtle.generateKey(PARAMS[algorithm].generate, true, ["sign", "verify"])) as CryptoKeyPair;
    const id = base64url(crypto.getRandomValues(new Uint8Array(32)));
    return new SoftAuthenticator(algorithm, id, keys, options.counting ?? true, options.backup ?? false);
  }

  /** The credential public key as a COSE_Key (RFC 9053), CBOR-encoded. */
  async coseKey(): Promise<Uint8Array> {
    const jwk = (await crypto.subtle.exportKey("jwk", this.keys.publicKey)) as JsonWebKey;
    const b = (s: string | undefined) => decodeBase64urlIgnorePadding(s ?? "");
    const curve = { ES256: 1, ES384: 2 } as const;
    const entries: [number, number | Uint8Array][] =
      this.algorithm === "RS256"
        ? [
            [COSE.kty, 3],
            [COSE.alg, -257],
            [COSE.crvOrN, b(jwk.n)],
            [COSE.xOrE, b(jwk.e)],
          ]
        : this.algorithm === "EdDSA"
          ? [
              [COSE.kty, 1],
              [COSE.alg, -8],
              [COSE.crvOrN, 6],
              [COSE.xOrE, b(jwk.x)],
            ]
          : [
              [COSE.kty, 2],
              [COSE.alg, PARAMS[this.algorithm].cose],
              [COSE.crvOrN, curve[this.algorithm]],
              [COSE.xOrE, b(jwk.x)],
              [COSE.y, b(jwk.y)],
            ];
    return encodeCBOR(new Map(entries));
  }

  /** The signature WebCrypto makes: r ‖ s for ECDSA, as it is for RSA and EdDSA. */
  async rawSignature(data: Uint8Array<ArrayBuffer>): Promise<Uint8Array<ArrayBuffer>> {
    return new Uint8Array(await crypto.subtle.sign(PARAMS[this.algorithm].sign, this.keys.privateKey, data));
  }

  private async sign(data: Uint8Array<ArrayBuffer>, bend: Bend): Promise<Uint8Array<ArrayBuffer>> {
    let raw = await this.rawSignature(data);
    // ECDSA signs with a fresh random nonce each time: about one signature in 128 has the zero byte asked for.
    for (let tries = 0; bend.zeroByte && !leadingZero(raw, 0) && !leadingZero(raw, 1); tries++) {
      if (tries === 20_000) throw new Error("no ES256 signature with a leading zero byte in 20,000");
      raw = await this.rawSignature(data);
    }
    const signature = this.algorithm === "ES256" || this.algorithm === "ES384" ? derSignature(raw) : raw;
    if (bend.badSignature) signature[signature.length - 1] = (signature[signature.length - 1] ?? 0) ^ 0x01;
    return signature;
  }

  private flags(bend: Bend, extra: number): number {
    let flags = extra;
    if (bend.up ?? true) flags |= FLAG.up;
    if (bend.uv ?? true) flags |= FLAG.uv;
    if (this.backup) flags |= FLAG.be | FLAG.bs;
    if (bend.backedUpOnly) flags |= FLAG.bs;
    return flags;
  }

  private nextCounter(bend: Bend): number {
    if (bend.counter !== undefined) return bend.counter;
    if (this.counting) this.counter += 1;
    return this.counter;
  }

  private clientData(type: string, challenge: string, bend: Bend): Uint8Array<ArrayBuffer> {
    return utf8(
      JSON.stringify({
        type: bend.type ?? type,
        challenge: bend.challenge ?? challenge,
        origin: bend.origin ?? ORIGIN,
        crossOrigin: bend.crossOrigin ?? false,
        ...(bend.topOrigin === undefined ? {} : { topOrigin: bend.topOrigin }),
      }),
    );
  }

  /** `navigator.credentials.create()` answering `options`, as RegistrationResponseJSON. */
  async register(options: CreationOptions, bend: Bend = {}, attestation: "none" | "packed" | Attestation = "none") {
    this.userHandle = options.user.id;
    const rpIdHash = await sha256(utf8(bend.rpId ?? options.rp.id));
    const credentialId = decodeBase64urlIgnorePadding(this.credentialId);
    const counter = this.nextCounter(bend);
    const attested = concat(
      new Uint8Array(16),
      new Uint8Array([credentialId.length >> 8, credentialId.length & 0xff]),
      credentialId,
      await this.coseKey(),
    );
    const authData = concat(rpIdHash, new Uint8Array([this.flags(bend, FLAG.at)]), uint32(counter), attested);
    const clientDataJSON = this.clientData("webauthn.create", options.challenge, bend);
    const statement: Attestation =
      attestation === "none"
        ? { fmt: "none", attStmt: new Map() }
        : attestation === "packed"
          ? {
              fmt: "packed",
              attStmt: new Map<string, CBORType>([
                ["alg", bend.attestationAlg ?? PARAMS[this.algorithm].cose],
                ["sig", await this.sign(concat(authData, await sha256(clientDataJSON)), bend)],
              ]),
            }
          : attestation;
    const attestationObject = encodeCBOR(
      new Map<string, CBORType>([
        ["fmt", statement.fmt],
        ["attStmt", statement.attStmt],
        ["authData", authData],
      ]),
    );
    const responseId = bend.responseId ?? this.credentialId;
    return {
      id: responseId,
      rawId: responseId,
      response: {
        clientDataJSON: base64url(clientDataJSON),
        attestationObject: base64url(attestationObject),
        transports: ["internal", "hybrid"],
      },
      authenticatorAttachment: "platform",
      clientExtensionResults: { credProps: { rk: true } },
      type: "public-key",
    };
  }

  /** `navigator.credentials.get()` answering `options`, as AuthenticationResponseJSON. */
  async assert(options: RequestOptions, bend: Bend = {}) {
    const rpIdHash = await sha256(utf8(bend.rpId ?? options.rpId));
    const authData = concat(rpIdHash, new Uint8Array([this.flags(bend, 0)]), uint32(this.nextCounter(bend)));
    const clientDataJSON = this.clientData("webauthn.get", options.challenge, bend);
    const signature = await this.sign(concat(authData, await sha256(clientDataJSON)), bend);
    const userHandle = bend.userHandle === undefined ? this.userHandle : bend.userHandle;
    return {
      id: this.credentialId,
      rawId: this.credentialId,
      response: {
        clientDataJSON: base64url(clientDataJSON),
        authenticatorData: base64url(authData),
        signature: base64url(signature),
        ...(userHandle === null || userHandle === undefined ? {} : { userHandle }),
      },
      authenticatorAttachment: "platform",
      clientExtensionResults: {},
      type: "public-key",
    };
  }
}
