import { type DeliveryContext, DeliveryError } from "./types";

const TIMEOUT_MS = 10_000;
const encoder = new TextEncoder();

/** Standard Webhooks: a `whsec_` secret is base64 key material; any other secret is used as its UTF-8 bytes. */
function secretBytes(secret: string): Uint8Array<ArrayBuffer> {
  if (secret.startsWith("whsec_")) return Uint8Array.from(atob(secret.slice(6)), (c) => c.charCodeAt(0));
  return Uint8Array.from(encoder.encode(secret));
}

export async function standardWebhookSignature(secret: string, id: string, timestamp: number, body: string): Promise<string> {
  const key = await crypto.subtle.importKey("raw", secretBytes(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, encoder.encode(`${id}.${timestamp}.${body}`)));
  return `v1,${btoa(String.fromCharCode(...mac))}`;
}

/** Network errors, timeouts, 408, 429 and 5xx are worth retrying; any other non-2xx is a permanent refusal. */
function retryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/**
 * POSTs Coder's webhook body with `X-Message-Id`, signed when a secret is configured (docs/email.md). The message id
 * is the `webhook-id` of every attempt, so receivers can drop a retry they already processed.
 */
export async function sendWebhook({ config, message, rendered, payload, deadline }: DeliveryContext): Promise<void> {
  const url = config.NOTIFICATIONS_WEBHOOK_URL;
  if (!url) throw new DeliveryError("webhook delivery is not configured (NOTIFICATIONS_WEBHOOK_URL)", false);
  const body = JSON.stringify({
    _version: "1.1",
    msg_id: message.id,
    payload,
    title: rendered.title,
    title_markdown: rendered.titleMarkdown,
    body: rendered.body,
    body_markdown: rendered.bodyMarkdown,
  });
  const headers = new Headers({ "Content-Type": "application/json", "X-Message-Id": message.id });
  if (config.NOTIFICATIONS_WEBHOOK_SECRET) {
    const timestamp = Math.floor(Date.now() / 1000);
    headers.set("webhook-id", message.id);
    headers.set("webhook-timestamp", String(timestamp));
    headers.set("webhook-signature", await standardWebhookSignature(config.NOTIFICATIONS_WEBHOOK_SECRET, message.id, timestamp, body));
  }
  let response: Response;
  try {
    // Never follow a redirect: fetch would turn the POST into a GET without the body and call it a success.
    response = await fetch(url, {
      method: "POST",
      headers,
      body,
      redirect: "manual",
      signal: AbortSignal.timeout(Math.max(1, Math.min(TIMEOUT_MS, deadline - Date.now()))),
    });
  } catch (error) {
    const reason = error instanceof Error && error.name === "TimeoutError" ? "timed out" : "could not connect";
    throw new DeliveryError(`webhook ${reason}`, true);
  }
  if (response.ok) {
    await response.body?.cancel();
    return;
  }
  if (response.status >= 300 && response.status < 400) {
    await response.body?.cancel();
    const location = response.headers.get("location");
    throw new DeliveryError(
      `webhook answered ${response.status} (a redirect${location ? ` to ${location.slice(0, 200)}` : ""}); redirects are not followed, set NOTIFICATIONS_WEBHOOK_URL to the final URL`,
      false,
    );
  }
  const excerpt = (await response.text().catch(() => "")).slice(0, 200);
  throw new DeliveryError(`webhook answered ${response.status}${excerpt ? `: ${excerpt}` : ""}`, retryableStatus(response.status));
}
