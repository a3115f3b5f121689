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
  /** Detail of that 400 when the attestation's own signature does not verify (SimpleWebAuthn answers only "not verified"). */
  attestationUnverified: "The attestation signature does not verify.",
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
