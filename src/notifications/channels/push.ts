import { and, eq } from "drizzle-orm";
import { systemAuditInsert } from "../../audit/log";
import { database } from "../../db/client";
import { pushSubscriptions } from "../../db/schema";
import { checkOutboundUrl } from "../../outbound/allow-list";
import { encodePayload, inboxItemUrl, pushRequest } from "../../push/message";
import { PushMessages } from "../../push/messages";
import { VapidKeyError, vapidSigner } from "../../push/vapid";
import { type DeliveryContext, DeliveryError } from "./types";

const TIMEOUT_MS = 10_000;
/** The longest `Retry-After` honoured: a push service asking for more is retried on the usual backoff. */
const RETRY_AFTER_MAX_MS = 60 * 60 * 1000;

/** `Retry-After` in seconds or as an HTTP date, in ms from now; undefined when absent or unreadable. */
function retryAfterMs(header: string | null): number | undefined {
  if (header === null) return undefined;
  const ms = /^\d+$/.test(header.trim()) ? Number(header.trim()) * 1000 : Date.parse(header) - Date.now();
  return Number.isFinite(ms) && ms > 0 ? Math.min(ms, RETRY_AFTER_MAX_MS) : undefined;
}

/**
 * One copy to one browser (docs/push.md, "Delivery"): the message row's `destination` names the subscription. A
 * push service's 201 (any 2xx) is sent; 404 and 410 mean the subscription is gone for good, so it is removed and the
 * copy fails for good; 408, 429 (after its `Retry-After`), 5xx and network trouble are retried; any other answer,
 * a redirect included (never followed), is a permanent failure with its status.
 */
export async function sendPush({ env, config, message, template, rendered, deadline }: DeliveryContext): Promise<void> {
  const pending = vapidSigner(config);
  if (!pending) throw new DeliveryError(PushMessages.deliveryNotConfigured, false);
  const signer = await pending.catch((error: unknown) => {
    throw error instanceof VapidKeyError ? new DeliveryError(error.message, false) : error;
  });
  const db = database(env.DB);
  const which = and(eq(pushSubscriptions.id, message.destination ?? ""), eq(pushSubscriptions.userId, message.userId));
  const [subscription] = await db.select().from(pushSubscriptions).where(which).limit(1);
  if (!subscription) throw new DeliveryError(PushMessages.subscriptionRemoved, false);
  // Checked again at each send: the allow-list may have changed since the browser subscribed.
  const allowed = checkOutboundUrl("push", subscription.endpoint, config.OUTBOUND_ALLOWED_ORIGINS);
  if (!allowed.ok) throw new DeliveryError(`the push endpoint is no longer allowed: it ${allowed.reason}`, false);

  const payload = encodePayload({
    id: message.notificationId,
    title: rendered.title,
    body: rendered.body,
    url: inboxItemUrl(config.origin, message.notificationId),
    created_at: message.createdAt,
  });
  const request = await pushRequest(signer, subscription, payload, template.mandatory ? "high" : "normal");
  let response: Response;
  try {
    response = await fetch(request.url, {
      method: "POST",
      headers: request.headers,
      body: request.body,
      redirect: "manual",
      signal: AbortSignal.timeout(Math.max(1, Math.min(TIMEOUT_MS, deadline - Date.now()))),
    });
  } catch (error) {
    const reason = error instanceof Error && error.name === "TimeoutError" ? "timed out" : "could not connect";
    throw new DeliveryError(`push service ${reason}`, true);
  }
  if (response.ok) {
    await response.body?.cancel();
    return;
  }
  const excerpt = (await response.text().catch(() => "")).slice(0, 200);
  const status = response.status;
  if (status === 404 || status === 410) {
    await db.batch([
      db.delete(pushSubscriptions).where(which),
      systemAuditInsert(db, {
        action: "expire",
        resourceType: "push_subscription",
        resourceId: subscription.id,
        diff: { owner: subscription.userId, name: subscription.name, status },
      }),
    ]);
    throw new DeliveryError(PushMessages.subscriptionGone(status), false);
  }
  const said = `push service answered ${status}${excerpt ? `: ${excerpt}` : ""}`;
  if (status === 408 || status === 429 || status >= 500) throw new DeliveryError(said, true, retryAfterMs(response.headers.get("Retry-After")));
  throw new DeliveryError(status >= 300 && status < 400 ? `${said} (a redirect, not followed)` : said, false);
}
