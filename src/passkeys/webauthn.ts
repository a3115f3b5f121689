import { decodeCBOR, decodeCBORToNativeValueNoLeftoverBytes } from "@oslojs/cbor";
import { decodePKIXECDSASignature, type ECDSASignature, p256 } from "@oslojs/crypto/ecdsa";
import { decodeBase64urlIgnorePadding, encodeBase64urlNoPadding } from "@oslojs/encoding";
import {
  type AttestationStatement,
  AttestationStatementFormat,
  type AuthenticatorData,
  ClientDataType,
  COSEKeyType,
  COSEPublicKey,
  coseAlgorithmES256,
  coseAlgorithmRS256,
  coseEllipticCurveP256,
  createAssertionSignatureMessage,
  parseAttestationObject,
  parseAuthenticatorData,
  parseClientDataJSON,
} from "@oslojs/webauthn";
import type * as z from "zod";
import { CeremonyDetails as D } from "./messages";
import type { AuthenticationResponseBody, addPasskeyBody } from "./schemas";

/**
 * The WebAuthn ceremony checks, every one of them, for adding a passkey and for using one (docs/passkeys.md, "How an
 * answer is checked"). oslo (`@oslojs/webauthn`, `@oslojs/cbor`, `@oslojs/crypto`) parses the client data, the
 * authenticator data, the attestation object, COSE keys and DER signatures; WebCrypto verifies the signatures; what
 * must match is decided here. The challenge's life, the counter and who the passkey belongs to are the callers'
 * (src/passkeys/registration.ts, src/passkeys/assertion.ts).
 */

/** ES256 and RS256: the algorithms the creation options offer and the only ones a passkey may have. */
export const PASSKEY_ALGORITHMS = [coseAlgorithmES256, coseAlgorithmRS256] as const;
type PasskeyAlgorithm = (typeof PASSKEY_ALGORITHMS)[number];

/** What an answer must match: the challenge of the options, this deployment's relying party (ACCESS_URL). */
interface Expected {
  challenge: string;
  origin: string;
  rpId: string;
  userVerification: boolean;
}

/** An answer that does not verify; the message says what did not match (src/passkeys/messages.ts, CeremonyDetails). */
export class CeremonyRefused extends Error {
  override name = "CeremonyRefused";
}

type RegistrationResponse = z.infer<typeof addPasskeyBody>["response"];

/** Flag bits of the authenticator data that oslo's parser does not report (WebAuthn, "Authenticator Data"). */
const FLAG = { backupEligible: 0x08, backedUp: 0x10, extensions: 0x80 } as const;

/** The attestation formats WebAuthn defines besides the two Herald takes: named in the refusal, any other is not. */
const OTHER_FORMATS = new Set(["tpm", "android-key", "android-safetynet", "fido-u2f", "apple"]);

function refuse(detail: string): never {
  throw new CeremonyRefused(detail);
}

/** What `parse` returns; whatever it throws becomes a refusal with `detail` (parsers' messages may quote the input). */
function parsed<T>(parse: () => T, detail: string): T {
  try {
    return parse();
  } catch {
    return refuse(detail);
  }
}

const bytesOf = (text: string) => parsed(() => decodeBase64urlIgnorePadding(text), D.encoding);

/** Whether the client data names a top-level origin, as it does only for an answer made in a cross-origin frame. */
function namesTopOrigin(clientDataJSON: Uint8Array): boolean {
  const raw: unknown = JSON.parse(new TextDecoder().decode(clientDataJSON));
  return typeof raw === "object" && raw !== null && "topOrigin" in raw;
}

/** The client data: the ceremony's type, the challenge of the options, ACCESS_URL's origin, and no foreign frame. */
function checkClientData(clientDataJSON: Uint8Array, type: ClientDataType, expected: Expected): void {
  const clientData = parsed(() => parseClientDataJSON(clientDataJSON), D.clientData);
  if (clientData.type !== type) refuse(D.type(type === ClientDataType.Create ? "webauthn.create" : "webauthn.get"));
  if (encodeBase64urlNoPadding(clientData.challenge) !== expected.challenge) refuse(D.challenge);
  if (clientData.origin !== expected.origin) refuse(D.origin(expected.origin));
  // Herald's pages may not be framed by another site (frame-ancestors 'none'): an answer made in a cross-origin frame
  // was made inside someone else's page (docs/passkeys.md, "The relying party: ACCESS_URL").
  if (clientData.crossOrigin === true || namesTopOrigin(clientDataJSON)) refuse(D.crossOrigin);
}

/**
 * The attested credential's public key as the authenticator wrote it (a COSE_Key, stored so), and a check that
 * nothing but the extensions follows it: oslo's parser decodes the key but keeps neither its bytes nor its length,
 * and reads no further. Null for authenticator data without attested credential data (an assertion's).
 */
function credentialPublicKeyBytes(raw: Uint8Array, data: AuthenticatorData): Uint8Array | null {
  let end = 37; // RP id hash (32), flags (1), signature counter (4)
  let key: Uint8Array | null = null;
  if (data.credential !== null) {
    const start = end + 18 + data.credential.id.length; // AAGUID (16), credential id length (2), credential id
    const [, length] = decodeCBOR(raw.subarray(start), 4);
    key = raw.slice(start, start + length);
    end = start + length;
  }
  if (((raw[32] ?? 0) & FLAG.extensions) !== 0) end += decodeCBOR(raw.subarray(end), 4)[1];
  if (end !== raw.length) throw new RangeError("bytes after the authenticator data's last field");
  return key;
}

/** The authenticator data: the RP id's hash, the user present (and verified where asked), coherent backup flags. */
function checkAuthenticatorData(raw: Uint8Array, data: AuthenticatorData, expected: Expected) {
  const publicKey = parsed(() => credentialPublicKeyBytes(raw, data), D.authenticatorData);
  if (!data.verifyRelyingPartyIdHash(expected.rpId)) refuse(D.rpIdHash(expected.rpId));
  if (!data.userPresent) refuse(D.userPresence);
  if (expected.userVerification && !data.userVerified) refuse(D.userVerification);
  const flags = raw[32] ?? 0;
  const backupEligible = (flags & FLAG.backupEligible) !== 0;
  const backedUp = (flags & FLAG.backedUp) !== 0;
  if (backedUp && !backupEligible) refuse(D.backupFlags);
  return { publicKey, backupEligible, backedUp };
}

/** A passkey's public key, imported for WebCrypto, with its COSE algorithm. */
export interface PasskeyKey {
  algorithm: PasskeyAlgorithm;
  key: CryptoKey;
}

/** A copy on an ArrayBuffer of its own, as WebCrypto's types want (oslo's are typed on any ArrayBufferLike). */
const buffered = (bytes: Uint8Array) => new Uint8Array(bytes);

/** The key WebCrypto makes of `data`, for verifying only; one it will not take is refused. */
async function imported(data: Uint8Array | JsonWebKey, algorithm: SubtleCryptoImportKeyAlgorithm): Promise<CryptoKey> {
  try {
    return await (data instanceof Uint8Array
      ? crypto.subtle.importKey("raw", buffered(data), algorithm, false, ["verify"])
      : crypto.subtle.importKey("jwk", data, algorithm, false, ["verify"]));
  } catch {
    return refuse(D.publicKey);
  }
}

/** A COSE_Key parameter that must be a byte string (EC2's x and y, RFC 9053; RSA's n and e, RFC 8230). */
function byteParameter(key: COSEPublicKey, label: number): Uint8Array {
  const value: unknown = Object.getOwnPropertyDescriptor(key.decoded, String(label))?.value;
  return value instanceof Uint8Array && value.length > 0 ? value : refuse(D.publicKey);
}

/**
 * Imports a COSE_Key (RFC 9052), as the authenticator wrote it at registration and as Herald stores it: ES256 (EC2
 * on P-256) or RS256 (RSA). Any other algorithm, or a key WebCrypto will not take, is refused.
 */
export async function importPasskeyKey(cose: Uint8Array): Promise<PasskeyKey> {
  const key = parsed(() => {
    const decoded = decodeCBORToNativeValueNoLeftoverBytes(cose, 4);
    if (typeof decoded !== "object" || decoded === null || Array.isArray(decoded)) throw new TypeError("not a map");
    return new COSEPublicKey(decoded);
  }, D.publicKey);
  const algorithm = parsed(() => key.algorithm(), D.publicKey);
  if (algorithm === coseAlgorithmES256) {
    // oslo checks the key type, the curve's parameter and x and y of 32 bytes each. The point goes to WebCrypto as
    // those bytes (0x04 ‖ x ‖ y): oslo's own SEC1 encoder (ECDSAPublicKey, @oslojs/crypto 1.0.1) writes y without its
    // leading zero bytes, at the wrong place, which would refuse one key in 256 (test/passkeys/webauthn.test.ts).
    if (parsed(() => key.ec2(), D.publicKey).curve !== coseEllipticCurveP256) refuse(D.publicKey);
    const point = new Uint8Array([0x04, ...byteParameter(key, -2), ...byteParameter(key, -3)]);
    return { algorithm, key: await imported(point, { name: "ECDSA", namedCurve: "P-256" }) };
  }
  if (algorithm === coseAlgorithmRS256) {
    if (parsed(() => key.type(), D.publicKey) !== COSEKeyType.RSA) refuse(D.publicKey);
    // oslo's key.rsa() takes 2048-bit moduli only; an RS256 key of any size WebCrypto takes is one, so n and e are read here.
    const jwk = { kty: "RSA", n: encodeBase64urlNoPadding(byteParameter(key, -1)), e: encodeBase64urlNoPadding(byteParameter(key, -2)) };
    return { algorithm, key: await imported(jwk, { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" }) };
  }
  return refuse(D.algorithm(algorithm));
}

/**
 * Whether `signature` is `key`'s over `message`. RS256 signatures go to WebCrypto as they come. An ES256 signature
 * comes DER-encoded, a SEQUENCE of the INTEGERs r and s, where an integer is written without its leading zero bytes
 * (and with a zero byte before a first byte of 0x80 or more); WebCrypto takes r ‖ s, 32 bytes each. oslo decodes the
 * DER and writes each integer back at its full width, so the one signature in about 128 whose r or s begins with a
 * zero byte verifies like any other (test/passkeys/webauthn.test.ts).
 */
export async function verifySignature({ algorithm, key }: PasskeyKey, message: Uint8Array, signature: Uint8Array): Promise<boolean> {
  try {
    if (algorithm === coseAlgorithmRS256) return await crypto.subtle.verify("RSASSA-PKCS1-v1_5", key, buffered(signature), buffered(message));
    const decoded: ECDSASignature = decodePKIXECDSASignature(signature);
    // Out of P-256's range: no signature, and too wide for the fixed-width encoding.
    if (decoded.r >= p256.n || decoded.s >= p256.n) return false;
    return await crypto.subtle.verify({ name: "ECDSA", hash: "SHA-256" }, key, buffered(decoded.encodeIEEEP1363(p256)), buffered(message));
  } catch {
    return false;
  }
}

/** A verified registration: what Herald stores of the new passkey. */
interface NewCredential {
  /** The credential id, base64url. */
  id: string;
  /** The COSE_Key, base64url, as the authenticator wrote it. */
  publicKey: string;
  counter: number;
  backupEligible: boolean;
  backedUp: boolean;
}

/**
 * The attestation statement: `none` with nothing in it, or `packed` self-attestation — no certificate, the
 * credential's own algorithm, and its signature over the authenticator data and the client data's hash. Other
 * formats were refused before (docs/passkeys.md, "Attestation").
 */
async function checkAttestationStatement(statement: AttestationStatement, key: PasskeyKey, authData: Uint8Array, clientDataJSON: Uint8Array) {
  if (statement.format === AttestationStatementFormat.None) {
    if (Object.keys(statement.decoded).length > 0) refuse(D.attestationStatement);
    return;
  }
  const packed = parsed(() => statement.packed(), D.attestationStatement);
  if (packed.certificates !== null) refuse(D.fullAttestation);
  if (packed.algorithm !== key.algorithm) refuse(D.attestationAlgorithm);
  const signed = createAssertionSignatureMessage(authData, clientDataJSON);
  if (!(await verifySignature(key, signed, packed.signature))) refuse(D.attestationUnverified);
}

/**
 * Verifies the answer to creation options (WebAuthn's registration ceremony, docs/passkeys.md, "Adding a passkey"):
 * the client data (type `webauthn.create`, the challenge, the origin, no foreign frame), the authenticator data (RP
 * id hash, user presence and verification, backup flags, the attested credential under the response's id), the
 * public key (ES256 or RS256), and the attestation statement. Throws `CeremonyRefused` saying what did not match.
 */
export async function verifyRegistration(response: RegistrationResponse, expected: Expected): Promise<NewCredential> {
  if (response.id !== response.rawId) refuse(D.rawId);
  const clientDataJSON = bytesOf(response.response.clientDataJSON);
  checkClientData(clientDataJSON, ClientDataType.Create, expected);

  const attestationObject = bytesOf(response.response.attestationObject);
  // Read once here for the format and the authenticator data's own bytes, which oslo's view below does not keep.
  const decoded = parsed(() => decodeCBORToNativeValueNoLeftoverBytes(attestationObject, 4), D.attestationObject);
  if (typeof decoded !== "object" || decoded === null || !("fmt" in decoded) || !("authData" in decoded)) refuse(D.attestationObject);
  const { fmt, authData } = decoded;
  if (fmt !== "none" && fmt !== "packed")
    refuse(typeof fmt === "string" && OTHER_FORMATS.has(fmt) ? D.attestationFormat(fmt) : D.unknownAttestationFormat);
  if (!(authData instanceof Uint8Array)) refuse(D.attestationObject);
  const { authenticatorData, attestationStatement } = parsed(() => parseAttestationObject(attestationObject), D.attestationObject);

  const { publicKey, backupEligible, backedUp } = checkAuthenticatorData(authData, authenticatorData, expected);
  const { credential } = authenticatorData;
  if (credential === null || publicKey === null) return refuse(D.noCredential);
  const id = encodeBase64urlNoPadding(credential.id);
  if (id !== response.id) refuse(D.credentialId);
  const key = await importPasskeyKey(publicKey);
  await checkAttestationStatement(attestationStatement, key, authData, clientDataJSON);
  return { id, publicKey: encodeBase64urlNoPadding(publicKey), counter: authenticatorData.signatureCounter, backupEligible, backedUp };
}

/**
 * Verifies an assertion made with the passkey whose stored public key is `publicKey` (WebAuthn's authentication
 * ceremony, docs/passkeys.md, "Signing in with a passkey"): the client data (type `webauthn.get`, the challenge, the
 * origin, no foreign frame), the authenticator data (RP id hash, user presence, user verification where expected,
 * backup flags), then the signature over the authenticator data and the client data's hash. Returns the counter
 * and backup state it reports, for the caller to judge; throws `CeremonyRefused` otherwise.
 */
export async function verifyAssertion(
  response: AuthenticationResponseBody,
  publicKey: string,
  expected: Expected,
): Promise<{ counter: number; backedUp: boolean }> {
  if (response.id !== response.rawId) refuse(D.rawId);
  const clientDataJSON = bytesOf(response.response.clientDataJSON);
  checkClientData(clientDataJSON, ClientDataType.Get, expected);
  const authData = bytesOf(response.response.authenticatorData);
  const data = parsed(() => parseAuthenticatorData(authData), D.authenticatorData);
  const { backedUp } = checkAuthenticatorData(authData, data, expected);
  const key = await importPasskeyKey(bytesOf(publicKey));
  const signed = createAssertionSignatureMessage(authData, clientDataJSON);
  if (!(await verifySignature(key, signed, bytesOf(response.response.signature)))) refuse(D.signature);
  return { counter: data.signatureCounter, backedUp };
}
