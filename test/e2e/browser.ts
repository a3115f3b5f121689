import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { AxeResults, RunOptions } from "axe-core";
import { type Browser, chromium, type Page, type Request } from "playwright-core";
import { expect } from "vitest";

/** Debian's Chromium (.ci/run installs it); playwright-core drives it and downloads nothing. */
const CHROMIUM = "/usr/bin/chromium";
// CI sets this, so there a missing browser fails the run instead of skipping the browser tests.
const required = process.env.HERALD_REQUIRE_BROWSER === "1";
export const browserAvailable = existsSync(CHROMIUM);
if (required && !browserAvailable) throw new Error(`HERALD_REQUIRE_BROWSER=1 but ${CHROMIUM} is missing (apt-get install chromium).`);

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
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
}

/**
 * Collects what the page's Content-Security-Policy refused and every uncaught script error: a page that works only
 * because nothing was checked would show up here (docs/dashboard.md#security).
 */
export function watchConsole(page: Page): string[] {
  const problems: string[] = [];
  page.on("console", (message) => {
    if (message.type() === "error" && /Content Security Policy|Refused to/i.test(message.text())) problems.push(message.text());
  });
  page.on("pageerror", (error) => problems.push(`uncaught: ${error.message}`));
  return problems;
}

/**
 * The page's HTTP requests that have not finished: a request ends when its whole body has arrived, so one whose
 * body the page neither reads nor cancels stays here, and the page never goes quiet (docs/dashboard.md, "Tests").
 * WebSockets are not requests here.
 */
export function trackRequests(page: Page): { pending(): string[] } {
  const open = new Map<Request, string>();
  page.on("request", (request) => open.set(request, `${request.method()} ${request.url()}`));
  page.on("requestfinished", (request) => open.delete(request));
  page.on("requestfailed", (request) => open.delete(request));
  return { pending: () => [...open.values()] };
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/**
 * Runs axe-core (WCAG 2.x A and AA rules) on what the page shows now and fails on any serious or critical
 * violation. Returns every violation's id and impact, for the record.
 */
export async function expectAccessible(page: Page, label: string): Promise<{ label: string; violations: string[] }> {
  // Evaluated through the DevTools protocol, not a <script>: the page's own policy rightly refuses inline script.
  if (!(await page.evaluate(() => "axe" in window))) await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(context: Document, options: RunOptions): Promise<AxeResults> } }).axe;
    const result = await axe.run(document, { runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"] } });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => ({ target: n.target })) }));
  });
  const blocking = violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  expect(blocking, `${label}: ${JSON.stringify(blocking, null, 2)}`).toEqual([]);
  return { label, violations: violations.map((v) => `${v.id} (${v.impact})`) };
}

/** Nothing on the page is wider than the viewport: the page never scrolls sideways (tables scroll inside their card). */
export async function expectNoSidewaysScroll(page: Page, label: string): Promise<void> {
  const { scroll, client } = await page.evaluate(() => ({
    scroll: document.documentElement.scrollWidth,
    client: document.documentElement.clientWidth,
  }));
  expect(scroll, `${label} is ${scroll}px wide in a ${client}px viewport`).toBeLessThanOrEqual(client);
}

/** Signs in through the dashboard's own form with a password, and waits for the inbox it opens on. */
export async function signInOnDashboard(page: Page, url: string, credentials: { email: string; password: string }): Promise<void> {
  await page.goto(`${url}/#/sign-in`);
  await page.getByLabel("E-mail").fill(credentials.email);
  await page.getByLabel("Password").fill(credentials.password);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await page.getByRole("heading", { name: "Inbox", exact: true }).waitFor();
}
