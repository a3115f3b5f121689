import { ApiProblem, api, call } from "./api";

/**
 * The dashboard as a Web Push client (docs/push.md, "The dashboard"): its service worker (`/sw.js`, src/sw/sw.ts),
 * and subscribing this browser with the deployment's VAPID public key.
 */

export type PushSubscriptionInfo = Awaited<ReturnType<typeof loadSubscriptions>>[number];

/**
 * Herald's id of this browser's subscription, once this page subscribed it: Herald shows no endpoint, so a list read
 * later cannot tell which entry is this browser. Kept for the life of the page, never stored.
 */
let thisBrowserId: string | undefined;
export const thisBrowser = (): string | undefined => thisBrowserId;

/** Whether this browser can take push messages at all: a service worker, the Push API and notifications. */
export function pushSupported(): boolean {
  return "serviceWorker" in navigator && "PushManager" in window && "Notification" in window;
}

/**
 * Registers the service worker, at the root so its scope is the whole origin, and follows its word when a notification
 * is clicked while the dashboard is open: the worker says where to go (the item), the page goes there. Only an
 * address of this origin is followed.
 */
export function startServiceWorker(): void {
  if (!("serviceWorker" in navigator)) return;
  navigator.serviceWorker.addEventListener("message", (event: MessageEvent<unknown>) => {
    const data = event.data as { type?: unknown; url?: unknown } | null;
    if (data?.type !== "herald.open" || typeof data.url !== "string") return;
    const target = URL.parse(data.url, location.href);
    if (target?.origin === location.origin) location.assign(target.href);
  });
  navigator.serviceWorker.register("/sw.js").catch(() => undefined);
}

export function loadSubscriptions() {
  return call(api.users[":user"]["push-subscriptions"].$get({ param: { user: "me" } }));
}

/** The VAPID public key, or undefined when the deployment has none (push is off: the API answers 404). */
export async function loadPublicKey(): Promise<string | undefined> {
  try {
    return (await call(api.notifications.push["public-key"].$get())).public_key;
  } catch (error) {
    if (error instanceof ApiProblem && error.status === 404) return undefined;
    throw error;
  }
}

function keyBytes(base64url: string): Uint8Array<ArrayBuffer> {
  const binary = atob(base64url.replace(/-/g, "+").replace(/_/g, "/"));
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

const sameKey = (a: ArrayBuffer | null, b: Uint8Array) =>
  a !== null && a.byteLength === b.byteLength && new Uint8Array(a).every((x, i) => x === b[i]);

/** What a refusal of the browser's own says, in the dashboard's words. */
function browserProblem(message: string, error: unknown): ApiProblem {
  return new ApiProblem(0, message, error instanceof Error && error.message ? error.message : undefined);
}

/**
 * Subscribes this browser and gives the subscription to Herald: asks for permission to show notifications, subscribes
 * with the public key (reusing a subscription the browser already has for it), and POSTs it. Herald answers an
 * endpoint it already has with that subscription, so asking twice makes one.
 */
export async function subscribeThisBrowser(publicKey: string): Promise<PushSubscriptionInfo> {
  const permission = await Notification.requestPermission();
  if (permission !== "granted") {
    throw new ApiProblem(0, "Notifications are blocked for Herald in this browser.", "Allow them in the browser's site settings, then try again.");
  }
  const registration = await navigator.serviceWorker.register("/sw.js").then(() => navigator.serviceWorker.ready);
  const key = keyBytes(publicKey);
  let subscription = await registration.pushManager.getSubscription();
  // Made for another key (the deployment's keys changed): no push signed with the new one would reach it.
  if (subscription && !sameKey(subscription.options.applicationServerKey, key)) {
    await subscription.unsubscribe();
    subscription = null;
  }
  if (!subscription) {
    try {
      subscription = await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key });
    } catch (error) {
      throw browserProblem("This browser could not subscribe with its push service.", error);
    }
  }
  const { endpoint, keys } = subscription.toJSON();
  if (!endpoint || !keys?.p256dh || !keys.auth) throw new ApiProblem(0, "This browser gave an incomplete subscription.");
  const added = await call(
    api.users[":user"]["push-subscriptions"].$post({ param: { user: "me" }, json: { endpoint, keys: { p256dh: keys.p256dh, auth: keys.auth } } }),
  );
  thisBrowserId = added.id;
  return added;
}

/** Removes a subscription from Herald; when it is this browser's, the browser's subscription ends too. */
export async function removeSubscription(id: string): Promise<void> {
  await call(api.users[":user"]["push-subscriptions"][":id"].$delete({ param: { user: "me", id } }));
  if (id !== thisBrowserId || !("serviceWorker" in navigator)) return;
  thisBrowserId = undefined;
  const registration = await navigator.serviceWorker.getRegistration();
  await (await registration?.pushManager.getSubscription())?.unsubscribe();
}
