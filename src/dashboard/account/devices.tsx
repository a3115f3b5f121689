import { useEffect, useState } from "preact/hooks";
import {
  loadPublicKey,
  loadSubscriptions,
  type PushSubscriptionInfo,
  pushSupported,
  removeSubscription,
  subscribeThisBrowser,
  thisBrowser,
} from "../push";
import { useAction } from "../ui/action";
import { Empty, Loading, Notice, ProblemAlert, Time } from "../ui/components";
import { ConfirmButton } from "./confirm";

/** The push services browsers use, by the host of their endpoint; any other shows its origin. */
const SERVICES: readonly (readonly [RegExp, string])[] = [
  [/^fcm\.googleapis\.com$/, "Google"],
  [/(^|\.)push\.services\.mozilla\.com$/, "Mozilla"],
  [/(^|\.)push\.apple\.com$/, "Apple"],
  [/(^|\.)notify\.windows\.com$/, "Microsoft"],
];

function serviceName(origin: string): string {
  const host = URL.parse(origin)?.hostname ?? "";
  return SERVICES.find(([pattern]) => pattern.test(host))?.[1] ?? origin;
}

/**
 * Account → Devices (docs/dashboard.md, "Devices"): the browsers that show the person's notifications as system
 * notifications (their Web Push subscriptions), each named and removable, and "Notify me on this browser". Which one is
 * this browser is known once the page subscribed it (src/dashboard/push.ts, `thisBrowser`).
 */
export function DevicesSection() {
  const [subscriptions, setSubscriptions] = useState<PushSubscriptionInfo[] | undefined>(undefined);
  /** undefined while loading; null when the deployment has no VAPID keys. */
  const [publicKey, setPublicKey] = useState<string | null | undefined>(undefined);
  const [current, setCurrent] = useState(thisBrowser);
  const [notice, setNotice] = useState("");
  const load = useAction(async () => {
    const [key, list] = await Promise.all([loadPublicKey(), loadSubscriptions()]);
    setPublicKey(key ?? null);
    setSubscriptions(list);
  });
  useEffect(() => void load.run(), [load.run]);

  const subscribe = useAction(async (key: string) => {
    setNotice("");
    const added = await subscribeThisBrowser(key);
    setCurrent(added.id);
    setSubscriptions((list) => [added, ...(list ?? []).filter((s) => s.id !== added.id)]);
    setNotice(`This browser will show your notifications, as “${added.name}”.`);
  });
  const remove = useAction(async (subscription: PushSubscriptionInfo) => {
    await removeSubscription(subscription.id);
    setCurrent(thisBrowser());
    setSubscriptions((list) => list?.filter((s) => s.id !== subscription.id));
    setNotice(`“${subscription.name}” will no longer show your notifications.`);
    document.getElementById("devices-heading")?.focus();
  });

  return (
    <section class="account-section" aria-labelledby="devices-heading" data-testid="devices">
      <div class="section-header">
        <h2 id="devices-heading" tabIndex={-1}>
          Devices
        </h2>
        {publicKey && pushSupported() && current === undefined ? (
          <button
            type="button"
            disabled={subscribe.pending}
            onClick={() => {
              if (!subscribe.pending) void subscribe.run(publicKey);
            }}
          >
            Notify me on this browser
          </button>
        ) : null}
      </div>
      <p class="muted">Browsers that show your notifications as system notifications, even while Herald is not open.</p>
      {publicKey === null ? <p data-testid="push-off">Push notifications are not set up on this Herald.</p> : null}
      {publicKey && !pushSupported() ? <p data-testid="push-unsupported">This browser cannot show push notifications.</p> : null}
      <ProblemAlert problem={load.problem ?? subscribe.problem ?? remove.problem} />
      {notice ? <Notice>{notice}</Notice> : null}
      {subscriptions === undefined ? (
        load.problem ? null : (
          <Loading what="devices" />
        )
      ) : subscriptions.length === 0 ? (
        <Empty>No browser shows your notifications yet.</Empty>
      ) : (
        <ul class="key-list">
          {subscriptions.map((subscription) => (
            <li key={subscription.id} class="card key-item" data-testid="device" data-id={subscription.id}>
              <h3 class="key-name">
                {subscription.name}
                {subscription.id === current ? <span class="status status-current">This browser</span> : null}
              </h3>
              <dl class="account-facts">
                <div>
                  <dt>Push service</dt>
                  <dd>{serviceName(subscription.endpoint_origin)}</dd>
                </div>
                <div>
                  <dt>Added</dt>
                  <dd>
                    <Time iso={subscription.created_at} />
                  </dd>
                </div>
              </dl>
              <div>
                <ConfirmButton
                  id={`remove-device-${subscription.id}`}
                  label="Remove"
                  name={`Remove ${subscription.name}`}
                  question="It will no longer show your notifications. Remove?"
                  about={subscription.name}
                  disabled={remove.pending}
                  onConfirm={() => void remove.run(subscription)}
                />
              </div>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
