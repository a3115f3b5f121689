import { readFile } from "node:fs/promises";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { browserAvailable, expectAccessible, expectNoSidewaysScroll, launchBrowser, signInOnDashboard, trackRequests, watchConsole } from "./browser";
import { apiAs, freePort, type RunningHerald, startHerald } from "./herald";

// Account → "Your data" (docs/dashboard.md, "Pages"; the export is docs/privacy.md, "The export") in a real Chromium,
// against Herald started by npm start's machinery: the button downloads the user's export as a file, and on a session
// older than STEP_UP_MAX_AGE it asks the person to confirm it is them first.

const OWNER = { email: "ada@herald.test", username: "ada", password: "copper-meadow-lantern-81" };
/** STEP_UP_MAX_AGE of this Herald: short, so that a session is old enough for a step-up within a test. */
const STEP_UP_MAX_AGE_MS = 2_000;

let herald: RunningHerald;
let browser: Browser;
let page: Page;
let problems: string[];
let requests: ReturnType<typeof trackRequests>;
let api: Awaited<ReturnType<typeof apiAs>>;
let signedInAt: number;

const poll = <T>(probe: () => T | Promise<T>) => expect.poll(probe, { timeout: 20_000, interval: 100 });
const section = () => page.getByTestId("your-data");
const button = () => section().getByRole("button", { name: "Download my data" });

/** Clicks the button and answers the downloaded file, parsed. */
async function downloaded(
  start: () => Promise<void>,
): Promise<{ name: string; body: Record<string, unknown> & { inbox: Record<string, { title?: string }[]> } }> {
  const [download] = await Promise.all([page.waitForEvent("download"), start()]);
  const path = await download.path();
  return { name: download.suggestedFilename(), body: JSON.parse(await readFile(path, "utf8")) };
}

beforeAll(async () => {
  herald = await startHerald(await freePort(), { STEP_UP_MAX_AGE: `${STEP_UP_MAX_AGE_MS / 1000}s` });
  const first = await fetch(`${herald.url}/api/v2/users/first`, { method: "POST", body: JSON.stringify(OWNER) });
  expect(first.status).toBe(201);
  await first.arrayBuffer();
  api = await apiAs(herald.url, OWNER);
  expect((await api("POST", "/notifications/custom", { content: { title: "Your data, exported", message: "Hello." } })).status).toBe(204);
  browser = await launchBrowser();
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, acceptDownloads: true });
  page = await context.newPage();
  problems = watchConsole(page);
  requests = trackRequests(page);
  await signInOnDashboard(page, herald.url, OWNER);
  signedInAt = Date.now();
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await herald?.stop();
});

describe.skipIf(!browserAvailable)('docs/dashboard.md, "Pages": Account → Your data', () => {
  it("shows the section, accessible in both themes and at 360 px", async () => {
    await page.goto(`${herald.url}/#/account`);
    await page.getByRole("heading", { name: "Your data" }).waitFor();
    await expectAccessible(page, "Account, Your data");
    await page.emulateMedia({ colorScheme: "dark" });
    await expectAccessible(page, "Account, Your data (dark)");
    await page.emulateMedia({ colorScheme: "light" });
    await page.setViewportSize({ width: 360, height: 740 });
    await expectNoSidewaysScroll(page, "Account at 360 px");
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  it("on a session older than STEP_UP_MAX_AGE it asks the person to confirm it is them, then downloads everything Herald stores about them as one JSON file", async () => {
    // Only real time ages a session: a wait on the clock until this one is older than the setting.
    const until = signedInAt + STEP_UP_MAX_AGE_MS + 500;
    while (Date.now() < until) await new Promise((resolve) => setTimeout(resolve, until - Date.now()));
    const { name, body } = await downloaded(async () => {
      await button().click();
      const prompt = page.getByRole("dialog", { name: "Confirm it is you" });
      await prompt.waitFor();
      await prompt.getByLabel("Your password").fill(OWNER.password);
      await prompt.getByRole("button", { name: "Confirm" }).click();
    });
    const me = (await api("GET", "/users/me")).body as { id: string };
    expect(name).toBe(`herald-export-${me.id}.json`);
    expect(body).toMatchObject({ format: "herald.export.v1", user_id: me.id, account: { email: OWNER.email, username: OWNER.username } });
    expect(body.inbox.notifications?.map((n) => n.title)).toContain("Your data, exported");
    expect(JSON.stringify(body)).not.toContain(OWNER.password);
    await section().getByText(`Your data was saved as ${name}.`).waitFor();
    expect(problems).toEqual([]);
    await poll(() => requests.pending()).toEqual([]);
  });
});
