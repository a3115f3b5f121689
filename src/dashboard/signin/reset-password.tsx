import { useState } from "preact/hooks";
import { api, call } from "../api";
import { href, routeParam } from "../router";
import { useAction } from "../ui/action";
import { ActionForm, Field, NewPasswordField, Notice, Page, Warning } from "../ui/components";

/** What the passcode e-mail's link brought (`/reset-password/change?otp=…`, maybe `&email=…`), held in memory only. */
let fromLink: { email: string; code: string } | undefined;

/**
 * Opened from an e-mail's link (`/reset-password`, `/reset-password/change?otp=…`, the paths of Coder's
 * templates): keep the passcode and address in memory, and put the dashboard's own address in the bar at once, so
 * the passcode stays in neither the history nor a bookmark (docs/dashboard.md#pages).
 */
export function takeResetLink(): void {
  if (location.pathname !== "/reset-password" && location.pathname !== "/reset-password/change") return;
  const query = new URLSearchParams(location.search);
  const code = query.get("otp");
  if (code) fromLink = { email: query.get("email") ?? "", code };
  history.replaceState(null, "", "/#/reset-password");
}

/**
 * "Forgot password" through the one-time passcode: ask for a code by e-mail, then set a new password with it. The
 * first step's answer is the same whether or not the address has an account (no enumeration, docs/security.md).
 * When the deployment cannot send a passcode at all (`deliverable`, from GET /users/authmethods), the page says so
 * instead of asking for an address: a fact about the deployment, the same for everyone (docs/dashboard.md, "Pages").
 */
export function ResetPasswordPage({ deliverable }: { deliverable: boolean }) {
  const [email, setEmail] = useState(fromLink?.email ?? "");
  const [code, setCode] = useState(fromLink?.code ?? "");
  const [password, setPassword] = useState("");
  // A passcode already sent (a "This wasn't me" confirmation e-mails one, `?passcode=sent`) is typed in here: asking
  // for another would replace it.
  const [haveCode, setHaveCode] = useState(fromLink !== undefined || routeParam("passcode") === "sent");
  const [step, setStep] = useState<"request" | "change" | "done">(haveCode ? "change" : "request");
  const request = useAction(async () => {
    await call(api.users.otp.request.$post({ json: { email } }));
    setStep("change");
  });
  const change = useAction(async () => {
    await call(api.users.otp["change-password"].$post({ json: { email, one_time_passcode: code, password } }));
    setStep("done");
  });
  return (
    <Page title="Reset your password">
      <div class="narrow">
        {step === "request" && !deliverable ? (
          <Warning title="No passcode can be sent." testId="reset-undeliverable">
            This server has no way to send e-mail (it is not configured), so a passcode would never arrive. Ask an owner or a user admin to set a new
            password for you.
          </Warning>
        ) : null}
        {step === "request" && deliverable ? (
          <ActionForm action={request} shown={["email"]}>
            <p>Enter your account's e-mail address. If it has a password sign-in, a one-time passcode is sent to it.</p>
            <Field
              label="E-mail"
              type="email"
              name="email"
              autocomplete="email"
              required
              value={email}
              onValue={setEmail}
              problem={request.problem}
              problemField="email"
            />
            <div class="row">
              <button type="submit" class="button-primary" disabled={request.pending}>
                Send a passcode
              </button>
              <button
                type="button"
                class="button-quiet"
                onClick={() => {
                  setHaveCode(true);
                  setStep("change");
                }}
              >
                I have a passcode
              </button>
            </div>
          </ActionForm>
        ) : null}
        {step === "change" ? (
          <ActionForm action={change} shown={haveCode ? ["email", "one_time_passcode", "password"] : ["one_time_passcode", "password"]}>
            {haveCode ? null : <Notice>If {email} has an account, a passcode is on its way. It works once, for a limited time.</Notice>}
            {haveCode ? (
              <Field
                label="E-mail"
                type="email"
                name="email"
                autocomplete="username"
                required
                value={email}
                onValue={setEmail}
                problem={change.problem}
                problemField="email"
              />
            ) : null}
            <Field
              label="Passcode"
              name="one_time_passcode"
              autocomplete="one-time-code"
              required
              value={code}
              onValue={setCode}
              problem={change.problem}
              problemField="one_time_passcode"
            />
            <NewPasswordField value={password} onValue={setPassword} problem={change.problem} />
            <button type="submit" class="button-primary" disabled={change.pending}>
              Set the new password
            </button>
          </ActionForm>
        ) : null}
        {step === "done" ? <Notice>Your password is changed, and every session you had is ended.</Notice> : null}
        <p>
          <a href={href("sign-in")}>Back to sign-in</a>
        </p>
      </div>
    </Page>
  );
}
