import { createECDH, randomBytes } from "node:crypto";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TEST_VAPID_KEYS } from "../fixtures/vars";
import { PushServiceStandIn } from "../peers/push-service";
import { browserAvailable, expectAccessible, launchBrowser, signInOnDashboard, trackRequests, watchConsole } from "./browser";
import { apiAs, freePort, type RunningHerald, startHerald } from "./herald";

// The dashboard as a Web Push client (docs/push.md, "The dashboard"), in a real Chromium against Herald started by
// npm start's machinery. A real push service cannot be reached from here (docs/testing.md, "The end-to-end suite"):
// the stand-in of test/peers/push-service.ts plays it. Herald pushes to the stand-in, which checks the VAPID token and
// decrypts the message with the browser's private key; what it decrypted is then delivered to Chromium's service
// worker through the DevTools protocol (`ServiceWorker.deliverPushMessage`), as the push service would deliver it.
// Chromium's own subscribe call needs its push service (Google's), so after the test of what Chromium answers here,
// `PushManager.subscribe` in the page answers the stand-in's subscription instead; everything after it is real.

const OWNER = { email: "ada@herald.test", username: "ada", password: "copper-meadow-lantern-81" };

let herald: RunningHerald;
let pushService: PushServiceStandIn;
let pushOrigin: string;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let problems: string[];
let requests: ReturnType<typeof trackRequests>;
let api: Awaited<ReturnType<typeof apiAs>>;

const poll = <T>(probe: () => T | Promise<T>) => expect.poll(probe, { timeout: 20_000, interval: 100 });

/** A browser's side of a subscription, made here as Chromium makes it: a P-256 key pair and a 16-byte auth secret. */
function browserKeys() {
  const ecdh = createECDH("prime256v1");
  ecdh.generateKeys();
  return {
    publicKey: ecdh.getPublicKey().toString("base64url"),
    privateKey: ecdh.getPrivateKey().toString("base64url"),
    auth: randomBytes(16).toString("base64url"),
  };
}

/**
 * Chromium's link to its push service, stood in for in the page: `subscribe()` answers a subscription at the stand-in
 * with `keys` (noting the application server key it was given), `getSubscription()` the current one, and
 * `unsubscribe()` ends it.
 */
async function standInForPushManager(keys: { endpoint: string; p256dh: string; auth: string }) {
  await page.evaluate((given) => {
    const seen = window as unknown as { subscribedWith?: string; unsubscribed?: boolean };
    let current: PushSubscription | null = null;
    PushManager.prototype.subscribe = async (options?: PushSubscriptionOptionsInit) => {
      const key = new Uint8Array(options?.applicationServerKey as ArrayBuffer | Uint8Array);
      seen.subscribedWith = btoa(String.fromCharCode(...key))
        .replace(/\+/g, "-")
        .replace(/\//g, "_")
        .replace(/=+$/, "");
      const subscription = {
        endpoint: given.endpoint,
        expirationTime: null,
        options: { applicationServerKey: key.buffer, userVisibleOnly: true },
        getKey: () => null,
        toJSON: () => ({ endpoint: given.endpoint, expirationTime: null, keys: { p256dh: given.p256dh, auth: given.auth } }),
        unsubscribe: async () => {
          current = null;
          seen.unsubscribed = true;
          return true;
        },
      };
      current = subscription as unknown as PushSubscription;
      return current;
    };
    PushManager.prototype.getSubscription = async () => current;
  }, keys);
}

const devices = () => page.getByTestId("devices");

beforeAll(async () => {
  pushService = new PushServiceStandIn(TEST_VAPID_KEYS.VAPID_PUBLIC_KEY);
  pushOrigin = await pushService.start();
  herald = await startHerald(await freePort(), { OUTBOUND_ALLOWED_ORIGINS: pushOrigin });
  const first = await fetch(`${herald.url}/api/v2/users/first`, { method: "POST", body: JSON.stringify(OWNER) });
  expect(first.status).toBe(201);
  await first.arrayBuffer();
  api = await apiAs(herald.url, OWNER);
  browser = await launchBrowser();
  context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  // What the person grants when the page asks (Notification.requestPermission()).
  await context.grantPermissions(["notifications"], { origin: herald.url });
  page = await context.newPage();
  problems = watchConsole(page);
  requests = trackRequests(page);
  await signInOnDashboard(page, herald.url, OWNER);
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await herald?.stop();
  await pushService?.stop();
});

describe.skipIf(!browserAvailable)('docs/push.md, "The dashboard"', () => {
  it("registers its service worker at the root, so its scope is the whole origin", async () => {
    const registration = await page.evaluate(async () => {
      const ready = await navigator.serviceWorker.ready;
      return { scope: ready.scope, script: ready.active?.scriptURL };
    });
    expect(registration).toEqual({ scope: `${herald.url}/`, script: `${herald.url}/sw.js` });
  });

  it("Account → Devices: says what Chromium answers when it cannot reach its push service, and stores nothing", async () => {
    await page.goto(`${herald.url}/#/account`);
    await page.getByRole("heading", { name: "Devices" }).waitFor();
    await poll(() => devices().getByText("No browser shows your notifications yet.").count()).toBe(1);
    await expectAccessible(page, "account with devices");
    await devices().getByRole("button", { name: "Notify me on this browser" }).click();
    await poll(() => devices().getByRole("alert").textContent()).toContain("This browser could not subscribe with its push service.");
    expect((await api("GET", "/users/me/push-subscriptions")).body).toEqual([]);
  });

  let token = "";
  let subscriptionId = "";

  it("subscribes with Herald's public key, names the browser, and lists it as this browser", async () => {
    const keys = browserKeys();
    const registered = pushService.register(keys);
    token = registered.token;
    await page.reload();
    await page.getByRole("heading", { name: "Devices" }).waitFor();
    await standInForPushManager({ endpoint: registered.endpoint, p256dh: keys.publicKey, auth: keys.auth });
    await devices().getByRole("button", { name: "Notify me on this browser" }).click();
    await poll(() => devices().getByTestId("device").count()).toBe(1);
    const item = devices().getByTestId("device");
    expect(await item.getByText("This browser").count()).toBe(1);
    expect(await item.getByRole("heading").textContent()).toMatch(/^Chrome \d+ on Linux/);
    expect(await page.evaluate(() => (window as unknown as { subscribedWith?: string }).subscribedWith)).toBe(TEST_VAPID_KEYS.VAPID_PUBLIC_KEY);
    expect(await devices().getByRole("button", { name: "Notify me on this browser" }).count()).toBe(0);
    const listed = (await api("GET", "/users/me/push-subscriptions")).body as unknown as { id: string; endpoint_origin: string }[];
    expect(listed.map((s) => s.endpoint_origin)).toEqual([new URL(registered.endpoint).origin]);
    subscriptionId = listed[0]?.id ?? "";
    expect(await item.getAttribute("data-id")).toBe(subscriptionId);
    await expectAccessible(page, "devices with this browser");
    // A new place the notifications go is announced (docs/security.md, "Security notices"), to this browser as well.
    await poll(() => pushService.received(token).length).toBe(1);
    expect(JSON.parse(pushService.received(token)[0]?.payload ?? "{}")).toMatchObject({ title: "A notification channel was added to your account" });
  });

  let pushed: { id: string; title: string; body: string; url: string; created_at: string };

  it("a notification reaches the push service, decrypted there with the browser's key, and shows as a system notification", async () => {
    const sent = await api("POST", "/notifications/custom", { content: { title: "Deploy finished", message: "**prod** is on v42." } });
    expect(sent.status).toBe(204);
    await poll(() => pushService.received(token).length).toBe(2);
    const received = pushService.received(token)[1];
    expect(received?.problem).toBeNull();
    expect(received?.vapid?.aud).toBe(pushOrigin);
    expect(received?.headers).toMatchObject({ ttl: "86400", urgency: "normal", contentEncoding: "aes128gcm" });
    pushed = JSON.parse(received?.payload ?? "");
    expect(pushed).toMatchObject({ title: "Deploy finished", body: "prod is on v42.", url: `${herald.url}/#/inbox?item=${pushed.id}` });

    const cdp = await context.newCDPSession(page);
    const registrationId = new Promise<string>((resolve) => {
      cdp.on("ServiceWorker.workerRegistrationUpdated", ({ registrations }) => {
        const ours = registrations.find((r) => r.scopeURL === `${herald.url}/` && !r.isDeleted);
        if (ours) resolve(ours.registrationId);
      });
    });
    await cdp.send("ServiceWorker.enable");
    await cdp.send("ServiceWorker.deliverPushMessage", { origin: herald.url, registrationId: await registrationId, data: received?.payload ?? "" });
    const shown = () =>
      page.evaluate(async () =>
        (await (await navigator.serviceWorker.ready).getNotifications()).map((n) => ({
          title: n.title,
          body: n.body,
          icon: n.icon,
          tag: n.tag,
          data: n.data,
        })),
      );
    await poll(async () => (await shown()).length).toBe(1);
    const [notification] = await shown();
    expect(notification).toEqual({
      title: "Deploy finished",
      body: "prod is on v42.",
      icon: expect.stringMatching(new RegExp(`^${herald.url}/assets/herald-icon-[0-9a-f]{10}\\.png$`)),
      tag: pushed.id,
      data: { url: pushed.url },
    });
    // The icon the notification names is served.
    expect((await fetch(notification?.icon ?? "")).headers.get("Content-Type")).toBe("image/png");
    await cdp.detach();
  });

  it("a click opens the item in the dashboard window that is open, focused in the inbox", async () => {
    await page.goto(`${herald.url}/#/account`);
    await page.getByRole("heading", { name: "Devices" }).waitFor();
    // No driver can click a system notification (headless Chromium shows none on a screen): the click is the worker's
    // own notificationclick event, dispatched in the worker with the notification it showed.
    const [worker] = context.serviceWorkers();
    await worker?.evaluate(async () => {
      // The worker's global scope, named as far as this needs it (the suite's types are the page's, not a worker's).
      const scope = self as unknown as {
        registration: ServiceWorkerRegistration;
        dispatchEvent(event: Event): boolean;
        NotificationEvent: new (type: string, init: { notification: Notification }) => Event;
      };
      const [notification] = await scope.registration.getNotifications();
      if (notification) scope.dispatchEvent(new scope.NotificationEvent("notificationclick", { notification }));
    });
    await poll(() => page.evaluate(() => location.hash)).toBe(`#/inbox?item=${pushed.id}`);
    await poll(() => page.evaluate(() => document.activeElement?.getAttribute("data-id"))).toBe(pushed.id);
    expect(await page.evaluate(async () => (await (await navigator.serviceWorker.ready).getNotifications()).length)).toBe(0);
  });

  it("Remove ends the subscription in Herald and in the browser", async () => {
    await page.goto(`${herald.url}/#/account`);
    await page.getByRole("heading", { name: "Devices" }).waitFor();
    await poll(() => devices().getByTestId("device").count()).toBe(1);
    await devices()
      .getByRole("button", { name: /^Remove Chrome/ })
      .click();
    await devices().getByRole("button", { name: "Yes" }).click();
    await poll(() => devices().getByText("No browser shows your notifications yet.").count()).toBe(1);
    expect((await api("GET", "/users/me/push-subscriptions")).body).toEqual([]);
    // The page subscribed this browser earlier in its life, so it knows the entry was this browser's, and ends that too.
    expect(await page.evaluate(() => (window as unknown as { unsubscribed?: boolean }).unsubscribed)).toBe(true);
    expect(subscriptionId).not.toBe("");
    expect(problems).toEqual([]);
    expect(requests.pending()).toEqual([]);
  });
});
