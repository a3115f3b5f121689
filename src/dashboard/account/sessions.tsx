import { useEffect, useState } from "preact/hooks";
import { api, call } from "../api";
import { useAction } from "../ui/action";
import { Empty, Loading, Notice, ProblemAlert, Time } from "../ui/components";
import { loginTypeName } from "./labels";

type Session = Awaited<ReturnType<typeof loadSessions>>[number];

const REGIONS = new Intl.DisplayNames(undefined, { type: "region" });

/** A country's name in the person's language, from its ISO code; the code itself when the browser has no name for it. */
function countryName(code: string): string {
  try {
    return REGIONS.of(code) ?? code;
  } catch {
    return code;
  }
}

/** The User-Agent, shortened, for a session whose device Herald could not name. */
const SHORT_AGENT = 60;

/**
 * What started the session, as a person reads it: the device Herald named ("Chrome 131 on macOS"), else the raw
 * User-Agent cut short (the whole one in the tooltip), else that it is not known.
 */
function sessionDevice(session: Pick<Session, "device" | "user_agent">): string {
  if (session.device) return session.device;
  const agent = session.user_agent?.trim();
  if (!agent) return "Unknown device";
  return agent.length > SHORT_AGENT ? `${agent.slice(0, SHORT_AGENT - 1)}…` : agent;
}

/** "Amsterdam, Netherlands · 203.0.113.0/24"; "Unknown place" when neither Cloudflare nor the address says. */
function sessionPlace(session: Pick<Session, "location" | "ip_prefix">): string {
  const where = session.location ? [session.location.city, countryName(session.location.country)].filter(Boolean).join(", ") : "";
  return [where, session.ip_prefix].filter(Boolean).join(" · ") || "Unknown place";
}

/** How the person proved it was them, by the names RFC 8176 gives (`methods` of GET /users/{user}/keys/sessions). */
const METHODS: Record<string, string> = {
  pwd: "Password",
  otp: "One-time code",
  passkey: "Passkey",
  oidc: "OpenID Connect",
  github: "GitHub",
};

function methodNames(session: Pick<Session, "methods" | "login_type">): string {
  if (session.methods.length === 0) return loginTypeName(session.login_type);
  return session.methods.map((method) => METHODS[method] ?? method).join(", ");
}

function loadSessions() {
  return call(api.users[":user"].keys.sessions.$get({ param: { user: "me" } }));
}

/**
 * The person's sign-ins (GET /users/{user}/keys/sessions, most recently used first; `current` marks this browser's),
 * each with the device and place that started it (docs/dashboard.md, "Sessions"). Others can be ended one by one
 * (DELETE /users/{user}/keys/{id}) or all at once, keeping this one (`except_current=true`); both ask to confirm it is
 * you when the sign-in is old (the API layer's step-up prompt).
 */
export function SessionsSection({ version }: { version: number }) {
  const [sessions, setSessions] = useState<Session[] | undefined>(undefined);
  const [notice, setNotice] = useState("");
  const load = useAction(async () => setSessions(await loadSessions()));
  useEffect(() => void load.run(), [version, load.run]);

  const endOthers = useAction(async () => {
    await call(api.users[":user"].keys.sessions.$delete({ param: { user: "me" }, query: { except_current: "true" } }));
    setNotice("Signed out everywhere else.");
    await load.run();
  });
  const endOne = useAction(async (session: Session) => {
    await call(api.users[":user"].keys[":id"].$delete({ param: { user: "me", id: session.id } }));
    setNotice("Session ended.");
    setSessions((list) => list?.filter((s) => s.id !== session.id));
    document.getElementById("sessions-heading")?.focus();
  });

  const others = sessions?.filter((s) => !s.current).length ?? 0;
  return (
    <section class="account-section" aria-labelledby="sessions-heading">
      <div class="section-header">
        <h2 id="sessions-heading" tabIndex={-1}>
          Sessions
        </h2>
        {others > 0 ? (
          <button
            type="button"
            onClick={() => {
              if (!endOthers.pending) void endOthers.run();
            }}
          >
            Sign out everywhere else
          </button>
        ) : null}
      </div>
      <p class="muted">
        Every place you are signed in to Herald, with the device and place that signed in. One you do not know: end it, and change your password. API
        tokens are listed apart, below.
      </p>
      <ProblemAlert problem={load.problem ?? endOthers.problem ?? endOne.problem} />
      {notice ? <Notice>{notice}</Notice> : null}
      {sessions === undefined ? (
        load.problem ? null : (
          <Loading what="sessions" />
        )
      ) : sessions.length === 0 ? (
        <Empty>No sessions.</Empty>
      ) : (
        <ul class="key-list">
          {sessions.map((session) => (
            <li key={session.id} class="card key-item" data-testid="session" data-current={session.current ? "true" : "false"}>
              <h3 class="key-name" title={session.user_agent ?? undefined}>
                {sessionDevice(session)}
                {session.current ? <span class="status status-current">This browser</span> : null}
              </h3>
              <dl class="account-facts">
                <div>
                  <dt>Place</dt>
                  <dd>{sessionPlace(session)}</dd>
                </div>
                <div>
                  <dt>Signed in with</dt>
                  <dd>{methodNames(session)}</dd>
                </div>
                <div>
                  <dt>Last used</dt>
                  <dd>
                    <Time iso={session.last_used} />
                  </dd>
                </div>
                <div>
                  <dt>Signed in</dt>
                  <dd>
                    <Time iso={session.created_at} />
                  </dd>
                </div>
                <div>
                  <dt>Expires</dt>
                  <dd>
                    <Time iso={session.expires_at} />
                  </dd>
                </div>
              </dl>
              {session.current ? null : (
                <div>
                  <button
                    type="button"
                    class="button-danger"
                    aria-label={`End session on ${sessionDevice(session)}`}
                    onClick={() => {
                      if (!endOne.pending) void endOne.run(session);
                    }}
                  >
                    End session
                  </button>
                </div>
              )}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
