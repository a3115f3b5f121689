import { useState } from "preact/hooks";
import { ApiProblem, api, call } from "../api";
import { asCode } from "../factors";
import { getPasskey } from "../passkey";
import { currentRoute, href, landAfterSignIn, navigate, routeParam } from "../router";
import { refreshSession } from "../session";
import { useAction } from "../ui/action";
import { Field, Page, ProblemAlert, Warning } from "../ui/components";
import { SAY } from "../ui/plain-words";

/** A sign-in whose password (or external sign-in) passed, waiting for its second factor. In memory only. */
interface Challenge {
  token: string;
  methods: readonly string[];
  redirect?: string | undefined;
}
let challenge: Challenge | undefined;

/** The password was right and the account has a second factor: ask for it (docs/dashboard.md, "Second factor"). */
export function askSecondFactor(next: Challenge): void {
  challenge = next;
  navigate("second-factor");
}

/**
 * An external sign-in (OpenID Connect, GitHub) of a person with a second factor comes back to
 * `/#/second-factor?mfa_token=…&methods=…`; where it was to end is kept by the server with the token and named in
 * the second step's answer. The token is kept in memory and the address replaced at once,
 * so it stays in neither the history nor a bookmark (as a password reset's passcode, docs/dashboard.md#pages).
 */
export function takeSecondFactorLink(): void {
  if (currentRoute() !== "second-factor") return;
  const token = routeParam("mfa_token");
  if (token) {
    challenge = {
      token,
      methods: (routeParam("methods") ?? "").split(",").filter(Boolean),
    };
  }
  history.replaceState(null, "", `/${href("second-factor")}`);
}

/**
 * Where the finished sign-in goes: the `redirect` the server kept with the sign-in (an external sign-in's, checked
 * against the allowed origins when it began) may be on another origin; a place this page was given itself only on
 * this one (docs/dashboard.md, "Second factor").
 */
async function goOn(kept: string | undefined, local: string | undefined): Promise<void> {
  let target: URL | undefined;
  try {
    target = kept ? new URL(kept, location.origin) : local ? new URL(local, location.origin) : undefined;
  } catch {
    target = undefined;
  }
  if (target && kept && target.origin !== location.origin) {
    location.assign(target.href);
    return;
  }
  if (target && target.origin === location.origin && (target.pathname !== "/" || target.search)) {
    // Another path of Herald (a notice's link): a page load there, now with the session cookie.
    location.assign(target.href);
    return;
  }
  if (target?.origin === location.origin && target.hash.startsWith("#/")) landAfterSignIn(target.hash);
  await refreshSession();
}

type Proof = { code: string } | { passkey: true };

export function SecondFactorPage() {
  const [current] = useState(challenge);
  const methods = current?.methods ?? [];
  const [recovery, setRecovery] = useState(!methods.includes("totp") && methods.includes("recovery_code"));
  const [code, setCode] = useState("");
  const verify = useAction(async (proof: Proof) => {
    if (!current) return;
    const mfa_token = current.token;
    let answer: { redirect?: string | undefined };
    if ("passkey" in proof) {
      const options = await call(api.users.login.mfa["passkey-options"].$post({ json: { mfa_token } }), { quiet401: true });
      const passkey = await getPasskey(options);
      answer = await call(api.users.login.mfa.$post({ json: { mfa_token, passkey } }), { quiet401: true });
    } else {
      try {
        answer = await call(api.users.login.mfa.$post({ json: { mfa_token, code: proof.code } }), { quiet401: true });
      } catch (error) {
        // The API says only that the code was wrong; the page adds what to do next (docs/dashboard.md#errors).
        if (!(error instanceof ApiProblem) || error.status !== 401 || error.detail || error.message !== SAY.incorrectCode) throw error;
        throw new ApiProblem(401, error.message, recovery ? SAY.recoveryCodeAgain : SAY.appCodeAgain);
      }
    }
    challenge = undefined;
    await goOn(answer.redirect, current.redirect);
  });

  if (!current) {
    return (
      <Page title="Sign in to Herald">
        <div class="narrow stack">
          <Warning title="This sign-in is no longer waiting for a second factor." testId="second-factor-gone">
            It was finished, it expired, or the page was reloaded. Sign in again to get a new one.
          </Warning>
          <div>
            <a class="button button-primary" href={href("sign-in")}>
              Sign in again
            </a>
          </div>
        </div>
      </Page>
    );
  }
  const codeWay = methods.includes("totp") || methods.includes("recovery_code");
  return (
    <Page title="Confirm it is you">
      <div class="narrow stack">
        <p>One more step: your account has a second factor. Use it to finish signing in.</p>
        <ProblemAlert problem={verify.problem} shown={["code"]} />
        {methods.includes("passkey") ? (
          <div class="card stack">
            <button type="button" class="button-primary" disabled={verify.pending} onClick={() => void verify.run({ passkey: true })}>
              Use a passkey
            </button>
          </div>
        ) : null}
        {codeWay ? (
          <form
            class="card stack"
            onSubmit={(event) => {
              event.preventDefault();
              if (!verify.pending) void verify.run({ code: asCode(code) });
            }}
          >
            {recovery ? (
              <Field
                label="Recovery code"
                name="second_factor_recovery_code"
                autocomplete="off"
                required
                value={code}
                onValue={setCode}
                problem={verify.problem}
                problemField="code"
                hint="One of the codes you saved when you set up the app. Each works once."
              />
            ) : (
              <Field
                label="Code from your authenticator app"
                name="second_factor_code"
                autocomplete="one-time-code"
                inputMode="numeric"
                required
                value={code}
                onValue={setCode}
                problem={verify.problem}
                problemField="code"
                hint="6 digits; the app shows a new one every 30 seconds."
              />
            )}
            <div class="row">
              <button type="submit" class={methods.includes("passkey") ? "" : "button-primary"} disabled={verify.pending}>
                {verify.pending ? "Checking…" : "Sign in"}
              </button>
              {methods.includes("totp") && methods.includes("recovery_code") ? (
                <button
                  type="button"
                  class="button-quiet"
                  onClick={() => {
                    setRecovery(!recovery);
                    setCode("");
                    verify.clear();
                  }}
                >
                  {recovery ? "Use the app's code instead" : "Use a recovery code instead"}
                </button>
              ) : null}
            </div>
          </form>
        ) : null}
        <p class="muted">
          Lost your second factor and your recovery codes? Ask an owner to remove your second factor. Or <a href={href("sign-in")}>start again</a>{" "}
          from the sign-in page.
        </p>
      </div>
    </Page>
  );
}
