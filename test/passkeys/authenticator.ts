import { expect } from "vitest";
import { call, json } from "../helpers";
import type { Bend, CreationOptions, RequestOptions, SoftAuthenticator } from "./soft-authenticator";

/**
 * The software authenticator of test/passkeys/soft-authenticator.ts, and the calls through the Worker that the
 * passkey tests share (docs/passkeys.md).
 */
export * from "./soft-authenticator";

/** Creation options for the caller (`POST /users/me/passkeys/options`). */
export async function creationOptions(token: string): Promise<CreationOptions> {
  const res = await call("POST", "/users/me/passkeys/options", { token });
  expect(res.status, await res.clone().text()).toBe(200);
  return json<CreationOptions>(res);
}

/** Adds `authenticator` as a passkey of the caller; answers the response (201 unless the test bent something). */
export async function addPasskey(token: string, authenticator: SoftAuthenticator, body: { name?: string; bend?: Bend } = {}): Promise<Response> {
  const registration = await authenticator.register(await creationOptions(token), body.bend);
  return call("POST", "/users/me/passkeys", { token, body: { ...(body.name === undefined ? {} : { name: body.name }), response: registration } });
}

/** Request options for passwordless sign-in (`POST /users/login/passkey/options`). */
export async function loginOptions(): Promise<RequestOptions> {
  const res = await call("POST", "/users/login/passkey/options");
  expect(res.status, await res.clone().text()).toBe(200);
  return json<RequestOptions>(res);
}

/** Signs in with `authenticator`, passwordless; answers the response (201 unless the test bent something). */
export async function passkeySignIn(authenticator: SoftAuthenticator, bend: Bend = {}, headers: Record<string, string> = {}): Promise<Response> {
  const assertion = await authenticator.assert(await loginOptions(), bend);
  return call("POST", "/users/login/passkey", { body: { response: assertion }, headers });
}
