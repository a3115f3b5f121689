import { useState } from "preact/hooks";
import { api, call } from "../api";
import { href } from "../router";
import { type AuthMethods, refreshSession } from "../session";
import { useAction } from "../ui/action";
import { ActionForm, Field, Page } from "../ui/components";

/** Where an external sign-in starts; it comes back to the dashboard (`redirect=/`). */
const EXTERNAL = {
  oidc: "/api/v2/users/oidc/callback?redirect=%2F",
  github: "/api/v2/users/oauth2/github/callback?redirect=%2F",
};

export function SignInPage({ methods }: { methods: AuthMethods }) {
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const signIn = useAction(async () => {
    // The answer sets the HttpOnly session cookie; the token in its body is not kept.
    await call(api.users.login.$post({ json: { email, password } }));
    await refreshSession();
  });
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
              autocomplete="username"
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
        {external ? (
          <div class="card stack external-sign-in">
            {methods.password.enabled ? <p class="divider">or</p> : null}
            {methods.oidc.enabled ? (
              <a class="button" href={EXTERNAL.oidc}>
                {methods.oidc.signInText || "Sign in with OpenID Connect"}
              </a>
            ) : null}
            {methods.github.enabled ? (
              <a class="button" href={EXTERNAL.github}>
                Sign in with GitHub
              </a>
            ) : null}
          </div>
        ) : null}
      </div>
    </Page>
  );
}
