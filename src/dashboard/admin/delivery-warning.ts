/** A dispatch method other than the inbox, as `GET /notifications/dispatch-methods` names the default. */
type ExternalMethod = "smtp" | "webhook";

/** The fields of a logged message (GET /notifications/messages) the warning reads. */
interface LoggedMessage {
  status: string;
  status_reason: string;
  updated_at: string;
}

export interface DeliveryWarning {
  title: string;
  text: string;
  /** When the latest delivery failed: its message, whose time the page shows after `text`, then `after`. */
  latest?: { message: LoggedMessage; after: string };
}

const NAME: Record<ExternalMethod, { what: string; copies: string; variable: string }> = {
  smtp: { what: "E-mail", copies: "e-mail", variable: "EMAIL_SMARTHOST" },
  webhook: { what: "Webhook delivery", copies: "webhook", variable: "NOTIFICATIONS_WEBHOOK_URL" },
};

const FAILED = new Set(["temporary_failure", "permanent_failure"]);
const SETTLED = new Set(["sent", ...FAILED]);

/**
 * What the Notifier page warns about for the default method (docs/dashboard.md, "Pages"): that it is not configured,
 * else that its latest finished delivery failed. `recent` is the message log of that method, newest first. Nothing to
 * say when the latest delivery was sent or nothing was delivered yet.
 */
export function deliveryWarning(method: ExternalMethod, configured: boolean, recent: readonly LoggedMessage[]): DeliveryWarning | undefined {
  const name = NAME[method];
  if (!configured) {
    return {
      title: `${name.what} is not configured.`,
      text:
        method === "smtp"
          ? `No ${name.variable} is set, so the e-mail copy of every notification fails at once, password-reset passcodes included. Set ${name.variable} (with EMAIL_TLS and EMAIL_FROM) in the deployment's configuration.`
          : `No ${name.variable} is set, so every webhook copy fails. Set ${name.variable} in the deployment's configuration.`,
    };
  }
  const settled = recent.filter((m) => SETTLED.has(m.status));
  const latest = settled[0];
  if (!latest || !FAILED.has(latest.status)) return undefined;
  const failed = settled.filter((m) => FAILED.has(m.status)).length;
  const kind = latest.status === "permanent_failure" ? "failed for good" : "failed and will be retried";
  return {
    title: `${name.what} deliveries are failing.`,
    text: `${failed} of the last ${settled.length} finished ${name.copies} deliveries failed. The latest`,
    latest: { message: latest, after: `${kind}: ${latest.status_reason || "no reason recorded"}.` },
  };
}
