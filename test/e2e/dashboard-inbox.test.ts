import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { build } from "esbuild";
import * as fc from "fast-check";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { markdownish } from "../fixtures/arbitraries";
import { browserAvailable, expectAccessible, expectNoSidewaysScroll, launchBrowser, trackRequests, watchConsole } from "./browser";
import { freePort, type RunningHerald, startHerald } from "./herald";

// The dashboard's inbox in everyday use (docs/dashboard.md): links that work, rich text that stays safe, pages that
// recover from an outage and from a failed start, times that move on, and a dense list a keyboard can walk. Herald
// runs on storage of this file's own, so it can be stopped and started again as the same Herald.

const OWNER = { email: "grace@herald.test", username: "grace", password: "copper-meadow-lantern-81" };
const root = path.resolve(import.meta.dirname, "../..");

let port: number;
let storage: string;
let herald: RunningHerald | undefined;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let problems: string[];
let requests: ReturnType<typeof trackRequests>;
let token: string;

const start = async () => {
  herald = await startHerald(port, {}, { persistTo: storage });
};

const url = () => `http://localhost:${port}`;

async function api(method: string, route: string, body?: unknown) {
  const res = await fetch(`${url()}/api/v2${route}`, {
    method,
    headers: { "Service-Session-Token": token, "Content-Type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as Record<string, unknown> };
}

const notify = async (title: string, message = "") => {
  expect((await api("POST", "/notifications/custom", { content: { title, message } })).status).toBe(204);
};

/** Retries an assertion until it holds: what the page shows follows the API and the watch a moment later. */
const poll = <T>(probe: () => T | Promise<T>, timeout = 20_000) => expect.poll(probe, { timeout, interval: 100 });

/** A signed-in page of its own, with the owner's session cookie. */
async function signedInPage(into: BrowserContext): Promise<Page> {
  await into.addCookies([{ name: "service_session_token", value: token, url: url() }]);
  return into.newPage();
}

beforeAll(async () => {
  port = await freePort();
  storage = mkdtempSync(path.join(tmpdir(), "herald-inbox-e2e-"));
  await start();
  const first = await fetch(`${url()}/api/v2/users/first`, { method: "POST", body: JSON.stringify(OWNER) });
  expect(first.status).toBe(201);
  await first.arrayBuffer();
  const login = await fetch(`${url()}/api/v2/users/login`, { method: "POST", body: JSON.stringify(OWNER) });
  token = ((await login.json()) as { session_token: string }).session_token;
  browser = await launchBrowser();
  context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  page = await signedInPage(context);
  problems = watchConsole(page);
  requests = trackRequests(page);
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await herald?.stop();
  rmSync(storage, { recursive: true, force: true });
});

describe.skipIf(!browserAvailable)("the dashboard's inbox in everyday use (docs/dashboard.md)", () => {
  it("the test notification's link opens the notifier page in a new tab, not an error (docs/dashboard.md#pages)", async () => {
    await page.goto(url());
    await page.getByRole("heading", { name: "Inbox", exact: true }).waitFor();
    expect((await api("POST", "/notifications/test")).status).toBe(200);
    const item = page.getByTestId("inbox-item").filter({ hasText: "A test notification" });
    const link = item.getByRole("link", { name: /View notification settings/ });
    expect(await link.getAttribute("target")).toBe("_blank");
    const [opened] = await Promise.all([context.waitForEvent("page"), link.click()]);
    await opened.getByRole("heading", { name: "Notifier", exact: true }).waitFor();
    expect(new URL(opened.url()).hash).toBe("#/admin/notifier");
    expect(await opened.evaluate(() => document.contentType)).toBe("text/html");
    await opened.close();
  });

  it('Markdown in a notification is rich text: links open in a new tab, a refused link is text (docs/dashboard.md, "Notifications as rich text")', async () => {
    await notify(
      "Deploy **done**",
      "See [the log](https://ci.example.com/42) or https://example.org/bare, not [this](javascript:alert(1)).\n\n- one\n- `two`",
    );
    const item = page.getByTestId("inbox-item").filter({ hasText: "Deploy done" });
    await item.waitFor();
    const log = item.getByRole("link", { name: "the log" });
    expect(await log.getAttribute("href")).toBe("https://ci.example.com/42");
    expect(await log.getAttribute("target")).toBe("_blank");
    expect(await log.getAttribute("rel")).toBe("noopener noreferrer");
    expect(await item.getByRole("link", { name: "https://example.org/bare" }).count()).toBe(1);
    expect(await item.getByRole("link", { name: "this" }).count()).toBe(0);
    expect(await item.textContent()).toContain("not this.");
    expect(await item.locator(".inbox-content li").count()).toBe(2);
    expect(await item.locator(".inbox-content code").textContent()).toBe("two");
    expect(await item.locator(".inbox-title strong").textContent()).toBe("done");
  });

  it("property: the dashboard's and the embed's renderers put only Markdown's own tags, safe attributes and allowed links in the page (docs/dashboard.md, \"Notifications as rich text\")", async () => {
    const bundle = await build({
      entryPoints: [path.join(root, "test/e2e/pages/rich-text.ts")],
      bundle: true,
      write: false,
      format: "iife",
      jsx: "automatic",
      jsxImportSource: "preact",
      absWorkingDir: root,
      logLevel: "warning",
    });
    const probe = await browser.newPage();
    await probe.setContent("<!doctype html><title>probe</title>");
    await probe.addScriptTag({ content: bundle.outputFiles[0]?.text ?? "" });
    const TAGS = new Set(["div", "span", "p", "strong", "em", "del", "code", "pre", "a", "ul", "ol", "li", "blockquote", "br", "hr"]);
    const ATTRIBUTES = new Set(["href", "target", "rel", "start", "tabindex"]);
    await fc.assert(
      fc.asyncProperty(markdownish, async (markdown) => {
        const out = await probe.evaluate(
          (md) =>
            (
              window as unknown as { renderBoth(md: string): Record<"dashboard" | "embed", { tag: string; attributes: [string, string][] }[]> }
            ).renderBoth(md),
          markdown,
        );
        for (const shapes of [out.dashboard, out.embed]) {
          for (const { tag, attributes } of shapes) {
            expect(TAGS, `<${tag}> from ${JSON.stringify(markdown)}`).toContain(tag);
            for (const [name, value] of attributes) {
              expect(ATTRIBUTES, `${name} on <${tag}> from ${JSON.stringify(markdown)}`).toContain(name);
              if (name === "href") expect(value).toMatch(/^(https?:\/\/[^/\\]|mailto:)/i);
              if (name === "target") expect(value).toBe("_blank");
              if (name === "rel") expect(value).toBe("noopener noreferrer");
            }
          }
        }
        // Both renderers make the same elements (the dashboard's inside its one wrapper).
        expect(out.dashboard.slice(1).map((s) => s.tag)).toEqual(out.embed.map((s) => s.tag));
      }),
      { numRuns: 300 },
    );
    await probe.close();
  });

  it('a dense inbox: tabs, compact rows grouped by day, one Tab stop, arrow keys, and more on scroll (docs/dashboard.md, "The inbox")', async () => {
    for (let i = 1; i <= 40; i++) await notify(`Build ${i} passed`, `Pipeline ${i} is green.`);
    // A fresh load: the open page already holds every arrival it watched.
    await page.goto(`${url()}/#/inbox`);
    await page.reload();
    await page.getByRole("tab", { name: /All/ }).waitFor();
    const rows = page.getByTestId("inbox-item");
    await poll(() => rows.count()).toBe(25);
    expect(await page.getByRole("heading", { name: "Today" }).count()).toBe(1);
    // Scrolling to the end brings the next page without a click; "Load more" stays for keyboards until the end.
    expect(await page.getByRole("button", { name: "Load more" }).count()).toBe(1);
    await page.evaluate(() => window.scrollTo(0, document.documentElement.scrollHeight));
    await poll(() => rows.count()).toBeGreaterThanOrEqual(40);
    await poll(() => page.getByRole("button", { name: "Load more" }).count()).toBe(0);
    await page.evaluate(() => window.scrollTo(0, 0));
    // Compact: a plain row is at most 80 px high, so a 800 px screen shows about ten.
    const box = await page.getByTestId("inbox-item").filter({ hasText: "Build 40 passed" }).boundingBox();
    expect(box?.height).toBeLessThanOrEqual(80);
    // One Tab stop for the list: from the tabs, Tab reaches the first row; arrow keys move between rows; a few Tabs
    // (the active row's own controls) leave the list, however long it is.
    await page.getByRole("tab", { name: /All/ }).focus();
    await page.keyboard.press("Tab");
    await page.keyboard.press("Tab");
    const focused = () => page.evaluate(() => document.activeElement?.closest("[data-testid=inbox-item]")?.getAttribute("data-id") ?? "");
    await poll(focused).toBe(await rows.nth(0).getAttribute("data-id"));
    await page.keyboard.press("ArrowDown");
    await page.keyboard.press("ArrowDown");
    expect(await focused()).toBe(await rows.nth(2).getAttribute("data-id"));
    let stops = 0;
    while ((await focused()) !== "" && stops < 10) {
      await page.keyboard.press("Tab");
      stops += 1;
    }
    expect(stops).toBeLessThanOrEqual(5);
    // Unread, then Archived: each tab is its own list.
    const last = rows.filter({ hasText: "Build 1 passed" });
    await last.getByRole("button", { name: /^Actions for/ }).click();
    await last.getByRole("button", { name: "Archive" }).click();
    await poll(() => rows.filter({ hasText: "Build 1 passed" }).count()).toBe(0);
    await page.getByRole("tab", { name: "Archived" }).click();
    await poll(() => rows.count()).toBe(1);
    expect(await rows.first().textContent()).toContain("Build 1 passed");
    await page.getByRole("tab", { name: /Unread/ }).click();
    await poll(() => rows.count()).toBeGreaterThanOrEqual(25);
    for (const theme of ["light", "dark"] as const) {
      await page.emulateMedia({ colorScheme: theme });
      await expectAccessible(page, `Inbox, dense (${theme})`);
    }
    await page.emulateMedia({ colorScheme: "light" });
  });

  it('at 360 px the navigation folds behind Menu, the bar stays compact and nothing scrolls sideways (docs/dashboard.md, "The inbox")', async () => {
    await page.setViewportSize({ width: 360, height: 740 });
    await page.goto(`${url()}/#/inbox`);
    await page.getByTestId("inbox-item").first().waitFor();
    const nav = page.getByRole("navigation", { name: "Main" });
    expect(await nav.isVisible()).toBe(false);
    const bar = await page.locator(".topbar").boundingBox();
    expect(bar?.height).toBeLessThanOrEqual(110);
    await page.getByRole("button", { name: "Menu" }).click();
    await nav.getByRole("link", { name: "Preferences" }).click();
    await page.getByRole("heading", { name: "Preferences", exact: true }).waitFor();
    // Choosing a page folds the menu again.
    await poll(() => nav.isVisible()).toBe(false);
    await expectNoSidewaysScroll(page, "Preferences at 360 px");
    await page.goto(`${url()}/#/inbox`);
    await page.getByTestId("inbox-item").first().waitFor();
    await expectNoSidewaysScroll(page, "Inbox at 360 px");
    await expectAccessible(page, "Inbox at 360 px");
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  it('relative times move on while the page stays open (docs/dashboard.md, "Relative times")', async () => {
    const clocked = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const timed = await signedInPage(clocked);
    await timed.clock.install();
    await notify("Clock check");
    await timed.goto(`${url()}/#/inbox`);
    const time = timed.getByTestId("inbox-item").filter({ hasText: "Clock check" }).locator("time").first();
    await poll(() => time.textContent()).toBe("now");
    await timed.clock.fastForward(75_000);
    await poll(() => time.textContent()).toBe("1 minute ago");
    await timed.clock.fastForward(30 * 60_000);
    await poll(() => time.textContent()).toBe("31 minutes ago");
    await clocked.close();
  });

  it('a start-up request that fails shows the problem and Retry, and Retry gets in (docs/dashboard.md, "When Herald cannot be reached")', async () => {
    const fresh = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const starting = await signedInPage(fresh);
    await starting.route("**/api/v2/users/first", (route) => route.abort(), { times: 1 });
    await starting.goto(url());
    await starting.getByRole("heading", { name: "Herald cannot be reached" }).waitFor();
    expect(await starting.getByRole("alert").textContent()).toContain("Herald could not be reached.");
    await expectAccessible(starting, "Start-up failure");
    await starting.getByRole("button", { name: "Retry now" }).click();
    await starting.getByRole("heading", { name: "Inbox", exact: true }).waitFor();
    await fresh.close();
  });

  it('after an outage the inbox recovers by itself: the error clears, the list comes back, new arrivals show (docs/dashboard.md, "When Herald cannot be reached")', async () => {
    await page.goto(`${url()}/#/inbox`);
    await page.getByRole("tab", { name: /All/ }).click();
    await page.getByTestId("inbox-item").first().waitFor();
    await page.locator(".live-open").waitFor();
    await herald?.stop();
    herald = undefined;
    await page.getByTestId("offline-banner").waitFor();
    // Away and back while the server is down: the list cannot be read, and the page says so, not "empty".
    await page.getByRole("link", { name: "Preferences" }).click();
    await page.getByRole("heading", { name: "Preferences", exact: true }).waitFor();
    await page.getByRole("link", { name: /^Inbox/ }).click();
    // The inbox's own alert: until the route changes, the Preferences page (whose sections each say they could not
    // load) is still what `getByRole("alert")` would find.
    await page.getByRole("heading", { name: "Inbox", exact: true }).waitFor();
    await page.getByRole("tabpanel").getByRole("alert").waitFor();
    expect(await page.getByText("Your inbox is empty").count()).toBe(0);
    await start();
    // The watch comes back with its backoff (at most 30 s), and the list is read again.
    await poll(() => page.getByTestId("inbox-item").count(), 60_000).toBeGreaterThan(10);
    await poll(() => page.getByRole("alert").count()).toBe(0);
    await poll(() => page.getByTestId("offline-banner").count()).toBe(0);
    await notify("Back online");
    await page.getByTestId("inbox-item").filter({ hasText: "Back online" }).waitFor();
  });

  it("every request the page made finished, and nothing was refused or thrown", async () => {
    await poll(() => requests.pending()).toEqual([]);
    expect(problems.filter((p) => !/ERR_CONNECTION_REFUSED|Failed to load resource/.test(p))).toEqual([]);
  });
});
