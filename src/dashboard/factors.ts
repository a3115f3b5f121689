import type { PublicKeyCredentialCreationOptionsJSON } from "@simplewebauthn/browser";
import { api, call } from "./api";
import { createPasskey, getPasskey } from "./passkey";

/**
 * The person's second factors and the prompts that use them (docs/dashboard.md, "Second factor, passkeys and step-up"), through the typed
 * client: the authenticator app (TOTP) and its recovery codes, passkeys, and confirming it is them (a step-up).
 */

export type Factors = Awaited<ReturnType<typeof loadFactors>>;
export type Passkey = Awaited<ReturnType<typeof loadPasskeys>>[number];
export type TotpEnrolment = Awaited<ReturnType<typeof startTotp>>;

/** What the person typed, as the API takes it: a code pasted as "123 456" is still the code. */
export const asCode = (typed: string) => typed.replace(/\s+/g, "");

/** Which factors are on: `{ totp, passkeys, recovery_codes_left, required }`. */
export function loadFactors() {
  return call(api.users[":user"].mfa.$get({ param: { user: "me" } }));
}

/** A new pending secret for the authenticator app; nothing changes until a code from it is confirmed. */
export function startTotp() {
  return call(api.users[":user"].mfa.totp.$post({ param: { user: "me" } }));
}

/** Turns the authenticator app on with a code from it; answers the recovery codes, shown once. */
export function confirmTotp(code: string) {
  return call(api.users[":user"].mfa.totp.confirm.$post({ param: { user: "me" }, json: { code } }));
}

export function turnOffTotp() {
  return call(api.users[":user"].mfa.totp.$delete({ param: { user: "me" } }));
}

/** A new set of recovery codes; the old set stops working. */
export function newRecoveryCodes() {
  return call(api.users[":user"].mfa["recovery-codes"].$post({ param: { user: "me" } }));
}

export function loadPasskeys() {
  return call(api.users[":user"].passkeys.$get({ param: { user: "me" } }));
}

/** Makes a passkey on this device (the browser's prompt) and saves it under `name`. */
export async function addPasskey(name: string) {
  const options = await call(api.users[":user"].passkeys.options.$post({ param: { user: "me" } }));
  // The API types `hints` as plain strings; the browser library wants WebAuthn's names, which are all Herald sends.
  const response = await createPasskey(options as PublicKeyCredentialCreationOptionsJSON);
  return call(api.users[":user"].passkeys.$post({ param: { user: "me" }, json: { ...(name ? { name } : {}), response } }));
}

export function removePasskey(id: string) {
  return call(api.users[":user"].passkeys[":id"].$delete({ param: { user: "me", id } }));
}

/** How the person confirms it is them: a password, a code (the app's or a recovery code), or a passkey. */
export type StepUpProof = { password: string } | { code: string } | { passkey: true };

/** Confirms it is the person (POST /users/me/step-up); a wrong answer is a refusal, not a sign-out. */
export async function stepUp(proof: StepUpProof): Promise<void> {
  if ("passkey" in proof) {
    const options = await call(api.users.me["step-up"]["passkey-options"].$post(), { quiet401: true });
    const passkey = await getPasskey(options);
    await call(api.users.me["step-up"].$post({ json: { passkey } }), { quiet401: true });
    return;
  }
  await call(api.users.me["step-up"].$post({ json: proof }), { quiet401: true });
}
