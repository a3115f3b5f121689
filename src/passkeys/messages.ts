/**
 * The messages and details of the passkey routes. Clients compare these strings, so they are written once here and
 * imported by the code that throws them, the route descriptions that quote them and the tests; docs/api.md
 * (Conventions) describes the error shape they go in, docs/passkeys.md the rules behind them.
 */
export const PasskeyMessages = {
  /** The 400 of a registration that does not verify (signature, origin, RP id hash, challenge, user verification). */
  registrationRefused: "The passkey could not be verified.",
  /** Detail of that 400 when the challenge is unknown, already used, expired, or was issued for something else. */
  challengeUnusable: "The challenge is unknown, used or expired: ask for new options and try again.",
  alreadyRegistered: "This passkey is already registered.",
  tooManyPasskeys: "Too many passkeys.",
  tooManyPasskeysDetail: (cap: number) => `A user may hold at most ${cap} passkeys: remove one first.`,
  onlySelf: "Only the user themself can add a passkey.",
  /** A passkey signs in with every scope: a narrowed token must not be able to mint one (docs/passkeys.md). */
  needsFullScope: "Adding a passkey needs a credential with the all scope.",
  /**
   * The one 401 of passwordless sign-in for every assertion that is refused — an unknown credential, a bad signature,
   * a wrong origin or challenge, no user verification, a counter that went backwards — so the answer never tells
   * which (docs/passkeys.md, "Signing in with a passkey").
   */
  incorrectPasskey: "Incorrect passkey.",
} as const;

/**
 * What did not match when an answer is refused (src/passkeys/webauthn.ts): the `detail` of the 400 when adding a
 * passkey. Passwordless sign-in answers every refusal with the one 401 above and never tells which. None of them
 * repeats what the client sent: each names the rule and, where it helps, what Herald expected.
 */
export const CeremonyDetails = {
  encoding: "A field of the response is not base64url.",
  rawId: "The id and rawId differ.",
  clientData: "The client data is not WebAuthn's client data JSON.",
  type: (expected: string) => `The client data's type is not ${expected}.`,
  challenge: "The client data's challenge is not the one in the options.",
  origin: (expected: string) => `The client data's origin is not ${expected}.`,
  crossOrigin: "The answer was made in a frame inside another site's page.",
  authenticatorData: "The authenticator data is malformed.",
  rpIdHash: (rpId: string) => `The RP id hash is not that of ${rpId}.`,
  userPresence: "The authenticator did not check that the user was present.",
  userVerification: "The authenticator did not verify the user.",
  backupFlags: "The authenticator data says the credential is backed up but not that it may be.",
  noCredential: "The authenticator data holds no attested credential.",
  credentialId: "The credential id in the authenticator data is not the response's id.",
  algorithm: (alg: number) => `The public key's algorithm (${alg}) is neither ES256 (-7) nor RS256 (-257).`,
  publicKey: "The public key is not a usable ES256 or RS256 key.",
  attestationObject: "The attestation object is malformed.",
  attestationFormat: (format: string) =>
    `The attestation format ${format} is not accepted: Herald asks for attestation none and takes none or packed self-attestation.`,
  fullAttestation:
    "Packed attestation with a certificate chain is not accepted: Herald asks for attestation none and takes none or packed self-attestation.",
  unknownAttestationFormat: "The attestation format is not one WebAuthn defines.",
  attestationStatement: "The attestation statement is malformed.",
  attestationAlgorithm: "The attestation statement's algorithm is not the public key's.",
  attestationUnverified: "The attestation signature does not verify.",
  signature: "The signature does not verify.",
} as const;
