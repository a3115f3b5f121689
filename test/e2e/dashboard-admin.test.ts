import type { Browser, BrowserContext, Locator, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { browserAvailable, expectAccessible, expectNoSidewaysScroll, launchBrowser, trackRequests, watchConsole } from "./browser";
import { apiAs, freePort, type RunningHerald, startHerald } from "./herald";

// The administration pages of the dashboard (docs/dashboard.md) in a real Chromium at 1280×800 against Herald started
// by npm start's machinery: tables that fit, confirmations before Suspend and Delete, users picked by name instead of
// by id, ids copied whole, and each refusal said once, at its field, in plain words. The journeys run in order.

const OWNER = { email: "ada@herald.test", username: "ada", name: "Ada Lovelace", password: "copper-meadow-lantern-81" };
const GRACE = { email: "grace@herald.test", username: "grace", name: "Grace Hopper", password: "Velvet-Harbor-Lantern-31" };
/** Long names and addresses, so the table's widths are tested with more than short words. */
const OTHERS = [
  {
    email: "bartholomew.featherstonehaugh@accounts.department.example.org",
    username: "bartholomew-featherstonehaugh",
    name: "Bartholomew Featherstonehaugh-Cholmondeley",
  },
  { email: "temp@herald.test", username: "temp", name: "Temporary Account" },
];
const BAD_USERNAME_SAID = "Username can use letters, digits and single hyphens between them (like ada-lovelace), up to 32 characters.";
const EMPTY_BROADCAST_SAID = "Write a title or a message: a broadcast needs at least one.";

let herald: RunningHerald;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let problems: string[];
let requests: ReturnType<typeof trackRequests>;
const ids: Record<string, string> = {};

/** Retries an assertion until it holds: what the page shows follows the API a moment later. */
const poll = <T>(probe: () => T | Promise<T>) => expect.poll(probe, { timeout: 20_000, interval: 100 });

async function settled() {
  await poll(() => page.locator(".loading").count()).toBe(0);
}

/** axe-core in both themes: contrast is a property of each theme. */
async function accessibleInBothThemes(label: string) {
  await expectAccessible(page, label);
  await page.emulateMedia({ colorScheme: "dark" });
  await expectAccessible(page, `${label} (dark)`);
  await page.emulateMedia({ colorScheme: "light" });
}

/** How often `text` occurs in what the page shows (hidden text included, as a screen reader may read it). */
const occurrences = async (text: string) => (await page.locator("body").evaluate((body) => body.textContent ?? "")).split(text).length - 1;

/**
 * A table fits the window: its box does not scroll sideways, and every button in it lies inside both the box and the
 * viewport (docs/dashboard.md#tables).
 */
async function expectTableFits(table: Locator, label: string) {
  const { scroll, client } = await table.evaluate((box) => ({ scroll: box.scrollWidth, client: box.clientWidth }));
  expect(scroll, `${label} scrolls sideways inside its box (${scroll} > ${client})`).toBeLessThanOrEqual(client);
  const box = await table.boundingBox();
  const viewport = page.viewportSize();
  if (!box || !viewport) throw new Error(`${label} is not on the page`);
  const buttons = await table.getByRole("button").all();
  expect(buttons.length).toBeGreaterThan(0);
  for (const button of buttons) {
    const name = (await button.getAttribute("aria-label")) ?? (await button.textContent());
    const at = await button.boundingBox();
    expect(at, `${label}: ${name} is not shown`).not.toBeNull();
    if (!at) continue;
    expect(at.x, `${label}: ${name} starts left of the table`).toBeGreaterThanOrEqual(box.x);
    expect(at.x + at.width, `${label}: ${name} ends right of the table`).toBeLessThanOrEqual(box.x + box.width + 0.5);
    expect(at.x + at.width, `${label}: ${name} ends right of the viewport`).toBeLessThanOrEqual(viewport.width);
  }
}

/** The message tied to an input by aria-describedby that is an error (class field-error), or "" when none is. */
async function errorOf(input: Locator): Promise<string> {
  const described = (await input.getAttribute("aria-describedby")) ?? "";
  for (const id of described.split(" ").filter(Boolean)) {
    const element = page.locator(`[id="${id}"]`);
    if ((await element.getAttribute("class"))?.includes("field-error")) return (await element.textContent()) ?? "";
  }
  return "";
}

beforeAll(async () => {
  const port = await freePort();
  herald = await startHerald(port, {});
  browser = await launchBrowser();
  context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  // Copying an id is read back from the clipboard, which the page may write and the test may read.
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: herald.url });
  page = await context.newPage();
  problems = watchConsole(page);
  requests = trackRequests(page);
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await herald?.stop();
});

describe.skipIf(!browserAvailable)("the dashboard's administration pages in Chromium (docs/dashboard.md)", () => {
  it("setup with a bad username says so once, at the field, in plain words (docs/dashboard.md#errors)", async () => {
    await page.goto(herald.url);
    await page.getByRole("heading", { name: "Set up Herald" }).waitFor();
    await page.getByLabel("E-mail").fill(OWNER.email);
    await page.getByLabel("Username").fill("ada lovelace");
    await page.getByLabel("Name (optional)").fill(OWNER.name);
    await page.getByLabel("Password").fill(OWNER.password);
    await page.getByRole("button", { name: "Create the owner account" }).click();
    const username = page.getByLabel("Username");
    await poll(() => username.getAttribute("aria-invalid")).toBe("true");
    expect(await errorOf(username)).toBe(BAD_USERNAME_SAID);
    expect(await occurrences(BAD_USERNAME_SAID)).toBe(1);
    // The API's own words are not shown, and the alert only points at the field.
    expect(await occurrences("alphanumeric")).toBe(0);
    expect(await occurrences("username:")).toBe(0);
    expect(await page.getByRole("alert").textContent()).toBe("Check the highlighted field.");
    // Focus is on the field to fix, whose description is the message.
    expect(await page.evaluate(() => document.activeElement?.id)).toBe(await username.getAttribute("id"));
    await accessibleInBothThemes("Setup, refused");

    await username.fill(OWNER.username);
    await page.getByRole("button", { name: "Create the owner account" }).click();
    await page.getByRole("heading", { name: "Inbox", exact: true }).waitFor();
    const api = await apiAs(herald.url, OWNER);
    ids.ada = String((await api("GET", "/users/me")).body.id);
    const grace = await api("POST", "/users", GRACE);
    expect(grace.status).toBe(201);
    ids.grace = String(grace.body.id);
    for (const user of OTHERS) {
      const created = await api("POST", "/users", { ...user, login_type: "none" });
      expect(created.status).toBe(201);
      ids[user.username] = String(created.body.id);
    }
    expect((await api("PUT", `/users/${ids.grace}/roles`, { roles: ["user-admin", "auditor"] })).status).toBe(200);
  });

  it("the Users table fits 1280 px: every action inside the viewport, no sideways scroll (docs/dashboard.md#tables)", async () => {
    await page.goto(`${herald.url}/#/admin/users`);
    await page.getByRole("heading", { name: "Users", exact: true }).waitFor();
    await settled();
    await poll(() => page.getByTestId("user-row").count()).toBe(4);
    const table = page.getByRole("region", { name: "Users" });
    await expectTableFits(table, "Users at 1280 px");
    for (const name of ["Suspend grace", "Edit roles of grace", "Delete grace", "Copy id of grace", "Delete bartholomew-featherstonehaugh"]) {
      expect(await table.getByRole("button", { name, exact: true }).count(), name).toBe(1);
    }
    // Nobody suspends or deletes themself: ada's row offers neither.
    expect(await table.getByRole("button", { name: "Suspend ada" }).count()).toBe(0);
    await expectNoSidewaysScroll(page, "Users at 1280 px");
    await accessibleInBothThemes("Users");
    // A question being asked still fits.
    await table.getByRole("button", { name: "Suspend bartholomew-featherstonehaugh" }).click();
    await expectTableFits(table, "Users at 1280 px, asking");
    await table.getByRole("button", { name: "Cancel" }).click();
    await page.setViewportSize({ width: 360, height: 740 });
    await expectNoSidewaysScroll(page, "Users at 360 px");
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  it("Suspend asks first: Cancel leaves the user active, Yes suspends (docs/dashboard.md#confirmations)", async () => {
    const api = await apiAs(herald.url, OWNER);
    await page.goto(`${herald.url}/#/admin/users`);
    const row = page.locator(`[data-testid="user-row"][data-username="grace"]`);
    await row.waitFor();
    await row.getByRole("button", { name: "Suspend grace" }).click();
    await expect.poll(() => row.textContent()).toContain("Suspending grace ends every session and token of theirs");
    // Asking moved focus to Cancel, so a second Enter does not confirm by accident.
    await poll(() => page.evaluate(() => document.activeElement?.textContent)).toBe("Cancel");
    await accessibleInBothThemes("Users, asking before Suspend");
    await row.getByRole("button", { name: "Cancel" }).click();
    expect((await api("GET", "/users/grace")).body.status).toBe("active");
    await poll(() => page.evaluate(() => document.activeElement?.getAttribute("aria-label"))).toBe("Suspend grace");

    await row.getByRole("button", { name: "Suspend grace" }).click();
    await row.getByRole("button", { name: "Yes" }).click();
    await poll(async () => (await api("GET", "/users/grace")).body.status).toBe("suspended");
    await page.getByText("grace is suspended.").waitFor();
    await row.getByRole("button", { name: "Activate grace" }).click();
    await poll(async () => (await api("GET", "/users/grace")).body.status).toBe("active");
  });

  it("Delete asks first, saying what it ends: Cancel keeps the account, Yes deletes it (docs/dashboard.md#confirmations)", async () => {
    const api = await apiAs(herald.url, OWNER);
    const row = page.locator(`[data-testid="user-row"][data-username="temp"]`);
    await row.getByRole("button", { name: "Delete temp" }).click();
    await expect.poll(() => row.textContent()).toContain("Deleting temp removes the account for good");
    await row.getByRole("button", { name: "Cancel" }).click();
    expect((await api("GET", "/users/temp")).status).toBe(200);
    await row.getByRole("button", { name: "Delete temp" }).click();
    await row.getByRole("button", { name: "Yes" }).click();
    await page.getByText("Deleted temp.").waitFor();
    await poll(() => row.count()).toBe(0);
    expect((await api("GET", "/users/temp")).status).not.toBe(200);
  });

  it("a user's full id is copied from the Users table, with a visible Copied (docs/dashboard.md#ids)", async () => {
    const row = page.locator(`[data-testid="user-row"][data-username="grace"]`);
    await row.getByRole("button", { name: "Copy id of grace" }).click();
    await row.getByRole("status").filter({ hasText: "Copied" }).waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(ids.grace);
  });

  it("a broadcast to listed users picks them by username from the keyboard, and reaches them (docs/dashboard.md#picking-users)", async () => {
    await page.goto(`${herald.url}/#/admin/broadcasts`);
    const form = page.getByTestId("broadcast-form");
    await form.getByLabel("Listed users").check();
    const picker = form.getByRole("combobox", { name: "Add users" });
    await picker.fill("gra");
    const option = form.getByRole("option", { name: /grace/ });
    await option.waitFor();
    // The number of matches is announced.
    await poll(() => form.getByRole("status").filter({ hasText: "1 user matches" }).count()).toBe(1);
    await accessibleInBothThemes("Broadcasts, picking a user");
    await picker.press("ArrowDown");
    expect(await picker.getAttribute("aria-activedescendant")).toBe(await option.getAttribute("id"));
    await picker.press("Enter");
    await form.getByTestId("listed-users").getByText("grace").waitFor();
    expect(await picker.inputValue()).toBe("");
    // A pasted full id is still accepted: bartholomew's, looked up and shown by username.
    await picker.fill(ids["bartholomew-featherstonehaugh"] ?? "");
    await form.getByRole("option", { name: /bartholomew-featherstonehaugh/ }).click();
    await form.getByTestId("listed-users").getByText("bartholomew-featherstonehaugh").waitFor();
    await form.getByRole("button", { name: "Remove bartholomew-featherstonehaugh" }).click();
    await form.getByLabel("Title").fill("For grace only");
    await form.getByRole("button", { name: "Send broadcast" }).click();
    await page.getByText(/Broadcast accepted for 1 recipient\./).waitFor();
    const grace = await apiAs(herald.url, GRACE);
    await poll(async () => {
      const inbox = (await grace("GET", "/notifications/inbox")).body.notifications as { title: string }[];
      return inbox.map((n) => n.title);
    }).toContain("For grace only");
    const ada = await apiAs(herald.url, OWNER);
    const mine = (await ada("GET", "/notifications/inbox")).body.notifications as { title: string }[];
    expect(mine.map((n) => n.title)).not.toContain("For grace only");
  });

  it("an empty broadcast says so once, at the Message field, in plain words (docs/dashboard.md#errors)", async () => {
    await page.goto(`${herald.url}/#/admin/broadcasts`);
    const form = page.getByTestId("broadcast-form");
    await form.getByLabel("Everyone").check();
    await form.getByRole("button", { name: "Send broadcast" }).click();
    const message = form.getByLabel("Message");
    await poll(() => message.getAttribute("aria-invalid")).toBe("true");
    expect(await errorOf(message)).toBe(EMPTY_BROADCAST_SAID);
    expect(await occurrences(EMPTY_BROADCAST_SAID)).toBe(1);
    expect(await occurrences("provide a non-empty")).toBe(0);
    expect(await occurrences("content:")).toBe(0);
    expect(await page.getByRole("alert").textContent()).toBe("Check the highlighted field.");
    await accessibleInBothThemes("Broadcasts, refused");
  });

  it("the message log fits 1280 px, is filtered by a user picked by username, and copies their id (docs/dashboard.md#tables)", async () => {
    // ada's own message, so the log has two users to tell apart.
    const ada = await apiAs(herald.url, OWNER);
    expect((await ada("POST", "/notifications/custom", { content: { title: "For ada", message: "" } })).status).toBe(204);
    await page.goto(`${herald.url}/#/admin/messages`);
    await page.getByRole("heading", { name: "Message log" }).waitFor();
    await settled();
    const rows = page.getByTestId("message-row");
    await poll(() => rows.count()).toBeGreaterThan(0);
    const table = page.getByRole("region", { name: "Messages, newest first" });
    await expectTableFits(table, "Message log at 1280 px");
    await expectNoSidewaysScroll(page, "Message log at 1280 px");
    await accessibleInBothThemes("Message log");

    const picker = page.getByRole("combobox", { name: "User" });
    await picker.fill("grace");
    await page.getByRole("option", { name: /grace/ }).click();
    await poll(async () => [...new Set(await rows.evaluateAll((all) => all.map((row) => row.getAttribute("data-user-id"))))]).toEqual([ids.grace]);
    // The log names its users by username, and copies the whole id.
    const first = rows.first();
    await first.getByRole("button", { name: "Copy id of grace" }).click();
    await first.getByRole("status").filter({ hasText: "Copied" }).waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(ids.grace);
    // Typed and applied without picking: a username that names one user is that user; a pasted id is taken as it is.
    await picker.fill("ada");
    await picker.press("Escape");
    await page.getByRole("button", { name: "Apply filters" }).click();
    await poll(async () => [...new Set(await rows.evaluateAll((all) => all.map((row) => row.getAttribute("data-user-id"))))]).toEqual([ids.ada]);
    await picker.fill("nobody-has-this-name");
    await picker.press("Escape");
    await page.getByRole("button", { name: "Apply filters" }).click();
    await poll(async () => errorOf(picker)).toBe("Pick a user from the list, or paste a full user id.");
    expect(await occurrences("Pick a user from the list, or paste a full user id.")).toBe(1);
    await page.setViewportSize({ width: 360, height: 740 });
    await expectNoSidewaysScroll(page, "Message log at 360 px");
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  it("loaded nothing the Content-Security-Policy refused, threw nothing, and left no request open", async () => {
    await poll(() => requests.pending()).toEqual([]);
    expect(problems).toEqual([]);
  });
});
