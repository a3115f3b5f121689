import { useEffect, useState } from "preact/hooks";
import { api, call } from "../api";
import { useAction } from "../ui/action";
import { Empty, Loading, Notice, ProblemAlert, Time } from "../ui/components";
import { loginTypeName } from "./labels";

type Session = Awaited<ReturnType<typeof loadSessions>>[number];

function loadSessions() {
  return call(api.users[":user"].keys.sessions.$get({ param: { user: "me" } }));
}

/**
 * The person's sign-ins (GET /users/{user}/keys/sessions, most recently used first; `current` marks this one). Others
 * can be ended one by one (DELETE /users/{user}/keys/{id}) or all at once, keeping this one (`except_current=true`).
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
      <p class="muted">Every place you are signed in to Herald. API tokens are listed apart, below.</p>
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
              <h3 class="key-name">
                {loginTypeName(session.login_type)} sign-in
                {session.current ? <span class="status status-current">This session</span> : null}
              </h3>
              <dl class="account-facts">
                <div>
                  <dt>Signed in</dt>
                  <dd>
                    <Time iso={session.created_at} />
                  </dd>
                </div>
                <div>
                  <dt>Last used</dt>
                  <dd>
                    <Time iso={session.last_used} />
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
