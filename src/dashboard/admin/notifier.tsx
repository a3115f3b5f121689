import { useEffect, useState } from "preact/hooks";
import { ApiProblem, api, call } from "../api";
import { href } from "../router";
import { isOwner, type Me } from "../session";
import { useAction } from "../ui/action";
import { Loading, Notice, Page, ProblemAlert, Time, Warning } from "../ui/components";
import "./admin.css";
import { type DeliveryWarning, deliveryWarning } from "./delivery-warning";

type Methods = Awaited<ReturnType<typeof loadMethods>>;

function loadSettings() {
  return call(api.notifications.settings.$get());
}

function loadMethods() {
  return call(api.notifications["dispatch-methods"].$get());
}

/** How many of the default method's latest messages the warning looks at. */
const RECENT = 20;

/**
 * Whether the default method can deliver (docs/dashboard.md, "Pages"): configured, and its latest delivery not a
 * failure. Owners only: the configuration flags are read `deployment_config` and the message log is the owner's
 * (docs/authorization.md); a user-admin sees no warning.
 */
async function loadWarning(method: "smtp" | "webhook"): Promise<DeliveryWarning | undefined> {
  const [configured, log] = await Promise.all([
    call(api.notifications["dispatch-methods"].configured.$get()),
    call(api.notifications.messages.$get({ query: { method, limit: String(RECENT) } })),
  ]);
  return deliveryWarning(method, configured[method], log.messages);
}

/** The notifier's one switch needs `deployment_config` update, which owners alone hold (docs/authorization.md). */
const OWNERS_ONLY = "Only owners can pause or resume delivery. You can see whether it is running.";

/**
 * The notifier (docs/api.md, "Pausing"): whether delivery runs, the switch that pauses and resumes it (owners), the
 * dispatch methods, and the test notification (owners: POST /notifications/test sends the Test Notification to the
 * caller).
 */
export function AdminNotifierPage({ me }: { me: Me }) {
  const owner = isOwner(me);
  const [paused, setPaused] = useState<boolean | undefined>(undefined);
  const [methods, setMethods] = useState<Methods | undefined>(undefined);
  const [warning, setWarning] = useState<DeliveryWarning | undefined>(undefined);
  const [notice, setNotice] = useState("");

  const load = useAction(async () => {
    const [settings, available] = await Promise.all([loadSettings(), loadMethods()]);
    setPaused(settings.notifier_paused);
    setMethods(available);
    const method = available[0]?.default;
    if (owner && method) setWarning(await loadWarning(method));
  });
  const toggle = useAction(async (pause: boolean) => {
    setNotice("");
    try {
      setPaused((await call(api.notifications.settings.$put({ json: { notifier_paused: pause } }))).notifier_paused);
    } catch (error) {
      // 304: someone else already set it this way; show what is stored now.
      if (!(error instanceof ApiProblem && error.status === 304)) throw error;
      setPaused((await loadSettings()).notifier_paused);
    }
    setNotice(
      pause ? "Delivery paused. New notifications wait until it resumes." : "Delivery resumed. Everything that waited is being sent, oldest first.",
    );
  });
  const test = useAction(async () => {
    setNotice("");
    await call(api.notifications.test.$post());
    setNotice("Test notification sent. It arrives in your inbox, and by the default method unless delivery is paused.");
  });

  useEffect(() => {
    void load.run();
  }, []);

  return (
    <Page title="Notifier">
      <ProblemAlert problem={load.problem} />
      {warning ? (
        <Warning title={warning.title} testId="delivery-warning">
          {warning.text}
          {warning.latest ? (
            <>
              {" "}
              (<Time iso={warning.latest.message.updated_at} />) {warning.latest.after} <a href={href("admin/messages")}>The message log</a> has each
              one.
            </>
          ) : null}
        </Warning>
      ) : null}
      {notice ? <Notice>{notice}</Notice> : null}
      <section class="admin-section card" aria-labelledby="delivery-heading">
        <h2 id="delivery-heading">Delivery</h2>
        {paused === undefined ? (
          load.pending ? (
            <Loading what="the notifier's state" />
          ) : null
        ) : (
          <>
            <p class={`state ${paused ? "state-paused" : "state-running"}`} data-testid="notifier-state" data-paused={String(paused)}>
              {paused ? "Delivery is paused" : "Delivery is running"}
            </p>
            <p class="hint">
              Pausing stops every delivery, the inbox included. Notifications are still recorded and wait as pending; resuming sends everything that
              waited, oldest first.
            </p>
            <ProblemAlert problem={toggle.problem} />
            {owner ? (
              <button
                type="button"
                class={paused ? "button-primary" : "button-danger"}
                data-testid="notifier-toggle"
                disabled={toggle.pending}
                onClick={() => void toggle.run(!paused)}
              >
                {paused ? "Resume delivery" : "Pause delivery"}
              </button>
            ) : (
              <p data-testid="notifier-read-only">{OWNERS_ONLY}</p>
            )}
          </>
        )}
      </section>
      <section class="admin-section card" aria-labelledby="methods-heading">
        <h2 id="methods-heading">Dispatch methods</h2>
        {methods === undefined ? null : (
          <dl class="facts" data-testid="dispatch-methods">
            {methods.map((entry) => [
              <dt key="available">Available</dt>,
              <dd key="available-value">{entry.available.join(", ")}</dd>,
              <dt key="default">Default</dt>,
              <dd key="default-value">{entry.default}</dd>,
            ])}
          </dl>
        )}
        <p class="hint">
          Every notification goes to the inbox and by one external method: its template's, or the default. The default is set by the deployment
          (NOTIFICATIONS_METHOD).
        </p>
      </section>
      <section class="admin-section card" aria-labelledby="test-heading">
        <h2 id="test-heading">Test notification</h2>
        <p>Sends the Test Notification to you, to check that delivery works end to end.</p>
        <ProblemAlert problem={test.problem} />
        {owner ? (
          <button type="button" disabled={test.pending} onClick={() => void test.run()}>
            {test.pending ? "Sending…" : "Send a test notification"}
          </button>
        ) : (
          <p>Only owners can send the test notification.</p>
        )}
      </section>
    </Page>
  );
}
