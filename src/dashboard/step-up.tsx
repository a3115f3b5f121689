import { useEffect, useRef, useState } from "preact/hooks";
import { asCode, type Factors, loadFactors, type StepUpProof, stepUp } from "./factors";
import { type Me, signOut } from "./session";
import { useAction } from "./ui/action";
import { Field, Loading, ProblemAlert } from "./ui/components";
import { createStore, useStore } from "./ui/store";

/**
 * The open prompt's answer: true once the API accepted the proof, false when the person cancelled. Wrapped in an
 * object: a store's value goes through a state setter, which would call a bare function as an updater.
 */
const asking = createStore<{ answer(confirmed: boolean): void } | undefined>(undefined);

/**
 * Opens the step-up prompt and waits for the person (the API layer calls it when an answer says `step-up required`,
 * then sends the refused request again; docs/dashboard.md, "Step-up").
 */
export function promptStepUp(): Promise<boolean> {
  return new Promise((resolve) => asking.set({ answer: resolve }));
}

/** The prompt, when one is asked for: shown by the app over whatever page is open. */
export function StepUpPrompt({ me }: { me: Me }) {
  const open = useStore(asking);
  if (!open) return null;
  return (
    <StepUpDialog
      me={me}
      onClose={(confirmed) => {
        asking.set(undefined);
        open.answer(confirmed);
      }}
    />
  );
}

/** Which proofs to offer: a person with a factor must use one; one without uses the password (docs/dashboard.md, "Step-up"). */
function waysFor(me: Me, factors: Factors | null) {
  // Factors that could not be read: offer every way, and the API says which it takes.
  if (factors === null) return { passkey: true, code: true, recovery: true, password: me.login_type === "password" };
  const withFactor = factors.totp || factors.passkeys > 0;
  return {
    passkey: factors.passkeys > 0,
    code: factors.totp,
    recovery: factors.totp && factors.recovery_codes_left > 0,
    password: !withFactor && me.login_type === "password",
  };
}

function StepUpDialog({ me, onClose }: { me: Me; onClose(confirmed: boolean): void }) {
  const dialog = useRef<HTMLDialogElement>(null);
  const opener = useRef<Element | null>(null);
  // undefined while loading, null when they could not be read.
  const [factors, setFactors] = useState<Factors | null | undefined>(undefined);
  const [recovery, setRecovery] = useState(false);
  const [password, setPassword] = useState("");
  const [code, setCode] = useState("");

  useEffect(() => {
    opener.current = document.activeElement;
    dialog.current?.showModal();
    loadFactors().then(setFactors, () => setFactors(null));
  }, []);
  // Once the ways are known, focus goes to the first of them (a passkey button or a field), not to Cancel.
  useEffect(() => {
    if (factors !== undefined) dialog.current?.querySelector<HTMLElement>(".step-up-ways input, .step-up-ways button")?.focus();
  }, [factors]);

  const close = (confirmed: boolean) => {
    dialog.current?.close();
    // Back to what the person was doing: the control that started the change.
    if (opener.current instanceof HTMLElement) opener.current.focus();
    onClose(confirmed);
  };
  const confirm = useAction(async (proof: StepUpProof) => {
    await stepUp(proof);
    close(true);
  });

  const ways = factors === undefined ? undefined : waysFor(me, factors);
  const external = ways && !ways.passkey && !ways.code && !ways.password;
  return (
    <dialog
      ref={dialog}
      class="prompt"
      aria-labelledby="step-up-heading"
      aria-describedby="step-up-why"
      data-testid="step-up"
      onCancel={(event) => {
        // Escape: the same as Cancel.
        event.preventDefault();
        close(false);
      }}
    >
      <div class="stack">
        <h2 id="step-up-heading">Confirm it is you</h2>
        <p id="step-up-why">This change needs a recent sign-in. Once you confirm, it goes on by itself.</p>
        <ProblemAlert problem={confirm.problem} shown={["password", "code"]} />
        {ways === undefined ? <Loading what="your sign-in methods" /> : null}
        <div class="stack step-up-ways">
          {ways?.passkey ? (
            <div>
              <button type="button" class="button-primary" disabled={confirm.pending} onClick={() => void confirm.run({ passkey: true })}>
                Use a passkey
              </button>
            </div>
          ) : null}
          {ways?.code ? (
            <form
              class="stack"
              onSubmit={(event) => {
                event.preventDefault();
                if (!confirm.pending) void confirm.run({ code: asCode(code) });
              }}
            >
              {recovery ? (
                <Field
                  label="Recovery code"
                  name="step_up_recovery_code"
                  autocomplete="off"
                  required
                  value={code}
                  onValue={setCode}
                  problem={confirm.problem}
                  problemField="code"
                  hint="One of the codes you saved when you set up the app. Each works once."
                />
              ) : (
                <Field
                  label="Code from your authenticator app"
                  name="step_up_code"
                  autocomplete="one-time-code"
                  inputMode="numeric"
                  required
                  value={code}
                  onValue={setCode}
                  problem={confirm.problem}
                  problemField="code"
                  hint="6 digits; the app shows a new one every 30 seconds."
                />
              )}
              <div class="row">
                <button type="submit" class={ways.passkey ? "" : "button-primary"} disabled={confirm.pending}>
                  Confirm
                </button>
                {ways.recovery ? (
                  <button
                    type="button"
                    class="button-quiet"
                    onClick={() => {
                      setRecovery(!recovery);
                      setCode("");
                      confirm.clear();
                    }}
                  >
                    {recovery ? "Use the app's code instead" : "Use a recovery code instead"}
                  </button>
                ) : null}
              </div>
            </form>
          ) : null}
          {ways?.password ? (
            <form
              class="stack"
              onSubmit={(event) => {
                event.preventDefault();
                if (!confirm.pending) void confirm.run({ password });
              }}
            >
              <Field
                label="Your password"
                type="password"
                name="step_up_password"
                autocomplete="current-password"
                required
                value={password}
                onValue={setPassword}
                problem={confirm.problem}
                problemField="password"
              />
              <div>
                <button type="submit" class="button-primary" disabled={confirm.pending}>
                  Confirm
                </button>
              </div>
            </form>
          ) : null}
        </div>
        {external ? (
          <p>
            You have no Herald password or second factor to confirm with. Sign out and sign in again, then try once more: a fresh sign-in counts as
            confirming.
          </p>
        ) : null}
        <div class="row">
          {external ? (
            <button type="button" class="button-primary" onClick={() => void signOut()}>
              Sign out
            </button>
          ) : null}
          <button type="button" onClick={() => close(false)}>
            Cancel
          </button>
        </div>
      </div>
    </dialog>
  );
}
