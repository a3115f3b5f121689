import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";
import type { WatchStatus } from "../client";
import { AccountPage } from "./account/account";
import { EnrolFactorPage } from "./account/enrol-factor";
import { PreferencesPage } from "./account/preferences";
import { AuditPage, mayReadAudit } from "./admin/audit";
import { AdminBroadcastsPage } from "./admin/broadcasts";
import { AdminMessagesPage } from "./admin/messages";
import { AdminNotifierPage } from "./admin/notifier";
import { AdminTemplatesPage } from "./admin/templates";
import { AdminUsersPage } from "./admin/users";
import { onSecondFactorRequired, onSignedOut, setStepUpPrompt } from "./api";
import { connection, startLive, stopLive, stoppedBecause, unreadCount } from "./inbox/live";
import { InboxPage } from "./inbox/page";
import { href, landAfterSignIn, navigate, navigateAfterSignIn, type Route, useRoute } from "./router";
import { isAdmin, type Me, refreshSession, session, signOut } from "./session";
import { NotMePage } from "./signin/not-me";
import { ResetPasswordPage } from "./signin/reset-password";
import { SecondFactorPage } from "./signin/second-factor";
import { SetupPage } from "./signin/setup";
import { SignInPage } from "./signin/sign-in";
import { promptStepUp, StepUpPrompt } from "./step-up";
import { Loading } from "./ui/components";
import { useStore } from "./ui/store";
import { asTheme, theme } from "./ui/theme";
import { Unreachable } from "./unreachable";

/** Pages anyone may open without a session. */
const PUBLIC: readonly Route[] = ["sign-in", "setup", "reset-password", "second-factor"];
/** The navigation after the Inbox: every signed-in person's pages, then the administration's (owners, user admins). */
const PAGES: readonly (readonly [Route, string])[] = [
  ["preferences", "Preferences"],
  ["account", "Account"],
];
const ADMIN_PAGES: readonly (readonly [Route, string])[] = [
  ["admin/users", "Users"],
  ["admin/notifier", "Notifier"],
  ["admin/templates", "Templates"],
  ["admin/messages", "Messages"],
  ["admin/broadcasts", "Broadcasts"],
];
const ADMIN: readonly Route[] = ADMIN_PAGES.map(([page]) => page);
/** The audit log: owners and auditors (docs/security.md, "The audit log"), whom the administration pages leave out. */
const AUDIT_PAGE = ["audit", "Audit log"] as const;

/** The pages of the navigation after the Inbox, for this person. */
function pagesFor(me: Me): readonly (readonly [Route, string])[] {
  return [...PAGES, ...(isAdmin(me) ? ADMIN_PAGES : []), ...(mayReadAudit(me) ? [AUDIT_PAGE] : [])];
}

export function App() {
  const state = useStore(session);
  const route = useRoute();

  useEffect(() => {
    void refreshSession();
    // A change that needs a recent sign-in asks for it in a prompt, from whatever page (docs/dashboard.md, "Step-up");
    // a role that needs a second factor first opens the enrolment page, which leads back here.
    setStepUpPrompt(promptStepUp);
    const stopFactor = onSecondFactorRequired(() => navigate("enrol-factor", { back: location.hash }));
    const stopSignedOut = onSignedOut(() => void refreshSession());
    return () => {
      setStepUpPrompt(undefined);
      stopFactor();
      stopSignedOut();
    };
  }, []);

  // Where each state may be: a fresh deployment only sets up, a signed-out person only signs in (or resets a
  // password), a signed-in one never sees those pages and lands on the inbox.
  useEffect(() => {
    // "This wasn't me" stays open in every state: it works signed in or not, and signs nobody in.
    if (route === "not-me") return;
    if (state.kind === "setup" && route !== "setup") navigate("setup");
    if (state.kind === "signed-out" && (route === undefined || !PUBLIC.includes(route) || route === "setup")) {
      // A link to the audit log (the "Account compromise reported" notice's) opens it, search and all, once signed in.
      if (route === "audit") landAfterSignIn(location.hash);
      navigate("sign-in");
    }
    if (state.kind === "signed-in") {
      if (route === undefined || PUBLIC.includes(route)) navigateAfterSignIn();
      else if (ADMIN.includes(route) && !isAdmin(state.me)) navigate("inbox");
      else if (route === "audit" && !mayReadAudit(state.me)) navigate("inbox");
    }
  }, [state, route]);

  // The live inbox runs while someone is signed in, on every page: the badge and the title follow it.
  const meId = state.kind === "signed-in" && route !== "not-me" ? state.me.id : undefined;
  useEffect(() => {
    if (meId === undefined) return;
    void startLive().catch(() => undefined);
    return stopLive;
  }, [meId]);

  // Shown alone, without the signed-in frame, whatever the session: confirming ends this browser's session too
  // (docs/dashboard.md, "This wasn't me").
  if (route === "not-me") {
    return (
      <Frame>
        <NotMePage />
      </Frame>
    );
  }
  if (state.kind === "loading") {
    return (
      <Frame>
        <Loading what="Herald" />
      </Frame>
    );
  }
  if (state.kind === "unreachable") {
    return (
      <Frame>
        <Unreachable problem={state.problem} attempt={state.attempt} />
      </Frame>
    );
  }
  if (state.kind === "setup") return <Frame>{<SetupPage />}</Frame>;
  if (state.kind === "signed-out") {
    return (
      <Frame>
        {route === "reset-password" ? (
          <ResetPasswordPage deliverable={state.methods.password.reset_passcode_deliverable} />
        ) : route === "second-factor" ? (
          <SecondFactorPage />
        ) : (
          <SignInPage methods={state.methods} />
        )}
      </Frame>
    );
  }
  return (
    <Frame me={state.me} route={route}>
      <SignedInPage route={route} me={state.me} />
      <StepUpPrompt me={state.me} />
    </Frame>
  );
}

function SignedInPage({ route, me }: { route: Route | undefined; me: Me }) {
  switch (route) {
    case "preferences":
      return <PreferencesPage me={me} />;
    case "account":
      return <AccountPage me={me} />;
    case "enrol-factor":
      return <EnrolFactorPage me={me} />;
    case "admin/users":
      return <AdminUsersPage me={me} />;
    case "admin/notifier":
      return <AdminNotifierPage me={me} />;
    case "admin/templates":
      return <AdminTemplatesPage me={me} />;
    case "admin/messages":
      return <AdminMessagesPage />;
    case "admin/broadcasts":
      return <AdminBroadcastsPage />;
    case "audit":
      return <AuditPage me={me} />;
    default:
      return <InboxPage me={me} />;
  }
}

/** The unread count in the tab's title, "(3) Inbox · Herald", for whatever page is open. */
function useTitleCount(count: number | undefined) {
  useEffect(() => {
    const base = document.title.replace(/^\(\d+\+?\) /, "");
    document.title = count ? `(${count > 99 ? "99+" : count}) ${base}` : base;
  });
}

/** While the watch is down after it was up, every page says so: what it shows may be behind (docs/dashboard.md#live). */
function OfflineBanner({ status }: { status: WatchStatus }) {
  const because = useStore(stoppedBecause);
  if (status !== "reconnecting" && status !== "stopped") return null;
  if (status === "stopped" && because === "replaced") {
    // Reconnecting by itself would push out another of the person's watches (docs/api.md, "Watching the inbox").
    return (
      <div class="offline-banner" role="status" data-testid="offline-banner">
        This tab stopped updating: too many Herald tabs or apps are open. Reload to resume.
      </div>
    );
  }
  return (
    <div class="offline-banner" role="status" data-testid="offline-banner">
      Offline — reconnecting. What you see may be out of date; it catches up by itself.
    </div>
  );
}

function Frame({ me, route, children }: { me?: Me; route?: Route | undefined; children: ComponentChildren }) {
  const unread = useStore(unreadCount);
  const status = useStore(connection);
  // On a narrow screen the navigation folds behind a Menu button; choosing a page folds it again.
  const [menuOpen, setMenuOpen] = useState(false);
  useEffect(() => setMenuOpen(false), [route]);
  useTitleCount(me ? unread : undefined);
  return (
    <>
      <a class="skip-link" href="#main">
        Skip to content
      </a>
      <header class={me ? "topbar signed-in" : "topbar"}>
        <a class="brand" href={me ? href("inbox") : href("sign-in")}>
          Herald
        </a>
        {me ? (
          <span class={`live live-${status}`} role="status" title="Live updates">
            {status === "open" ? "Live" : status === "stopped" ? "Offline" : "Connecting…"}
          </span>
        ) : null}
        {me ? (
          <button
            type="button"
            class="menu-toggle button-quiet"
            aria-expanded={menuOpen}
            aria-controls="topbar-menu"
            onClick={() => setMenuOpen(!menuOpen)}
          >
            Menu
          </button>
        ) : null}
        <div class={menuOpen ? "topbar-menu is-open" : "topbar-menu"} id="topbar-menu">
          {me ? (
            <nav aria-label="Main">
              <ul>
                <NavLink route="inbox" current={route}>
                  Inbox{" "}
                  {unread ? (
                    <span class="badge" data-testid="unread-badge">
                      {unread > 99 ? "99+" : unread}
                      <span class="visually-hidden"> unread</span>
                    </span>
                  ) : null}
                </NavLink>
                {pagesFor(me).map(([page, label]) => (
                  <NavLink key={page} route={page} current={route}>
                    {label}
                  </NavLink>
                ))}
              </ul>
            </nav>
          ) : null}
          <div class="topbar-end">
            <ThemePicker />
            {me ? (
              <button type="button" class="button-quiet" onClick={() => void signOut()}>
                Sign out
              </button>
            ) : null}
          </div>
        </div>
      </header>
      {me ? <OfflineBanner status={status} /> : null}
      <main id="main" tabIndex={-1}>
        {children}
      </main>
    </>
  );
}

function NavLink({ route, current, children }: { route: Route; current: Route | undefined; children: ComponentChildren }) {
  return (
    <li>
      <a href={href(route)} aria-current={route === current ? "page" : undefined}>
        {children}
      </a>
    </li>
  );
}

function ThemePicker() {
  const value = useStore(theme);
  return (
    <label class="theme-picker">
      <span class="visually-hidden">Theme</span>
      <select value={value} onChange={(event) => theme.set(asTheme(event.currentTarget.value))}>
        <option value="system">System theme</option>
        <option value="light">Light</option>
        <option value="dark">Dark</option>
      </select>
    </label>
  );
}
