import { useCallback, useEffect, useState } from "preact/hooks";
import { type Factors, loadFactors } from "../factors";
import { useAction } from "../ui/action";
import { ProblemAlert, Warning } from "../ui/components";
import { PasskeysPart } from "./passkeys";
import { TotpPart } from "./totp";

/** Whether the person has a second factor: the authenticator app or a passkey (recovery codes come with the app). */
export const hasFactor = (factors: Factors) => factors.totp || factors.passkeys > 0;

/** The person's factors (GET /users/me/mfa), read again after every change made on the page. */
export function useFactors() {
  const [factors, setFactors] = useState<Factors | undefined>(undefined);
  const load = useAction(async () => setFactors(await loadFactors()));
  useEffect(() => void load.run(), [load.run]);
  const reload = useCallback(() => void load.run(), [load.run]);
  return { factors, problem: load.problem, reload };
}

/**
 * Account → Security: the second factors (docs/dashboard.md, "Second factor"): the authenticator app with its
 * recovery codes, and passkeys. Changing any of them may ask the person to confirm it is them first (the step-up
 * prompt, which the API layer opens by itself).
 */
export function SecuritySection() {
  const { factors, problem, reload } = useFactors();
  return (
    <section class="account-section" aria-labelledby="security-heading" data-testid="security">
      <h2 id="security-heading" tabIndex={-1}>
        Security
      </h2>
      <p class="muted">A second factor keeps your account yours even if someone learns your password: Herald asks for it after the password.</p>
      <ProblemAlert problem={problem} />
      {factors?.required && !hasFactor(factors) ? (
        <Warning title="Your role needs a second factor.">
          Add an authenticator app or a passkey below; until then Herald refuses other changes.
        </Warning>
      ) : null}
      <h3 id="totp-heading" class="part-heading" tabIndex={-1}>
        Authenticator app
      </h3>
      <TotpPart factors={factors} onChanged={reload} />
      <h3 id="passkeys-heading" class="part-heading" tabIndex={-1}>
        Passkeys
      </h3>
      <PasskeysPart onChanged={reload} />
    </section>
  );
}
