/**
 * The dashboard's service worker, served at `/sw.js` so its scope is the whole origin (docs/push.md, "The
 * dashboard"). It does one thing: show each Web Push message as a system notification, and on a click open the item
 * it is about. It has no fetch handler, so it never stands between the dashboard and the network.
 */
// A module, so that `self` below is this file's name for the global scope, typed as a service worker's.
export {};

declare const self: ServiceWorkerGlobalScope;

/** The Herald icon's hashed address, written in by the build (scripts/build-ui.mjs). */
declare const HERALD_ICON: string;

/** What Herald pushes (src/push/message.ts, `PushPayload`), as far as this worker needs it. */
interface Pushed {
  id: string;
  title: string;
  body: string;
  url: string;
  created_at: string;
}

/** The message's JSON, or what can be shown of a message that is not Herald's shape. */
function read(event: PushEvent): Pushed {
  const text = event.data?.text() ?? "";
  try {
    const value = JSON.parse(text) as Partial<Pushed>;
    return {
      id: typeof value.id === "string" ? value.id : "",
      title: typeof value.title === "string" && value.title ? value.title : "Herald",
      body: typeof value.body === "string" ? value.body : "",
      url: typeof value.url === "string" ? value.url : "/",
      created_at: typeof value.created_at === "string" ? value.created_at : "",
    };
  } catch {
    return { id: "", title: "Herald", body: text, url: "/", created_at: "" };
  }
}

/** Only http(s) addresses are opened; anything else opens the dashboard. */
function openable(url: string): URL {
  try {
    const parsed = new URL(url, self.location.origin);
    if (parsed.protocol === "https:" || parsed.protocol === "http:") return parsed;
  } catch {
    // Not a URL: the dashboard instead.
  }
  return new URL("/", self.location.origin);
}

self.addEventListener("install", () => {
  void self.skipWaiting();
});

self.addEventListener("activate", (event) => {
  event.waitUntil(self.clients.claim());
});

self.addEventListener("push", (event) => {
  const pushed = read(event);
  const at = Date.parse(pushed.created_at);
  event.waitUntil(
    self.registration.showNotification(pushed.title, {
      body: pushed.body,
      icon: HERALD_ICON,
      // One notification per item: a push sent again (a retry) replaces it instead of showing it twice.
      ...(pushed.id ? { tag: pushed.id } : {}),
      ...(Number.isNaN(at) ? {} : { timestamp: at }),
      data: { url: pushed.url },
    }),
  );
});

/**
 * A click opens the item: a dashboard window already open is brought forward and told where to go (it routes the
 * address itself, src/dashboard/main.tsx), otherwise a new window opens on it. An address on another origin (an
 * action of a notification without an inbox item) always opens a new window.
 */
async function open(url: URL): Promise<void> {
  if (url.origin === self.location.origin) {
    const windows = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
    const dashboard = windows.find((client) => new URL(client.url).origin === self.location.origin);
    if (dashboard) {
      dashboard.postMessage({ type: "herald.open", url: url.href });
      await dashboard.focus().catch(() => undefined);
      return;
    }
  }
  await self.clients.openWindow(url.href);
}

self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  const data = event.notification.data as { url?: unknown } | null;
  event.waitUntil(open(openable(typeof data?.url === "string" ? data.url : "/")));
});
