import { useEffect, useRef, useState } from "preact/hooks";
import { asCode, confirmTotp, type Factors, newRecoveryCodes, startTotp, type TotpEnrolment, turnOffTotp } from "../factors";
import { useAction } from "../ui/action";
import { Field, Loading, Notice, ProblemAlert } from "../ui/components";
import { QrCode } from "../ui/qr-code";
import { ConfirmButton } from "./confirm";
import { RecoveryCodes } from "./recovery-codes";

/** The secret in groups of four, as authenticator apps show and accept it (spaces are ignored when typed). */
const grouped = (secret: string) => secret.replace(/(.{4})(?=.)/g, "$1 ");

/**
 * The authenticator app (TOTP, docs/dashboard.md, "The Security section"): whether it is on, setting it up (a QR code and the
 * secret as text, then a code from the app to confirm), the recovery codes that confirming answers (shown once), a
 * new set of them, and turning it off.
 */
export function TotpPart({ factors, onChanged }: { factors: Factors | undefined; onChanged(): void }) {
  const [settingUp, setSettingUp] = useState(false);
  const [codes, setCodes] = useState<readonly string[] | undefined>(undefined);
  const [notice, setNotice] = useState("");
  const renew = useAction(async () => {
    setNotice("");
    setCodes((await newRecoveryCodes()).recovery_codes);
    onChanged();
  });
  const turnOff = useAction(async () => {
    await turnOffTotp();
    setNotice("The authenticator app is off: Herald no longer asks for its codes, and your recovery codes stopped working.");
    onChanged();
  });

  if (codes) {
    return (
      <RecoveryCodes
        codes={codes}
        onDone={() => {
          setCodes(undefined);
          document.getElementById("totp-heading")?.focus();
        }}
      />
    );
  }
  if (settingUp) {
    return (
      <TotpSetup
        onConfirmed={(recovery) => {
          setSettingUp(false);
          setCodes(recovery);
          onChanged();
        }}
        onCancel={() => {
          setSettingUp(false);
          document.getElementById("totp-heading")?.focus();
        }}
      />
    );
  }
  return (
    <div class="card stack" data-testid="totp">
      <ProblemAlert problem={renew.problem ?? turnOff.problem} />
      {notice ? <Notice>{notice}</Notice> : null}
      {factors === undefined ? null : factors.totp ? (
        <>
          <p>
            <span class="status status-on">On</span> Herald asks for a code from your authenticator app when you sign in.
          </p>
          <p class="muted" data-testid="recovery-codes-left">
            {factors.recovery_codes_left === 1 ? "1 recovery code left." : `${factors.recovery_codes_left} recovery codes left.`}
            {factors.recovery_codes_left < 3 ? " Make new ones before they run out." : ""}
          </p>
          <div class="row">
            <ConfirmButton
              id="renew-recovery-codes"
              label="New recovery codes"
              question="Your current recovery codes stop working. Make new ones?"
              about="recovery codes"
              disabled={renew.pending}
              onConfirm={() => void renew.run()}
            />
            <ConfirmButton
              id="turn-off-totp"
              label="Turn off"
              name="Turn off the authenticator app"
              question="Herald stops asking for the app's codes, and your recovery codes stop working. Turn it off?"
              about="authenticator app"
              disabled={turnOff.pending}
              onConfirm={() => void turnOff.run()}
            />
          </div>
        </>
      ) : (
        <>
          <p>
            <span class="status">Off</span> Use an app such as a password manager or an authenticator app to make a new code every 30 seconds.
          </p>
          <div>
            <button
              type="button"
              onClick={() => {
                setNotice("");
                setSettingUp(true);
              }}
            >
              Set up an authenticator app
            </button>
          </div>
        </>
      )}
    </div>
  );
}

/** Asks the API for a pending secret, shows it, and confirms it with a code from the app. */
function TotpSetup({ onConfirmed, onCancel }: { onConfirmed(codes: readonly string[]): void; onCancel(): void }) {
  const [enrolment, setEnrolment] = useState<TotpEnrolment | undefined>(undefined);
  const [code, setCode] = useState("");
  const heading = useRef<HTMLHeadingElement>(null);
  const start = useAction(async () => setEnrolment(await startTotp()));
  useEffect(() => {
    heading.current?.focus();
    void start.run();
  }, [start.run]);
  const confirm = useAction(async () => {
    const answer = await confirmTotp(asCode(code));
    onConfirmed(answer.recovery_codes);
  });
  return (
    <form
      class="card stack"
      aria-labelledby="totp-setup-heading"
      data-testid="totp-setup"
      onSubmit={(event) => {
        event.preventDefault();
        if (!confirm.pending && enrolment) void confirm.run();
      }}
    >
      <h4 id="totp-setup-heading" ref={heading} tabIndex={-1}>
        Set up an authenticator app
      </h4>
      <ProblemAlert problem={start.problem} />
      {enrolment === undefined ? (
        start.problem ? (
          <div class="row">
            <button type="button" onClick={() => void start.run()}>
              Try again
            </button>
            <button type="button" onClick={onCancel}>
              Cancel
            </button>
          </div>
        ) : (
          <Loading what="a new secret" />
        )
      ) : (
        <>
          <ol class="totp-steps">
            <li>
              Scan this QR code with your app.
              <QrCode text={enrolment.otpauth_url} label="QR code to add Herald to your authenticator app" />
            </li>
            <li>
              Or, if you cannot scan it, type this key into the app (time-based):
              <code class="totp-secret" data-testid="totp-secret">
                {grouped(enrolment.secret)}
              </code>
            </li>
            <li>Enter the 6-digit code the app shows now, to check that it works.</li>
          </ol>
          <ProblemAlert problem={confirm.problem} shown={["code"]} />
          <Field
            label="Code from the app"
            name="totp_code"
            autocomplete="one-time-code"
            inputMode="numeric"
            required
            value={code}
            onValue={setCode}
            problem={confirm.problem}
            problemField="code"
            hint="6 digits; the app shows a new one every 30 seconds."
          />
          <div class="row">
            <button type="submit" class="button-primary" disabled={confirm.pending}>
              {confirm.pending ? "Checking…" : "Turn on"}
            </button>
            <button type="button" onClick={onCancel}>
              Cancel
            </button>
          </div>
        </>
      )}
    </form>
  );
}
