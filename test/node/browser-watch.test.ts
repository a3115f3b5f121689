import { existsSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { INBOX_LIMITS, inboxOf, startHerald } from "./harness";

const CHROMIUM = "/usr/bin/chromium";
// CI installs Chromium (.ci/run) and sets this, so there the check can never be skipped silently.
const required = process.env.HERALD_REQUIRE_BROWSER === "1";
const available = existsSync(CHROMIUM);
if (required && !available) throw new Error(`HERALD_REQUIRE_BROWSER=1 but ${CHROMIUM} is missing (apt-get install chromium).`);

/** A page on another origin: a dashboard that only has the browser's own WebSocket API. */
function dashboardServer(): Promise<Server> {
  const page = `<!doctype html><html><body><h1>Dashboard</h1><script>window.frames_ = [];</script></body></html>`;
  const server = createServer((_, res) => res.writeHead(200, { "Content-Type": "text/html" }).end(page));
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

describe.skipIf(!available)("N5 from a real browser on another origin", () => {
  let herald: Awaited<ReturnType<typeof startHerald>>;
  let dashboard: Server;
  let browser: Browser;

  beforeAll(async () => {
    herald = await startHerald();
    dashboard = await dashboardServer();
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
      ],
    });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    dashboard?.close();
    await herald?.server.close();
  });

  it("opens the watch with the token as a subprotocol and receives a frame", async () => {
    const api = (path: string, init: RequestInit = {}) =>
      fetch(new URL(`/api/v2${path}`, herald.url), { ...init, headers: { "Content-Type": "application/json", ...init.headers } });
    const owner = { email: "browser-owner@herald.test", username: "browser-owner", password: "saffron-glacier-7-lantern" };
    expect((await api("/users/first", { method: "POST", body: JSON.stringify(owner) })).status).toBe(201);
    const login = await api("/users/login", { method: "POST", body: JSON.stringify({ email: owner.email, password: owner.password }) });
    const { session_token: token } = (await login.json()) as { session_token: string };
    const me = (await (await api("/users/me", { headers: { "Service-Session-Token": token } })).json()) as { id: string };

    const page = await browser.newPage();
    const { port } = dashboard.address() as AddressInfo;
    await page.goto(`http://localhost:${port}/`);
    const wsUrl = new URL("/api/v2/notifications/inbox/watch?format=plaintext", herald.url);
    wsUrl.protocol = "ws:";
    // Only the browser's WebSocket API: no custom headers, and the token stays out of the URL.
    const protocol = await page.evaluate(
      ({ url, token }) =>
        new Promise<string>((resolve, reject) => {
          const ws = new WebSocket(url, ["herald.v1", `herald.token.${token}`]);
          ws.onmessage = (e) => (window as unknown as { frames_: string[] }).frames_.push(String(e.data));
          ws.onopen = () => resolve(ws.protocol);
          ws.onerror = () => reject(new Error("WebSocket failed"));
        }),
      { url: wsUrl.href, token },
    );
    expect(protocol).toBe("herald.v1");

    const id = crypto.randomUUID();
    const inbox = inboxOf(herald.env, me.id);
    await inbox.deliver(
      {
        id,
        userId: me.id,
        templateId: "c425f63e-716a-4bf4-ae24-78348f706c3f",
        templateGroup: "Notification Events",
        targets: [],
        title: "Deploy **finished**",
        content: "See [logs](https://ci.example.com)",
        icon: "",
        actions: [],
        createdAt: new Date().toISOString(),
      },
      INBOX_LIMITS,
    );
    await page.waitForFunction(() => (window as unknown as { frames_: string[] }).frames_.length > 0, undefined, { timeout: 10_000 });
    const frames = await page.evaluate(() => (window as unknown as { frames_: string[] }).frames_);
    const frame = JSON.parse(frames[0] ?? "{}") as { notification: { id: string; title: string; content: string }; unread_count: number };
    expect(frame.notification.id).toBe(id);
    expect(frame.notification.title).toBe("Deploy finished");
    expect(frame.notification.content).toBe("See logs (https://ci.example.com)");
    expect(frame.unread_count).toBe(1);
  }, 60_000);
});
