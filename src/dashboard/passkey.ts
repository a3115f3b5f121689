import {
  type AuthenticationResponseJSON,
  browserSupportsWebAuthn,
  browserSupportsWebAuthnAutofill,
  type PublicKeyCredentialCreationOptionsJSON,
  type PublicKeyCredentialRequestOptionsJSON,
  type RegistrationResponseJSON,
  startAuthentication,
  startRegistration,
  WebAuthnAbortService,
  WebAuthnError,
} from "@simplewebauthn/browser";
import { ApiProblem } from "./api";
import { SAY } from "./ui/plain-words";

/**
 * The browser's passkey prompts, through @simplewebauthn/browser (it turns the API's JSON options into the buffers
 * `navigator.credentials` takes, and the credential back into JSON). Only one ceremony runs at a time: starting one
 * stops the one before, as the sign-in page's autofill request is stopped by "Sign in with a passkey".
 */

/** A ceremony that failed, as the alert says it: what happened and what to do next (docs/dashboard.md#errors). */
function passkeyProblem(error: unknown): ApiProblem {
  if (error instanceof ApiProblem) return error;
  const code = error instanceof WebAuthnError ? error.code : undefined;
  if (code === "ERROR_AUTHENTICATOR_PREVIOUSLY_REGISTERED") {
    return new ApiProblem(0, "This device already holds a passkey for your account.", "Use it to sign in, or add a passkey on another device.");
  }
  if (!browserSupportsWebAuthn()) {
    return new ApiProblem(0, "This browser cannot use passkeys.", "Use another way offered here, or a browser that supports passkeys.");
  }
  // NotAllowedError (cancelled, timed out, no matching passkey) and the rest: the browser says no more than that.
  return new ApiProblem(0, SAY.passkeyStopped, SAY.passkeyAgain);
}

/** Asks the browser for one of the person's passkeys, to answer `options` (a sign-in, a second factor, a step-up). */
export async function getPasskey(options: PublicKeyCredentialRequestOptionsJSON): Promise<AuthenticationResponseJSON> {
  try {
    return await startAuthentication({ optionsJSON: options });
  } catch (error) {
    throw passkeyProblem(error);
  }
}

/** Asks the browser to make a new passkey for Herald with `options` (from POST /users/{user}/passkeys/options). */
export async function createPasskey(options: PublicKeyCredentialCreationOptionsJSON): Promise<RegistrationResponseJSON> {
  try {
    return await startRegistration({ optionsJSON: options });
  } catch (error) {
    throw passkeyProblem(error);
  }
}

/**
 * Offers the person's passkeys among the e-mail field's suggestions (`autocomplete="username webauthn"`, conditional
 * mediation). Resolves with the chosen passkey's answer, or undefined when it ends without one: the browser cannot
 * offer passkeys, the options cannot be had, the page stopped the request (a password sign-in, the passkey button),
 * or the browser gave up on it (its time ran out, no passkey is on the device). None of these is the person's doing
 * or needs anything from them, so none is an error to show: the password and the passkey button are still there.
 */
export async function passkeyFromAutofill(
  options: () => Promise<PublicKeyCredentialRequestOptionsJSON>,
): Promise<AuthenticationResponseJSON | undefined> {
  try {
    if (!(await browserSupportsWebAuthnAutofill())) return undefined;
    return await startAuthentication({ optionsJSON: await options(), useBrowserAutofill: true });
  } catch {
    return undefined;
  }
}

/** Stops whatever passkey prompt is waiting (the page that asked is being left). */
export function stopPasskeyPrompt(): void {
  WebAuthnAbortService.cancelCeremony();
}
