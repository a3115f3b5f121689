import { encryptPayload, fromBase64url, MAX_PLAINTEXT_BYTES } from "./encryption";
import type { VapidSigner } from "./vapid";

/**
 * One push message as it leaves Herald (docs/push.md, "What a push carries"): the JSON the service worker shows,
 * encrypted to the browser, with the headers RFC 8030 and RFC 8292 ask for.
 */

/** What the service worker receives, once decrypted: the inbox item, as a system notification can show it. */
export interface PushPayload {
  /** The notification's id, which is its inbox item's. */
  id: string;
  title: string;
  body: string;
  /** Where a click goes: the item in the dashboard's inbox. */
  url: string;
  created_at: string;
}

/** How long a push service keeps a message for a browser that is offline (RFC 8030, section 5.2): a day. */
export const PUSH_TTL_S = 86_400;
/** A title longer than a system notification shows is cut here, so the body keeps its share of the 4 KiB. */
const TITLE_MAX = 200;

/**
 * The item in the dashboard's inbox: the inbox, with that item in view and focused (docs/push.md, "What a push
 * carries"). Every push copy has an item: external-only templates are never pushed (docs/channels.md).
 */
export function inboxItemUrl(origin: string, id: string): string {
  return `${origin}/#/inbox?item=${encodeURIComponent(id)}`;
}

/**
 * The payload as UTF-8 JSON within what one push message holds (3,993 bytes): the title is cut to 200 characters
 * and the body to the longest start that fits, each ending in "…" when cut.
 */
export function encodePayload(payload: PushPayload): Uint8Array {
  const encoder = new TextEncoder();
  const title = [...payload.title].length > TITLE_MAX ? `${[...payload.title].slice(0, TITLE_MAX).join("")}…` : payload.title;
  const encode = (body: string) => encoder.encode(JSON.stringify({ ...payload, title, body }));
  const whole = encode(payload.body);
  if (whole.byteLength <= MAX_PLAINTEXT_BYTES) return whole;
  // JSON escapes make a character's share of the message vary, so the longest start that fits is searched for; the
  // title, the URL and the rest are bounded well below the limit, so an empty body always fits.
  const chars = [...payload.body];
  let fits = 0;
  let over = chars.length;
  while (over - fits > 1) {
    const middle = Math.floor((fits + over) / 2);
    if (encode(`${chars.slice(0, middle).join("")}…`).byteLength <= MAX_PLAINTEXT_BYTES) fits = middle;
    else over = middle;
  }
  const cut = encode(`${chars.slice(0, fits).join("")}…`);
  if (cut.byteLength > MAX_PLAINTEXT_BYTES) throw new RangeError("the push payload does not fit even without its body");
  return cut;
}

/** A subscription as delivery needs it: where to, and the browser's keys as it gave them (base64url). */
export interface PushDestination {
  endpoint: string;
  p256dh: string;
  auth: string;
}

/**
 * The request for one push: the payload encrypted to the subscription (src/push/encryption.ts), `TTL` a day,
 * `Urgency: high` for mandatory templates (passcodes, security notices) and `normal` otherwise, and the VAPID
 * `Authorization` for the endpoint's origin.
 */
export async function pushRequest(
  signer: VapidSigner,
  destination: PushDestination,
  payload: Uint8Array,
  urgency: "high" | "normal",
): Promise<{ url: URL; headers: Headers; body: Uint8Array<ArrayBuffer> }> {
  const url = new URL(destination.endpoint);
  const p256dh = fromBase64url(destination.p256dh);
  const auth = fromBase64url(destination.auth);
  if (!p256dh || !auth) throw new TypeError("the subscription's keys are not base64url");
  const [body, authorization] = await Promise.all([encryptPayload(payload, { p256dh, auth }), signer.authorization(url.origin)]);
  const headers = new Headers({
    "Content-Type": "application/octet-stream",
    "Content-Encoding": "aes128gcm",
    TTL: String(PUSH_TTL_S),
    Urgency: urgency,
    Authorization: authorization,
  });
  return { url, headers, body };
}
