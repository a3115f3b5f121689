import type { RenderedNotification } from "../render";
import { postJson } from "./post";
import { type DeliveryContext, DeliveryError } from "./types";

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

/**
 * The Standard Webhooks headers of one attempt: the message id as `webhook-id` (the same on every retry, so a receiver
 * drops a retry it already processed), the attempt's own timestamp, and the signature over both and the body. Used
 * for the deployment's webhook and for every user's own (docs/email.md, "Webhooks"; docs/targets.md).
 */
export async function signWebhook(headers: Headers, secret: string, id: string, body: string): Promise<void> {
  const timestamp = Math.floor(Date.now() / 1000);
  headers.set("webhook-id", id);
  headers.set("webhook-timestamp", String(timestamp));
  headers.set("webhook-signature", await standardWebhookSignature(secret, id, timestamp, body));
}

/**
 * Coder's webhook body (docs/api.md, "Message states, retries, webhooks and SMTP"), the one body of the deployment's
 * webhook and of a user's own. `type` marks a body that is not a notification: a target's verification message
 * (docs/targets.md, "Verification").
 */
export function webhookBody(messageId: string, payload: Record<string, unknown>, rendered: RenderedNotification, type?: string): string {
  return JSON.stringify({
    _version: "1.1",
    ...(type === undefined ? {} : { type }),
    msg_id: messageId,
    payload,
    title: rendered.title,
    title_markdown: rendered.titleMarkdown,
    body: rendered.body,
    body_markdown: rendered.bodyMarkdown,
  });
}

/**
 * POSTs Coder's webhook body with `X-Message-Id`, signed when a secret is configured (docs/email.md). The message id
 * is the `webhook-id` of every attempt, so receivers can drop a retry they already processed.
 */
export async function sendWebhook({ config, message, rendered, payload, deadline }: DeliveryContext): Promise<void> {
  const url = config.NOTIFICATIONS_WEBHOOK_URL;
  if (!url) throw new DeliveryError("webhook delivery is not configured (NOTIFICATIONS_WEBHOOK_URL)", false);
  const body = webhookBody(message.id, payload, rendered);
  const headers = new Headers({ "Content-Type": "application/json", "X-Message-Id": message.id });
  if (config.NOTIFICATIONS_WEBHOOK_SECRET) await signWebhook(headers, config.NOTIFICATIONS_WEBHOOK_SECRET, message.id, body);
  await postJson({
    url,
    body,
    headers,
    deadline,
    receiver: "webhook",
    redirectAdvice: "set NOTIFICATIONS_WEBHOOK_URL to the final URL",
  });
}
