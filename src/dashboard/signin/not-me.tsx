import { useState } from "preact/hooks";
import { api, call } from "../api";
import { href } from "../router";
import { refreshSession } from "../session";
import { useAction } from "../ui/action";
import { Notice, Page, ProblemAlert } from "../ui/components";

/** The token of the notice's link (`/not-me#<token>`), held in memory only until it is used. */
let fromLink: string | undefined;

/**
 * Opened from a security notice's "This wasn't me" link, `/not-me#<token>`: the token is the whole fragment, which
 * never reaches a server or a log. It is kept in memory and the dashboard's own address put in the bar at once, so
 * it stays in neither the history nor a bookmark (docs/dashboard.md, "This wasn't me").
 */
export function takeNotMeLink(): void {
  if (location.pathname !== "/not-me") return;
  const fragment = location.hash.slice(1);
  if (fragment) {
    try {
      fromLink = decodeURIComponent(fragment);
    } catch {
      fromLink = fragment;
    }
  }
  history.replaceState(null, "", `/${href("not-me")}`);
}

/** What a notice's event was, as the page names it; the notices' own wording (docs/security.md, "Security notices"). */
const EVENTS: Record<string, string> = {
  new_sign_in: "A sign-in from a new device",
  password_changed: "Your password was changed",
  login_method_changed: "Your login method was changed",
  factor_added: "A sign-in method was added",
  factor_removed: "A sign-in method was removed",
  recovery_codes_regenerated: "New recovery codes were made",
  recovery_codes_low: "A recovery code was used",
  api_token_created: "An API token was created",
  sessions_ended: "Your sessions were ended by someone else",
  site_roles_changed: "Your site roles were changed",
  channel_added: "A notification channel was added",
};

/** What the link says of its event, for the page to show (as text). */
interface NoticeEvent {
  what: string;
  /** Epoch ms, or undefined when the link did not say. */
  at: number | undefined;
  device: string | undefined;
  place: string | undefined;
}

const text = (value: unknown): string | undefined => (typeof value === "string" && value.trim() !== "" ? value : undefined);
const capitalised = (value: string | undefined) => (value ? value.charAt(0).toUpperCase() + value.slice(1) : value);

/**
 * Reads the event out of the token's body (base64url JSON, before the `.` and its signature). Display only: the
 * server checks the signature and is the only judge of the link; a body that cannot be read shows a general
 * wording, and confirming still asks the server.
 */
function readNoticeEvent(token: string): NoticeEvent {
  const general: NoticeEvent = { what: "A change to your account", at: undefined, device: undefined, place: undefined };
  const body = token.split(".")[0] ?? "";
  try {
    const bytes = Uint8Array.from(atob(body.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));
    const parsed = JSON.parse(new TextDecoder().decode(bytes)) as { v?: Record<string, unknown> };
    const claims = parsed.v;
    if (typeof claims !== "object" || claims === null) return general;
    const event = text(claims.event);
    return {
      what: (event && EVENTS[event]) ?? general.what,
      at: typeof claims.at === "number" && Number.isFinite(claims.at) ? claims.at : undefined,
      device: capitalised(text(claims.device)),
      place: capitalised(text(claims.place)),
    };
  } catch {
    return general;
  }
}

const WHEN = new Intl.DateTimeFormat(undefined, { dateStyle: "long", timeStyle: "long" });

type Outcome = { revoked_sessions: number; revoked_tokens: number };

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

/**
 * "This wasn't me" (docs/dashboard.md, "This wasn't me"): explains the notice's event, says what confirming does and
 * does not do, and on confirmation sends the token to `POST /users/not-me`. Works signed in or not, and never signs
 * anyone in; a session this browser had is ended with the others, so the dashboard asks the API again afterwards.
 */
export function NotMePage() {
  const [token] = useState(fromLink);
  const [outcome, setOutcome] = useState<Outcome | undefined>(undefined);
  const confirm = useAction(async () => {
    if (!token) return;
    const answer = await call(api.users["not-me"].$post({ json: { token } }), { quiet401: true });
    // The link has done its work; the token is not kept any longer than that.
    fromLink = undefined;
    setOutcome(answer);
    // This browser's session, if it had one, has just ended: the dashboard learns it before anything else is shown.
    await refreshSession();
  });

  if (outcome) return <Locked outcome={outcome} />;
  if (confirm.problem?.status === 400) return <BadLink />;
  if (!token) return <NoLink />;
  const event = readNoticeEvent(token);
  return (
    <Page title="Was this you?">
      <div class="narrow stack">
        <p>A security notice about your Herald account led you here. This is what it told you about:</p>
        <dl class="card account-facts" data-testid="not-me-event">
          <div>
            <dt>What</dt>
            <dd>{event.what}</dd>
          </div>
          <div>
            <dt>When</dt>
            <dd>{event.at === undefined ? "Not known" : WHEN.format(event.at)}</dd>
          </div>
          <div>
            <dt>Device</dt>
            <dd>{event.device ?? "Not known"}</dd>
          </div>
          <div>
            <dt>Place</dt>
            <dd>{event.place ?? "Not known"}</dd>
          </div>
        </dl>
        <p>If it was you, there is nothing to do: close this page.</p>
        <section class="card stack" aria-labelledby="not-me-confirm-heading">
          <h2 id="not-me-confirm-heading">If it was not you</h2>
          <p>Confirming locks your account against whoever did it:</p>
          <ul>
            <li>Every session and API token of your account ends at once, everywhere, including this browser's.</li>
            <li>Signing in with your password stops working until you set a new one with a passcode, which is e-mailed to you now.</li>
            <li>The owners of this Herald are told.</li>
          </ul>
          <p>
            It cannot undo what was already done. After you sign back in, check your passkeys, authenticator app, API tokens, devices and channels in
            Account, and remove any you do not know.
          </p>
          <ProblemAlert problem={confirm.problem} />
          <div class="row">
            <button
              type="button"
              class="button-primary"
              disabled={confirm.pending}
              onClick={() => {
                if (!confirm.pending) void confirm.run();
              }}
            >
              It wasn't me: lock my account
            </button>
            <a class="button" href={href("inbox")}>
              It was me
            </a>
          </div>
        </section>
      </div>
    </Page>
  );
}

/** Confirmed: what ended, and the way back in. */
function Locked({ outcome }: { outcome: Outcome }) {
  return (
    <Page title="Your account is locked">
      <div class="narrow stack" data-testid="not-me-done">
        <Notice>
          Ended {plural(outcome.revoked_sessions, "session", "sessions")} and {plural(outcome.revoked_tokens, "API token", "API tokens")}. Nobody is
          signed in to your account now, in this browser either.
        </Notice>
        <p>
          <strong>Check your e-mail for a passcode.</strong> It sets a new password: open the link in the e-mail, or enter the passcode on the reset
          page. Until then, signing in with your old password is refused. If you sign in through your organization's provider instead, secure that
          account there.
        </p>
        <p>
          <a class="button button-primary" href={`${href("reset-password")}?passcode=sent`}>
            Set a new password
          </a>
        </p>
        <p>
          Once you are back in, look through Account: remove any passkey, authenticator app or API token you do not know, and ask an owner of this
          Herald to look at what happened.
        </p>
      </div>
    </Page>
  );
}

/** The server refused the link (used, expired, forged): what to do instead. */
function BadLink() {
  return (
    <Page title="This link does not work">
      <div class="narrow stack" data-testid="not-me-bad-link">
        <div class="alert alert-error" role="alert">
          <strong>This link is not valid: it may have been used already or have expired.</strong> Each link works once, for 7 days.
        </div>
        <NextSteps />
      </div>
    </Page>
  );
}

/** Opened without a token (reloaded, or typed): the link from the notice is needed. */
function NoLink() {
  return (
    <Page title="Open the link from the notice">
      <div class="narrow stack" data-testid="not-me-no-link">
        <p>
          This page works from the <strong>This wasn't me</strong> link of a Herald security notice, and that link was not opened here (or the page
          was reloaded after it). Open the link from the e-mail or the inbox again.
        </p>
        <NextSteps />
      </div>
    </Page>
  );
}

function NextSteps() {
  return (
    <>
      <p>If your account was already locked with this link, check your e-mail for the passcode and set a new password.</p>
      <p>
        If you still think someone else is using your account, sign in and end its other sessions in Account, or set a new password with a passcode by
        e-mail.
      </p>
      <div class="row">
        <a class="button button-primary" href={`${href("reset-password")}`}>
          Reset your password
        </a>
        <a class="button" href={href("sign-in")}>
          Sign in
        </a>
      </div>
    </>
  );
}
