import { createHash, createHmac, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Browser, BrowserContext, Page, WebSocketRoute } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { browserAvailable, expectAccessible, launchBrowser, watchConsole } from "./browser";
import { freePort, type RunningHerald, startHerald } from "./herald";

// The embeddable inbox (docs/embed.md) in a real Chromium, on a host page of another origin that Herald
// lists in CORS_ALLOWED_ORIGINS, under a strict Content-Security-Policy like the one docs/embed.md asks of hosts.
// Herald is started by npm start's machinery; the host page and its "backend" (which signs the page an embed token
// on every load, as docs/embed.md's Node example does, with no call to Herald) are a small Node server. The host page answers on two origins Herald allows (127.0.0.1 for token mode,
// localhost for cookie mode: same site as Herald) and on a third port Herald does not allow.

const OWNER = { email: "embed-owner@herald.test", username: "embed-owner", password: "saffron-glacier-7-lantern" };
/** The key Herald and the host's backend share (EMBED_SIGNING_KEYS, docs/configuration.md). */
const SIGNING = { id: "e2e-2026", key: randomBytes(32).toString("base64url") };
/** What every embed token starts with: the leak checks look for it anywhere on the page. */
const TOKEN_MARK = "herald-embed.v1.";

let herald: RunningHerald;
let host: Server[] = [];
let hostPort: number;
let otherPort: number;
let browser: Browser;
let ownerSession: string;
let ownerId: string;
/** Every token the host's backend signed, one per request for one. */
const signed: string[] = [];

/** The host's backend, as docs/embed.md ("Signed embed tokens") shows it in Node: HMAC-SHA256, base64url. */
function heraldEmbedToken(userId: string, seconds = 3600): string {
  const payload = `herald-embed.v1.${SIGNING.id}.${userId}.${Math.floor(Date.now() / 1000) + seconds}`;
  const token = `${payload}.${createHmac("sha256", SIGNING.key).update(payload).digest("base64url")}`;
  signed.push(token);
  return token;
}

/** The README's embed snippet, as it stands, pointed at this Herald; and the hash that lets the host policy run its inline script. */
function readmeSnippet(heraldUrl: string): { html: string; scriptHash: string } {
  const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
  const block = /```html\n(<script type="module" src="https:\/\/herald\.example\.com\/embed\/inbox\.js"><\/script>[\s\S]*?)```/.exec(readme)?.[1];
  if (!block) throw new Error("README.md has no embed snippet");
  const html = block.replaceAll("https://herald.example.com", heraldUrl);
  const inline = /<script type="module">([\s\S]*?)<\/script>/.exec(html)?.[1] ?? "";
  return { html, scriptHash: createHash("sha256").update(inline).digest("base64") };
}

/** What the host page's policy allows: its own files, the embed's script, and API calls and the socket to Herald. */
function hostPolicy(heraldUrl: string, scriptHash?: string): string {
  const socket = heraldUrl.replace(/^http/, "ws");
  return [
    "default-src 'none'",
    `script-src 'self' ${heraldUrl}${scriptHash ? ` 'sha256-${scriptHash}'` : ""}`,
    `connect-src 'self' ${heraldUrl} ${socket}`,
    "style-src 'self'",
    "img-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
}

function hostPage(heraldUrl: string, tokenMode: boolean): string {
  // The three lines of docs/embed.md; in token mode the page's own script (/host.js) sets the token.
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Host app</title>
<link rel="stylesheet" href="/host.css">
<script type="module" src="/events.js"></script>
<script type="module" src="${heraldUrl}/embed/inbox.js"></script>
${tokenMode ? `<script type="module" src="/host.js"></script>` : ""}
</head>
<body>
<header><h1>Host app</h1><nav aria-label="Account"><herald-inbox server="${heraldUrl}"></herald-inbox></nav></header>
<main><p id="outside">The host application's own content.</p></main>
</body>
</html>`;
}

const HOST_CSS = `body { margin: 0; font-family: sans-serif; }
header { display: flex; align-items: center; justify-content: space-between; padding: 0.5rem 1rem; }
main { padding: 1rem; }`;

/** Records what the embed tells the page: its events, and anything the page's policy refused. */
const EVENTS_JS = `window.heraldEvents = [];
window.heraldStates = [];
window.policyViolations = [];
document.addEventListener("herald-notification", (e) => heraldEvents.push({ id: e.detail.id, title: e.detail.title, bubbles: e.bubbles, composed: e.composed }));
document.addEventListener("herald-status", (e) => heraldStates.push(e.detail.state));
document.addEventListener("securitypolicyviolation", (e) => policyViolations.push(e.violatedDirective + " " + e.blockedURI));`;

/** The host page's own script: asks its backend for a token and hands it to the element (docs/embed.md). */
const HOST_JS = `const res = await fetch("/token", { cache: "no-store" });
const { token } = await res.json();
await customElements.whenDefined("herald-inbox");
document.querySelector("herald-inbox").token = token;`;

function hostHandler(heraldUrl: string) {
  return (req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? "/", "http://host").pathname;
    const send = (type: string, body: string, headers: Record<string, string> = {}) =>
      res.writeHead(200, { "Content-Type": type, "Cache-Control": "no-store", ...headers }).end(body);
    if (path === "/") send("text/html", hostPage(heraldUrl, true), { "Content-Security-Policy": hostPolicy(heraldUrl) });
    else if (path === "/cookie") send("text/html", hostPage(heraldUrl, false), { "Content-Security-Policy": hostPolicy(heraldUrl) });
    else if (path === "/host.css") send("text/css", HOST_CSS);
    else if (path === "/events.js") send("text/javascript", EVENTS_JS);
    else if (path === "/host.js") send("text/javascript", HOST_JS);
    else if (path === "/token") send("application/json", JSON.stringify({ token: heraldEmbedToken(ownerId) }));
    else if (path === "/herald-token") send("text/plain", heraldEmbedToken(ownerId));
    else if (path === "/readme") {
      const { html, scriptHash } = readmeSnippet(heraldUrl);
      const page = `<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>Host app</title>\n<script type="module" src="/events.js"></script>\n</head>\n<body>\n<header><h1>Host app</h1><nav aria-label="Account">${html}</nav></header>\n</body>\n</html>`;
      send("text/html", page, { "Content-Security-Policy": hostPolicy(heraldUrl, scriptHash) });
    } else res.writeHead(404).end();
  };
}

function listen(server: Server, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve());
  });
}

async function api(method: string, route: string, body?: unknown, token = ownerSession): Promise<Response> {
  return fetch(`${herald.url}/api/v2${route}`, {
    method,
    headers: { "Content-Type": "application/json", ...(token ? { "Service-Session-Token": token } : {}) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

async function unreadFromApi(): Promise<number> {
  const res = await api("GET", "/notifications/inbox/counts");
  expect(res.status).toBe(200);
  return ((await res.json()) as { unread: number }).unread;
}

async function send(title: string): Promise<void> {
  expect((await api("POST", "/notifications/custom", { content: { title, message: `About ${title}.` } })).status).toBe(204);
}

async function waitFor<T>(probe: () => Promise<T | undefined | false>, what: string, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

interface EmbedView {
  defined: boolean;
  state: string | undefined;
  unreadCount: number | undefined;
  bellLabel: string | null;
  expanded: string | null;
  badge: string | null;
  panelOpen: boolean;
  items: { title: string; unread: boolean; part: string | null }[];
  events: { id: string; title: string; bubbles: boolean; composed: boolean }[];
  states: string[];
  policyViolations: string[];
}

/** What the embed shows, read through its open shadow root the way a person (or screen reader) would meet it. */
function view(page: Page): Promise<EmbedView> {
  return page.evaluate(() => {
    type Element_ = HTMLElement & { state?: string; unreadCount?: number };
    const el = document.querySelector<Element_>("herald-inbox");
    const root = el?.shadowRoot;
    const recorded = window as unknown as { heraldEvents?: EmbedView["events"]; heraldStates?: string[]; policyViolations?: string[] };
    const badge = root?.querySelector<HTMLElement>("[part=badge]");
    const panel = root?.querySelector<HTMLElement>("[part=panel]");
    const bell = root?.querySelector("[part=bell]");
    return {
      defined: customElements.get("herald-inbox") !== undefined,
      state: el?.state,
      unreadCount: el?.unreadCount,
      bellLabel: bell?.getAttribute("aria-label") ?? null,
      expanded: bell?.getAttribute("aria-expanded") ?? null,
      badge: badge && !badge.hidden ? badge.textContent : null,
      panelOpen: panel ? !panel.hidden : false,
      items: [...(root?.querySelectorAll("[part~=item]") ?? [])].map((li) => {
        const title = li.querySelector("[part=title]");
        // The title's own text, without the visually hidden "Unread: " prefix.
        const text = [...(title?.childNodes ?? [])]
          .filter((n) => n.nodeType === Node.TEXT_NODE)
          .map((n) => n.textContent)
          .join("");
        return { title: text, unread: li.getAttribute("part")?.split(" ").includes("unread") ?? false, part: li.getAttribute("part") };
      }),
      events: recorded.heraldEvents ?? [],
      states: recorded.heraldStates ?? [],
      policyViolations: recorded.policyViolations ?? [],
    };
  });
}

async function until(page: Page, what: string, test: (v: EmbedView) => boolean): Promise<EmbedView> {
  return waitFor(async () => {
    const v = await view(page);
    return test(v) ? v : undefined;
  }, what);
}

const bell = (page: Page) => page.locator("herald-inbox").locator("[part=bell]");
const item = (page: Page, title: string) => page.locator("herald-inbox").locator("[part~=item]", { hasText: title });

/**
 * Runs axe-core (injected through the DevTools protocol by expectAccessible: the host's policy refuses inline script)
 * with the panel open, in the light and the dark colour scheme, which have their own defaults.
 */
async function checkAccessible(page: Page, label: string) {
  for (const colorScheme of ["light", "dark"] as const) {
    await page.emulateMedia({ colorScheme });
    await expectAccessible(page, `${label}, ${colorScheme}`);
  }
  await page.emulateMedia({ colorScheme: "light" });
}

describe.skipIf(!browserAvailable)("<herald-inbox>: the embeddable inbox in a real browser (docs/embed.md)", () => {
  beforeAll(async () => {
    hostPort = await freePort();
    otherPort = await freePort();
    const port = await freePort();
    herald = await startHerald(port, {
      CORS_ALLOWED_ORIGINS: `http://127.0.0.1:${hostPort},http://localhost:${hostPort}`,
      EMBED_SIGNING_KEYS: `${SIGNING.id}:${SIGNING.key}`,
    });
    host = [createServer(hostHandler(herald.url)), createServer(hostHandler(herald.url))];
    await listen(host[0] as Server, hostPort);
    await listen(host[1] as Server, otherPort);
    browser = await launchBrowser();

    expect((await api("POST", "/users/first", OWNER, "")).status).toBe(201);
    const login = await api("POST", "/users/login", { email: OWNER.email, password: OWNER.password }, "");
    expect(login.status).toBe(201);
    ownerSession = ((await login.json()) as { session_token: string }).session_token;
    ownerId = ((await (await api("GET", "/users/me")).json()) as { id: string }).id;

    await send("Welcome aboard");
    await send("Build finished");
    await waitFor(async () => (await unreadFromApi()) === 2, "two unread notifications");
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    for (const server of host) server.close();
    await herald?.stop();
  });

  describe("with a signed embed token, on an allowed origin", () => {
    let context: BrowserContext;
    let page: Page;
    let problems: string[];
    const requested: string[] = [];

    beforeAll(async () => {
      context = await browser.newContext();
      page = await context.newPage();
      problems = watchConsole(page);
      page.on("request", (request) => requested.push(request.url()));
      page.on("websocket", (socket) => requested.push(socket.url()));
      await page.goto(`http://127.0.0.1:${hostPort}/`);
    });

    afterAll(async () => {
      await context?.close();
    });

    it("shows the unread count on the bell, and the list when it is clicked", async () => {
      const shown = await until(page, "the bell to count 2 and the watch to be live", (v) => v.badge === "2" && v.state === "live");
      expect(shown.bellLabel).toBe("Notifications, 2 unread");
      expect(shown.expanded).toBe("false");
      expect(shown.unreadCount).toBe(2);
      expect(shown.panelOpen).toBe(false);

      await bell(page).click();
      const open = await until(page, "the panel to open", (v) => v.panelOpen);
      expect(open.expanded).toBe("true");
      expect(open.items.map((i) => i.title)).toEqual(["Build finished", "Welcome aboard"]);
      expect(open.items.every((i) => i.part === "item unread")).toBe(true);
      // The constructed stylesheet applied under the host's `style-src 'self'` (no inline style needed).
      const position = await page.evaluate(() => {
        const panel = document.querySelector("herald-inbox")?.shadowRoot?.querySelector("[part=panel]");
        return panel ? getComputedStyle(panel).position : "";
      });
      expect(position).toBe("absolute");
    });

    it("adds a notification sent through the API to the open list, live, and dispatches herald-notification", async () => {
      await send("Deploy **done**");
      const live = await until(page, "the new notification in the open list", (v) => v.items[0]?.title === "Deploy done" && v.badge === "3");
      expect(live.bellLabel).toBe("Notifications, 3 unread");
      expect(live.panelOpen).toBe(true);
      expect(live.events).toHaveLength(1);
      expect(live.events[0]).toMatchObject({ title: "Deploy done", bubbles: true, composed: true });
      const listed = (await (await api("GET", "/notifications/inbox?limit=1")).json()) as { notifications: { id: string }[] };
      expect(live.events[0]?.id).toBe(listed.notifications[0]?.id);
    });

    it("passes axe-core with the panel open (no serious or critical violation), light and dark", async () => {
      await checkAccessible(page, "embed panel open");
    });

    it("marks one notification read in the embed, and the API's unread count follows", async () => {
      await item(page, "Deploy done").locator("[part=mark-read]").click();
      await waitFor(async () => (await unreadFromApi()) === 2, "the API to count 2 unread");
      const after = await until(page, "the item to show as read", (v) => v.badge === "2" && v.items[0]?.unread === false);
      expect(after.items[0]).toMatchObject({ title: "Deploy done", part: "item" });
      expect(after.bellLabel).toBe("Notifications, 2 unread");
      // Clicking an unread item reads it too.
      await item(page, "Build finished").locator("[part=title]").click();
      await waitFor(async () => (await unreadFromApi()) === 1, "the API to count 1 unread");
      await until(page, "the badge to count 1", (v) => v.badge === "1");
    });

    it("is usable from the keyboard: Escape closes and returns focus to the bell, Enter opens, a click outside closes", async () => {
      expect((await view(page)).panelOpen).toBe(true);
      await bell(page).focus();
      await page.keyboard.press("Tab");
      const inPanel = await page.evaluate(() => document.querySelector("herald-inbox")?.shadowRoot?.activeElement?.getAttribute("part"));
      expect(inPanel).toBe("mark-all");
      await page.keyboard.press("Escape");
      await until(page, "the panel to close", (v) => !v.panelOpen && v.expanded === "false");
      const focused = await page.evaluate(() => {
        const el = document.querySelector("herald-inbox");
        return document.activeElement === el && el?.shadowRoot?.activeElement?.getAttribute("part");
      });
      expect(focused).toBe("bell");
      await page.keyboard.press("Enter");
      await until(page, "Enter to open the panel", (v) => v.panelOpen);
      await page.locator("#outside").click();
      await until(page, "a click outside to close the panel", (v) => !v.panelOpen);
    });

    it("updates the badge for a notification that arrives while the panel is closed", async () => {
      await send("While closed");
      const v = await until(page, "the badge to count 2", (x) => x.badge === "2");
      expect(v.panelOpen).toBe(false);
      expect(v.items[0]).toMatchObject({ title: "While closed", unread: true });
      expect(v.events.map((e) => e.title)).toEqual(["Deploy done", "While closed"]);
    });

    it("never puts the token in the URL, storage, an attribute or the markup, and does not give it back", async () => {
      const leaks = await page.evaluate((token) => {
        const el = document.querySelector("herald-inbox") as (HTMLElement & { token?: unknown }) | null;
        const attributes = [...document.querySelectorAll("*"), ...(el?.shadowRoot?.querySelectorAll("*") ?? [])].flatMap((node) =>
          [...node.attributes].map((a) => a.value),
        );
        return {
          url: location.href.includes(token),
          localStorage: JSON.stringify({ ...localStorage }).includes(token),
          sessionStorage: JSON.stringify({ ...sessionStorage }).includes(token),
          cookie: document.cookie.includes(token),
          outerHTML: document.documentElement.outerHTML.includes(token),
          shadow: (el?.shadowRoot?.innerHTML ?? "").includes(token),
          attributes: attributes.some((value) => value.includes(token)),
          property: el?.token,
          ownProperties: el ? Object.getOwnPropertyNames(el) : [],
        };
      }, TOKEN_MARK);
      expect(leaks).toEqual({
        url: false,
        localStorage: false,
        sessionStorage: false,
        cookie: false,
        outerHTML: false,
        shadow: false,
        attributes: false,
        property: undefined,
        ownProperties: [],
      });
      // Nor in any URL the page asked for: the watch offers it as a subprotocol, the API calls as a header.
      expect(requested.some((u) => u.includes("/api/v2/notifications/inbox/watch"))).toBe(true);
      expect(requested.filter((u) => u.includes(TOKEN_MARK))).toEqual([]);
      expect(problems).toEqual([]);
      expect((await view(page)).policyViolations).toEqual([]);
    });
  });

  it("resumes after the socket drops: what happened meanwhile arrives exactly once", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    // Every watch socket goes through this route (still a real socket from the page to Herald) so the test can drop
    // it, and refuse reconnections while "offline" (context.setOffline does not reach WebSockets).
    let offline = false;
    const sockets: WebSocketRoute[] = [];
    await page.routeWebSocket(/\/api\/v2\/notifications\/inbox\/watch/, (socket) => {
      if (offline) {
        void socket.close({ code: 1011, reason: "offline" });
        return;
      }
      socket.connectToServer();
      sockets.push(socket);
    });
    try {
      await page.goto(`http://127.0.0.1:${hostPort}/`);
      const before = await until(page, "the watch to be live", (v) => v.state === "live" && v.badge === "2");
      const unreadTitle = before.items.find((i) => i.unread && i.title === "Welcome aboard")?.title;
      expect(unreadTitle).toBe("Welcome aboard");

      offline = true;
      for (const socket of sockets.splice(0)) await socket.close({ code: 1011, reason: "dropped by the test" });
      await until(page, "the embed to notice the drop", (v) => v.states.includes("reconnecting") && v.state !== "live");

      // Meanwhile, through the API: a new notification, and another one read elsewhere.
      await send("While away");
      const listed = (await (await api("GET", "/notifications/inbox?read_status=unread&limit=100")).json()) as {
        notifications: { id: string; title: string }[];
      };
      const welcome = listed.notifications.find((n) => n.title === "Welcome aboard");
      expect(welcome).toBeDefined();
      expect((await api("PUT", `/notifications/inbox/${welcome?.id}/read-status`, { is_read: true })).status).toBe(200);
      await waitFor(async () => (await unreadFromApi()) === 2, "the API to count 2 unread");

      offline = false;
      const resumed = await until(
        page,
        "the missed notification after the reconnect",
        (v) => v.state === "live" && v.events.some((e) => e.title === "While away"),
      );
      await until(page, "the read elsewhere to show", (v) => v.items.find((i) => i.title === "Welcome aboard")?.unread === false && v.badge === "2");
      expect(resumed.events.map((e) => e.title)).toEqual(["While away"]);

      // Frames arrive in seq order: once a later one is in, a repeat of the missed one would have been seen.
      await send("After return");
      const final = await until(page, "the next live notification", (v) => v.events.some((e) => e.title === "After return"));
      expect(final.events.map((e) => e.title)).toEqual(["While away", "After return"]);
      expect(final.items.filter((i) => i.title === "While away")).toHaveLength(1);
      expect(final.badge).toBe(String(await unreadFromApi()));
    } finally {
      await context.close();
    }
  });

  it("cannot be loaded, nor the API called, from a page on an origin Herald does not allow", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    try {
      await page.goto(`http://127.0.0.1:${otherPort}/`);
      const blocked = await page.evaluate(
        async ({ server, token }) => {
          const call = await fetch(`${server}/api/v2/notifications/inbox/counts`, { headers: { "Service-Session-Token": token } }).then(
            () => "answered",
            () => "refused",
          );
          return {
            defined: customElements.get("herald-inbox") !== undefined,
            shadow: document.querySelector("herald-inbox")?.shadowRoot ?? null,
            call,
          };
        },
        { server: herald.url, token: heraldEmbedToken(ownerId) },
      );
      expect(blocked).toEqual({ defined: false, shadow: null, call: "refused" });
      // Herald itself answers the script, without the CORS header a module script needs.
      const script = await fetch(`${herald.url}/embed/inbox.js`, { headers: { Origin: `http://127.0.0.1:${otherPort}` } });
      expect(script.status).toBe(200);
      expect(script.headers.get("access-control-allow-origin")).toBeNull();
    } finally {
      await context.close();
    }
  });

  it("signs in with the session cookie on a same-site page: lists, marks all read, stays live", async () => {
    const context = await browser.newContext();
    // The HttpOnly session cookie Herald sets at sign-in (docs/api.md, Conventions); the page (localhost, another
    // port) is same-site with Herald, so the browser sends it with the embed's credentialed requests and socket.
    await context.addCookies([{ name: "service_session_token", value: ownerSession, url: herald.url, httpOnly: true, sameSite: "Lax" }]);
    const page = await context.newPage();
    const problems = watchConsole(page);
    try {
      await page.goto(`http://localhost:${hostPort}/cookie`);
      const unread = await unreadFromApi();
      expect(unread).toBeGreaterThan(0);
      await until(page, "the cookie-authenticated count", (v) => v.state === "live" && v.badge === String(unread));
      await bell(page).click();
      await page.locator("herald-inbox").locator("[part=mark-all]").click();
      await waitFor(async () => (await unreadFromApi()) === 0, "the API to count 0 unread");
      const read = await until(page, "every item to show as read", (v) => v.badge === null && v.items.every((i) => !i.unread));
      expect(read.bellLabel).toBe("Notifications, 0 unread");

      await send("Over the cookie");
      const live = await until(page, "the live notification over the cookie", (v) => v.badge === "1");
      expect(live.items[0]).toMatchObject({ title: "Over the cookie", unread: true });
      expect(live.events.map((e) => e.title)).toEqual(["Over the cookie"]);
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it("the README's snippet, with a backend that signs a token per page load and never calls Herald, still works on the 150th load (docs/embed.md, Signed embed tokens)", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const problems = watchConsole(page);
    const tokensBefore = ((await (await api("GET", "/users/me/keys/tokens")).json()) as unknown[]).length;
    const signedBefore = signed.length;
    try {
      for (let load = 1; load <= 150; load++) {
        await page.goto(`http://127.0.0.1:${hostPort}/readme`);
        await until(page, `load ${load} to go live`, (v) => v.state === "live" && v.unreadCount !== undefined);
      }
      // The 150th load lists (the panel shows what the API lists) and is live (a new notification arrives).
      await bell(page).click();
      const listed = (await (await api("GET", "/notifications/inbox?limit=20")).json()) as { notifications: { title: string }[] };
      const shown = await until(page, "the list of the 150th load", (v) => v.panelOpen && v.items.length === listed.notifications.length);
      expect(shown.items.map((i) => i.title)).toEqual(listed.notifications.map((n) => n.title.replaceAll("**", "")));
      await send("After 150 loads");
      await until(page, "a live notification on the 150th load", (v) => v.items[0]?.title === "After 150 loads");
      expect(signed.length - signedBefore).toBe(150);
      // Nothing piled up in Herald: no API token was made for any of those loads.
      expect(((await (await api("GET", "/users/me/keys/tokens")).json()) as unknown[]).length).toBe(tokensBefore);
      expect(problems).toEqual([]);
      expect((await view(page)).policyViolations).toEqual([]);
    } finally {
      await context.close();
    }
  }, 300_000);

  describe("rich text, archive, paging and the full inbox (docs/embed.md, What it does)", () => {
    let context: BrowserContext;
    let page: Page;
    let problems: string[];
    const content = () => page.locator("herald-inbox").locator("[part~=item]", { hasText: "Rich text" }).locator("[part=content]");

    beforeAll(async () => {
      context = await browser.newContext();
      // The links' targets, answered here: the test follows them without leaving the machine.
      await context.route("https://ci.example.com/**", (route) =>
        route.fulfill({ status: 200, contentType: "text/html", body: "<title>CI</title>" }),
      );
      expect(
        (
          await api("POST", "/notifications/custom", {
            content: {
              title: "Rich text",
              message: "See [the log](https://ci.example.com/42), `npm test`, and [this](javascript:alert(1)).\n\n- one\n- two",
            },
          })
        ).status,
      ).toBe(204);
      page = await context.newPage();
      problems = watchConsole(page);
      await page.goto(`http://127.0.0.1:${hostPort}/`);
      await until(page, "the watch to be live", (v) => v.state === "live");
      await bell(page).click();
      await until(page, "the panel to open", (v) => v.panelOpen && v.items.some((i) => i.title === "Rich text"));
    });

    afterAll(async () => {
      await context?.close();
    });

    it("shows Markdown as rich text: a link that opens in a new tab, code, a list; a javascript: link stays text (docs/embed.md, Security notes)", async () => {
      const links = await content()
        .locator("a")
        .evaluateAll((as) =>
          as.map((a) => ({ text: a.textContent, href: a.getAttribute("href"), target: a.getAttribute("target"), rel: a.getAttribute("rel") })),
        );
      expect(links).toEqual([{ text: "the log", href: "https://ci.example.com/42", target: "_blank", rel: "noopener noreferrer" }]);
      expect(await content().locator("code").textContent()).toBe("npm test");
      expect(await content().locator("li").allTextContents()).toEqual(["one", "two"]);
      expect(await content().textContent()).toContain("and this.");
      const popup = context.waitForEvent("page");
      await content().locator("a").click();
      const opened = await popup;
      await opened.waitForLoadState();
      expect(opened.url()).toBe("https://ci.example.com/42");
      await opened.close();
    });

    it('"View all" opens the dashboard at Herald\'s / (docs/embed.md, What it does)', async () => {
      const link = page.locator("herald-inbox").locator("[part=view-all]");
      expect(await link.getAttribute("href")).toBe(`${herald.url}/`);
      const popup = context.waitForEvent("page");
      await link.click();
      const dashboard = await popup;
      await dashboard.waitForLoadState();
      expect(dashboard.url()).toBe(`${herald.url}/`);
      expect(await dashboard.title()).toMatch(/Herald/);
      await dashboard.close();
    });

    it("Archive takes the item out of the list, and the API agrees (docs/inbox.md, Item states)", async () => {
      await item(page, "Rich text").locator("[part=archive]").click();
      await until(page, "the archived item to leave the list", (v) => !v.items.some((i) => i.title === "Rich text"));
      const archived = (await (await api("GET", "/notifications/inbox?archived=only&limit=100")).json()) as { notifications: { title: string }[] };
      expect(archived.notifications.map((n) => n.title)).toContain("Rich text");
      const listed = (await (await api("GET", "/notifications/inbox?limit=100")).json()) as { notifications: { title: string }[] };
      expect(listed.notifications.map((n) => n.title)).not.toContain("Rich text");
    });

    it("30 more notifications: the list shows 20, and Load more shows the rest, once each (docs/embed.md, What it does)", async () => {
      for (let i = 1; i <= 30; i++) await send(`Batch ${String(i).padStart(2, "0")}`);
      const listed = (await (await api("GET", "/notifications/inbox?limit=100")).json()) as { notifications: { title: string }[] };
      const titles = listed.notifications.map((n) => n.title.replaceAll("**", ""));
      expect(titles.length).toBeGreaterThan(30);
      await page.reload();
      await until(page, "the watch to be live", (v) => v.state === "live");
      await bell(page).click();
      const first = await until(page, "the first page", (v) => v.panelOpen && v.items.length === 20);
      expect(first.items.map((i) => i.title)).toEqual(titles.slice(0, 20));
      const more = page.locator("herald-inbox").locator("[part=load-more]");
      while (await more.isVisible()) {
        const before = (await view(page)).items.length;
        await more.click();
        await until(page, "the next page", (v) => v.items.length > before || !v.items.length);
      }
      const all = await view(page);
      expect(all.items.map((i) => i.title)).toEqual(titles);
      await checkAccessible(page, "embed with rich text and every page loaded");
      expect(problems).toEqual([]);
      expect(all.policyViolations).toEqual([]);
    });
  });
});
