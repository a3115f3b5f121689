/**
 * The messages and details of the second factor, step-up and the MFA_REQUIRED_ROLES policy (docs/second-factor.md).
 * Clients compare these strings, so they are written once here and imported by the code that answers with them, the
 * route descriptions that quote them and the tests; docs/api.md (Conventions) describes the error shape they go in.
 */
export const MfaMessages = {
  incorrectCode: "Incorrect one-time code.",
  /** 401 of `POST /users/login/mfa` when its `mfa_token` no longer works: the client starts the sign-in again. */
  signInExpired: "This sign-in has expired or was already completed. Sign in again.",
  totpAlreadyOn: "An authenticator app is already set up. Remove it before setting up another.",
  totpNotPending: "No authenticator app is waiting to be confirmed: start again with POST /users/{user}/mfa/totp.",
  totpNotOn: "No authenticator app is set up.",
  noFactorForCodes: "Recovery codes stand in for a second factor: set one up first.",
  selfOnly: "Only the user themself can change their second factors.",
  noSignIn: "This account does not sign in, so it has no second factor.",
  ownerOnly: "Only an owner can remove another user's second factors.",
  notOnYourself: "To remove your own second factor, use DELETE /users/me/mfa/totp.",
  noFactors: "This user has no second factor.",
  /** 400 of the passkey-options routes of sign-in and step-up for a user without a usable (not suspect) passkey. */
  noPasskey: "This account has no passkey to confirm with: use a code instead.",
  /** Step-up (`requireRecentAuth`): the message, and its `detail`, which clients test for. */
  confirmItIsYou: "Confirm it is you to continue.",
  stepUpRequired: "step-up required",
  incorrectPassword: "Incorrect password.",
  useSecondFactor: "This account has a second factor: confirm with a code, not the password.",
  usePassword: "This account has no second factor: confirm with your password.",
  signInAgainToConfirm: "This account signs in through its identity provider: sign in again to confirm it is you.",
  sessionsOnly: "Only a login session confirms it is you: an API token is governed by its scopes.",
  giveOne: "Give exactly one of password and code.",
  /** The MFA_REQUIRED_ROLES policy: the message, and its `detail`, which clients test for. */
  setUpSecondFactor: "Set up a second factor to continue.",
  secondFactorRequired: "second factor required",
} as const;
