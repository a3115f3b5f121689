import type { AuthenticationResponseJSON } from "@simplewebauthn/browser";
import { useEffect, useState } from "preact/hooks";
import { api, call } from "../api";
import { getPasskey, passkeyFromAutofill, stopPasskeyPrompt } from "../passkey";
import { href } from "../router";
import { type AuthMethods, refreshSession } from "../session";
import { useAction } from "../ui/action";
import { ActionForm, Field, Page, ProblemAlert } from "../ui/components";
import { askSecondFactor } from "./second-factor";

/** Where an external sign-in starts; it comes back to the dashboard (`redirect=/`). */
const EXTERNAL = {
  oidc: "/api/v2/users/oidc/callback?redirect=%2F",
  github: "/api/v2/users/oauth2/github/callback?redirect=%2F",
};

/** A passwordless sign-in's challenge (POST /users/login/passkey/options, answered by whichever of the person's passkeys they pick). */
async function passkeyOptions() {
  return await call(api.users.login.passkey.options.$post(), { quiet401: true });
}

/** Sends the chosen passkey's answer; the API answers the session cookie, as a password sign-in does. */
async function signInWithPasskey(response: AuthenticationResponseJSON): Promise<void> {
  await call(api.users.login.passkey.$post({ json: { response } }), { quiet401: true });
  await refreshSession();
}

export function SignInPage({ methods }: { methods: AuthMethods }) {
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const signIn = useAction(async () => {
    // The answer sets the HttpOnly session cookie; the token in its body is not kept. An account with a second factor
    // gets no session yet, but a token for the second step (docs/dashboard.md, "Second factor").
    const answer = await call(api.users.login.$post({ json: { email, password } }), { quiet401: true });
    if ("mfa_required" in answer && answer.mfa_required) {
      askSecondFactor({ token: answer.mfa_token, methods: answer.methods });
      return;
    }
    await refreshSession();
  });
  // The browser's autofill on the e-mail field also offers the person's passkeys (conditional mediation). It waits
  // quietly for as long as the page is open; the page stops it when the person signs in another way or leaves, and
  // that stop is not an error. The button's prompt stops it too, and when that prompt ends without a sign-in,
  // autofill is offered again.
  const autofill = useAction(async () => {
    const response = await passkeyFromAutofill(passkeyOptions);
    if (response) await signInWithPasskey(response);
  });
  const withPasskey = useAction(async () => {
    try {
      await signInWithPasskey(await getPasskey(await passkeyOptions()));
    } catch (error) {
      void autofill.run();
      throw error;
    }
  });
  useEffect(() => {
    void autofill.run();
    return stopPasskeyPrompt;
  }, [autofill.run]);

  const external = methods.oidc.enabled || methods.github.enabled;
  return (
    <Page title="Sign in to Herald">
      <div class="narrow">
        {methods.password.enabled ? (
          <ActionForm action={signIn} shown={["email", "password"]}>
            <Field
              label="E-mail"
              type="email"
              name="email"
              autocomplete="username webauthn"
              required
              value={email}
              onValue={setEmail}
              problem={signIn.problem}
              problemField="email"
            />
            <Field
              label="Password"
              type="password"
              name="password"
              autocomplete="current-password"
              required
              value={password}
              onValue={setPassword}
              problem={signIn.problem}
              problemField="password"
            />
            <button type="submit" class="button-primary" disabled={signIn.pending}>
              {signIn.pending ? "Signing in…" : "Sign in"}
            </button>
            <a href={href("reset-password")}>Forgot your password?</a>
          </ActionForm>
        ) : null}
        <div class="card stack external-sign-in">
          {methods.password.enabled ? <p class="divider">or</p> : null}
          <ProblemAlert problem={withPasskey.problem ?? autofill.problem} />
          <button type="button" class="button" disabled={withPasskey.pending} onClick={() => void withPasskey.run()}>
            {withPasskey.pending ? "Waiting for your passkey…" : "Sign in with a passkey"}
          </button>
          {external && methods.oidc.enabled ? (
            <a class="button" href={EXTERNAL.oidc}>
              {methods.oidc.signInText || "Sign in with OpenID Connect"}
            </a>
          ) : null}
          {external && methods.github.enabled ? (
            <a class="button" href={EXTERNAL.github}>
              Sign in with GitHub
            </a>
          ) : null}
        </div>
      </div>
    </Page>
  );
}
