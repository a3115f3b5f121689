import { routeParam } from "../router";
import type { Me } from "../session";
import { Notice, Page, ProblemAlert, Warning } from "../ui/components";
import { PasskeysPart } from "./passkeys";
import { hasFactor, useFactors } from "./security";
import { TotpPart } from "./totp";
import "./account.css";

/** The roles a person holds, as they read them ("Owner, User admin"). */
const roleNames = (me: Me) => me.roles.map((role) => role.display_name || role.name).join(", ");

/**
 * Opened when the API refuses with `second factor required`: the person's role needs a second factor, and until they
 * enrol one Herald refuses all else (docs/dashboard.md, "A role that needs a second factor"). It says why, offers the authenticator app
 * and a passkey, and once one is on, leads back to the page they were on (`back`, a fragment).
 */
export function EnrolFactorPage({ me }: { me: Me }) {
  const { factors, problem, reload } = useFactors();
  const back = routeParam("back");
  const backTo = back?.startsWith("#/") && !back.startsWith("#/enrol-factor") ? back : "#/inbox";
  const done = factors !== undefined && hasFactor(factors);
  return (
    <Page title="Add a second factor">
      {done ? (
        <Notice>
          Your account has a second factor now.{" "}
          <a href={backTo} data-testid="enrol-continue">
            Continue to Herald
          </a>
        </Notice>
      ) : (
        <Warning title="Your role needs a second factor." testId="enrol-why">
          {me.roles.length > 0 ? `As ${roleNames(me)}, you` : "You"} must confirm sign-ins with an authenticator app or a passkey, so that a leaked
          password alone cannot open your account. Until you add one, Herald refuses everything else. Choose one below; it takes a minute.
        </Warning>
      )}
      <ProblemAlert problem={problem} />
      <section class="account-section" aria-labelledby="enrol-choices-heading">
        <h2 id="enrol-choices-heading">Choose a second factor</h2>
        <h3 id="totp-heading" class="part-heading" tabIndex={-1}>
          Authenticator app
        </h3>
        <TotpPart factors={factors} onChanged={reload} />
        <h3 id="passkeys-heading" class="part-heading" tabIndex={-1}>
          Passkeys
        </h3>
        <PasskeysPart onChanged={reload} />
      </section>
    </Page>
  );
}
