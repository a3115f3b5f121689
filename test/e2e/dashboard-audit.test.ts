import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { browserAvailable, expectAccessible, launchBrowser, watchConsole } from "./browser";
import { apiAs, freePort, type RunningHerald, startHerald } from "./herald";

// The Audit log page (docs/dashboard.md#pages; docs/security.md, "The audit log") in a real Chromium against Herald
// started by npm start's machinery: opened from a link that carries a search (as the "Account compromise reported"
// notice links owners), the search changed through its inputs, paged, and a bad search said at its field.

const OWNER = { email: "ada@herald.test", username: "ada", password: "copper-meadow-lantern-81" };
const MALLORY = { email: "mallory@herald.test", username: "mallory", password: "Velvet-Harbor-Lantern-31" };
/** Users the owner creates: with mallory, 27 `create` entries by ada, a page of 25 and 2 older. */
const CREATED = 26;

let herald: RunningHerald;
let browser: Browser;
let page: Page;
let problems: string[];

const poll = <T>(probe: () => T | Promise<T>) => expect.poll(probe, { timeout: 20_000, interval: 100 });
const rows = () => page.getByTestId("audit-row");
const countText = () => page.getByTestId("audit-count").textContent();

beforeAll(async () => {
  herald = await startHerald(await freePort(), {});
  const first = await fetch(`${herald.url}/api/v2/users/first`, { method: "POST", body: JSON.stringify(OWNER) });
  expect(first.status).toBe(201);
  const ada = await apiAs(herald.url, OWNER);
  expect((await ada("POST", "/users", MALLORY)).status).toBe(201);
  for (let i = 0; i < CREATED; i++) {
    expect((await ada("POST", "/users", { email: `u${i}@herald.test`, username: `u${i}`, password: `Tidal-Copper-${i}-Orchard` })).status).toBe(201);
  }
  await apiAs(herald.url, MALLORY);
  browser = await launchBrowser();
  page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
  problems = watchConsole(page);
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await herald?.stop();
});

describe.skipIf(!browserAvailable)('the Audit log page in Chromium (docs/security.md, "The audit log")', () => {
  it("an owner opens #/audit?q=username%3Amallory, signs in, and sees mallory's entries only", async () => {
    // Signed out, as a notice's reader may be: the link survives the sign-in.
    await page.goto(`${herald.url}/#/audit?q=username%3Amallory`);
    await page.getByRole("heading", { name: "Sign in to Herald" }).waitFor();
    await page.getByLabel("E-mail").fill(OWNER.email);
    await page.getByLabel("Password").fill(OWNER.password);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.getByRole("heading", { name: "Audit log" }).waitFor();
    await page.getByRole("link", { name: "Audit log" }).waitFor();
    await poll(() => rows().count()).toBe(1);
    expect(await page.getByLabel("Search", { exact: true }).inputValue()).toBe("username:mallory");
    expect(await page.getByLabel("Username").inputValue()).toBe("mallory");
    expect(await rows().first().textContent()).toContain("mallory signed in with a password");
    await expectAccessible(page, "Audit log");
  });

  it("the inputs write the search; Older and Newer page through 25 at a time", async () => {
    await page.getByLabel("Username").fill("ada");
    await page.getByLabel("Action").fill("create");
    expect(await page.getByLabel("Search", { exact: true }).inputValue()).toBe("username:ada action:create");
    await page.getByRole("button", { name: "Search", exact: true }).click();
    await poll(countText).toBe(`1–25 of ${CREATED + 1}`);
    expect(await page.evaluate(() => location.hash)).toBe("#/audit?q=username%3Aada+action%3Acreate");
    for (const action of await rows().evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-action")))) expect(action).toBe("create");

    await page.getByRole("button", { name: "Older" }).click();
    await poll(countText).toBe(`26–${CREATED + 1} of ${CREATED + 1}`);
    expect(await rows().count()).toBe(CREATED + 1 - 25);
    // The oldest creation is mallory's, the first user ada made.
    expect(await rows().last().textContent()).toContain('ada created user "mallory"');
    expect(await page.getByRole("button", { name: "Older" }).isDisabled()).toBe(true);

    await page.getByRole("button", { name: "Newer" }).click();
    await poll(countText).toBe(`1–25 of ${CREATED + 1}`);
  });

  it("a bad search is said at the search field, and the page stays usable", async () => {
    await page.getByLabel("Search", { exact: true }).fill("colour:red");
    await page.getByRole("button", { name: "Search", exact: true }).click();
    const search = page.getByLabel("Search", { exact: true });
    await poll(() => search.getAttribute("aria-invalid")).toBe("true");
    expect(await page.locator("#field-audit-q-error").textContent()).toContain('"colour" is not a search key');
    expect(await page.getByRole("alert").textContent()).toBe("Check the highlighted field.");
    await search.fill("action:create");
    await page.getByRole("button", { name: "Search", exact: true }).click();
    await poll(() => search.getAttribute("aria-invalid")).toBe(null);
    expect(problems).toEqual([]);
  });
});
