import * as z from "zod";
import { uuid } from "../http/ids";
import { timestamp } from "../http/schemas";
import { described, named } from "../openapi/registry";
import { displayed } from "../text/display";
import { userPath } from "../users/schemas";

/**
 * The passkey routes' request and response schemas (docs/api.md, "Passkeys"). The WebAuthn JSON a browser's
 * `PublicKeyCredential.toJSON()` makes is checked for its shape and bounded in size here; what it proves is verified
 * by src/passkeys/webauthn.ts. Unknown fields, such as `clientExtensionResults`, are ignored.
 */

/** Unpadded base64url, as WebAuthn's JSON encodes bytes; `max` bounds the text, so the bytes decoded too. */
const base64url = (max: number) =>
  z
    .string()
    .min(1)
    .max(max)
    .regex(/^[A-Za-z0-9_-]+$/, "must be base64url without padding");

/** A credential id is at most 1,023 bytes (WebAuthn), 1,364 characters of base64url. */
const credentialId = base64url(1364);
const attachment = described("`platform` or `cross-platform`, as the browser reports it.", z.string().max(32).nullable()).optional();

const RegistrationResponse = named(
  "RegistrationResponseJSON",
  z.object({
    id: credentialId,
    rawId: credentialId,
    response: z.object({
      clientDataJSON: base64url(4096),
      // With attestation `none` this is a few hundred bytes; an authenticator that sends a certificate chain anyway stays well within.
      attestationObject: base64url(32_768),
      authenticatorData: base64url(32_768).optional(),
      transports: z.array(z.string().max(32)).max(10).optional(),
      publicKeyAlgorithm: z.number().int().optional(),
      publicKey: base64url(4096).optional(),
    }),
    authenticatorAttachment: attachment,
    type: z.literal("public-key"),
  }),
  "What `navigator.credentials.create()` answered, as `PublicKeyCredential.toJSON()` writes it (WebAuthn's `RegistrationResponseJSON`).",
);

export const AuthenticationResponse = named(
  "AuthenticationResponseJSON",
  z.object({
    id: credentialId,
    rawId: credentialId,
    response: z.object({
      clientDataJSON: base64url(4096),
      authenticatorData: base64url(4096),
      signature: base64url(1024),
      // At most 64 bytes (WebAuthn); `null` or absent from authenticators that keep none.
      userHandle: base64url(88).nullable().optional(),
    }),
    authenticatorAttachment: attachment,
    type: z.literal("public-key"),
  }),
  "What `navigator.credentials.get()` answered, as `PublicKeyCredential.toJSON()` writes it (WebAuthn's `AuthenticationResponseJSON`).",
);

export type AuthenticationResponseBody = z.infer<typeof AuthenticationResponse>;

/** A passkey's name: displayed text, one line (docs/api.md, "Displayed text"). */
const passkeyName = displayed(z.string().min(1).max(64), "name", "single");

export const addPasskeyBody = named(
  "AddPasskeyRequest",
  z.object({
    name: described("Shown in the user's list of passkeys; by default named after the kind of authenticator.", passkeyName).optional(),
    response: RegistrationResponse,
  }),
);

export const passkeyLoginBody = named("LoginWithPasskeyRequest", z.object({ response: AuthenticationResponse }));

const CredentialDescriptor = z.strictObject({
  id: z.string(),
  type: z.literal("public-key"),
  transports: z.array(z.string()).optional(),
});

const userVerification = z.enum(["required", "preferred", "discouraged"]);

export const PublicKeyCredentialCreationOptions = named(
  "PublicKeyCredentialCreationOptionsJSON",
  z.strictObject({
    challenge: described("base64url; single use, valid for 5 minutes.", z.string()),
    rp: z.strictObject({ name: z.string(), id: described("ACCESS_URL's host name.", z.string()) }),
    user: z.strictObject({ id: z.string(), name: z.string(), displayName: z.string() }),
    pubKeyCredParams: z.array(z.strictObject({ alg: described("-7 (ES256) or -257 (RS256).", z.number().int()), type: z.literal("public-key") })),
    timeout: z.number().int(),
    attestation: z.literal("none"),
    excludeCredentials: described("The user's passkeys, so the same authenticator is not added twice.", z.array(CredentialDescriptor)),
    authenticatorSelection: z.strictObject({
      residentKey: z.literal("required"),
      requireResidentKey: z.literal(true),
      userVerification,
    }),
    extensions: z.strictObject({ credProps: z.boolean() }),
    hints: z.array(z.string()),
  }),
  "Give to `PublicKeyCredential.parseCreationOptionsFromJSON()` (or a library such as @simplewebauthn/browser), then to `navigator.credentials.create()`.",
);

export const PublicKeyCredentialRequestOptions = named(
  "PublicKeyCredentialRequestOptionsJSON",
  z.strictObject({
    rpId: z.string(),
    challenge: described("base64url; single use, valid for 5 minutes.", z.string()),
    allowCredentials: described(
      "Empty for passwordless sign-in (the authenticator offers its discoverable passkeys for this site); the user's passkeys for a second factor.",
      z.array(CredentialDescriptor),
    ),
    timeout: z.number().int(),
    userVerification,
  }),
  "Give to `PublicKeyCredential.parseRequestOptionsFromJSON()` (or a library such as @simplewebauthn/browser), then to `navigator.credentials.get()`.",
);

export const Passkey = named(
  "Passkey",
  z.strictObject({
    id: uuid,
    name: z.string(),
    created_at: timestamp,
    last_used_at: timestamp.nullable(),
    suspect_at: described(
      "When its signature counter went backwards, a sign that the authenticator was cloned: the passkey is refused from then on. `null` otherwise.",
      timestamp.nullable(),
    ),
  }),
);

export const LoginWithPasskeyResponse = named("LoginWithPasskeyResponse", z.strictObject({ session_token: z.string() }));

/** `{user}` and a passkey `{id}`, for the document. */
export const userPasskeyPath = userPath.extend({ id: described("The passkey's id (a UUID).", z.string()) });
