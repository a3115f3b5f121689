import type { Browser, BrowserContext, Locator, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ScheduleMessages } from "../../src/schedule/messages";
import { browserAvailable, expectAccessible, expectNoSidewaysScroll, launchBrowser, signInOnDashboard, trackRequests, watchConsole } from "./browser";
import { apiAs, freePort, type RunningHerald, startHerald } from "./herald";

// Preferences → "Quiet hours and digest" (docs/dashboard.md, "Pages"; the rules are docs/schedule.md) in a real
// Chromium whose clock is in Europe/Berlin, against Herald started by npm start's machinery with its mail catcher (so
// e-mail is configured and a copy can be held). The quiet range is placed around the real present moment, so the
// Worker's hold and the page's preview are both decided by the same clock the test reads. The journeys run in order.

const OWNER = { email: "ada@herald.test", username: "ada", password: "copper-meadow-lantern-81" };
const ZONE = "Europe/Berlin";
const EVERY_DAY = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];

let herald: RunningHerald;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let problems: string[];
let requests: ReturnType<typeof trackRequests>;
let api: Awaited<ReturnType<typeof apiAs>>;

/** Retries an assertion until it holds: what the page shows follows the API a moment later. */
const poll = <T>(probe: () => T | Promise<T>) => expect.poll(probe, { timeout: 20_000, interval: 100 });

/** The wall clock in Europe/Berlin at `at`, "HH:MM", as the page writes it. */
const berlinClock = (at: number) =>
  new Intl.DateTimeFormat("en-GB", { timeZone: ZONE, hour: "2-digit", minute: "2-digit", hourCycle: "h23" }).format(at);

/**
 * A quiet range covering the present: from an hour ago to two hours ahead on Berlin's clock. The test takes
 * seconds, so every check below falls inside it.
 */
const startedAt = Date.now();
const RANGE = { start: berlinClock(startedAt - 60 * 60_000), end: berlinClock(startedAt + 120 * 60_000) };

const section = () => page.getByTestId("schedule");
const preview = () => section().getByTestId("schedule-preview").textContent();
const zoneField = () => section().getByLabel("Time zone");

/** axe-core in both themes: contrast is a property of each theme. */
async function accessibleInBothThemes(label: string) {
  await expectAccessible(page, label);
  await page.emulateMedia({ colorScheme: "dark" });
  await expectAccessible(page, `${label} (dark)`);
  await page.emulateMedia({ colorScheme: "light" });
}

/** The error tied to a control by aria-describedby (class field-error), or "" when none is. */
async function errorOf(control: Locator): Promise<string> {
  for (const id of ((await control.getAttribute("aria-describedby")) ?? "").split(" ").filter(Boolean)) {
    const element = control.page().locator(`[id="${id}"]`);
    if ((await element.getAttribute("class"))?.includes("field-error")) return (await element.textContent()) ?? "";
  }
  return "";
}

async function openPreferences() {
  await page.goto(`${herald.url}/#/preferences`);
  await page.getByRole("heading", { name: "Quiet hours and digest" }).waitFor();
  await poll(() => page.locator(".loading").count()).toBe(0);
}

async function save() {
  await section().getByRole("button", { name: "Save quiet hours and digest" }).click();
}

beforeAll(async () => {
  herald = await startHerald(await freePort(), {}, { mailCatcher: true });
  const first = await fetch(`${herald.url}/api/v2/users/first`, { method: "POST", body: JSON.stringify(OWNER) });
  expect(first.status).toBe(201);
  await first.arrayBuffer();
  api = await apiAs(herald.url, OWNER);
  browser = await launchBrowser();
  // The browser's zone is the person's: Chromium reports Europe/Berlin to the page's Intl, whatever the machine's.
  context = await browser.newContext({ viewport: { width: 1280, height: 800 }, timezoneId: ZONE });
  page = await context.newPage();
  problems = watchConsole(page);
  requests = trackRequests(page);
  await signInOnDashboard(page, herald.url, OWNER);
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await herald?.stop();
});

describe.skipIf(!browserAvailable)('docs/dashboard.md, "Pages": Quiet hours and digest', () => {
  it("offers the browser's zone until the person saves another, and stores nothing by opening the page", async () => {
    await openPreferences();
    expect(await zoneField().inputValue()).toBe(ZONE);
    expect(await section().getByText("No quiet hours: e-mail goes out whenever it is sent.").count()).toBe(1);
    expect(await preview()).toBe("E-mail goes out at once.");
    // docs/schedule.md, "The schedule": a user who never set one has UTC and `updated_at` null.
    expect((await api("GET", "/users/me/notifications/schedule")).body).toEqual({
      timezone: "UTC",
      quiet_hours: [],
      digest: "off",
      updated_at: null,
    });
  });

  it("says what an e-mail sent now would do as the form changes, saves, and shows the saved schedule after a reload", async () => {
    await section().getByRole("button", { name: "Add quiet hours" }).click();
    const range = section().getByTestId("quiet-range");
    await poll(() => range.count()).toBe(1);
    // A new range starts every day, 22:00 to 07:00.
    for (const day of ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]) expect(await range.getByLabel(day).isChecked()).toBe(true);
    await range.getByLabel("From").fill(RANGE.start);
    await range.getByLabel("Until").fill(RANGE.end);
    // The sentence docs/dashboard.md gives: the range covers now, so e-mail waits for its end, unsaved as it is.
    await poll(preview).toBe(`E-mail waits until ${RANGE.end} in ${ZONE}.`);

    await section().getByLabel("Digest", { exact: true }).selectOption({ label: "Once a day" });
    const dailyAt = section().getByLabel("Digest time");
    expect(await dailyAt.inputValue()).toBe("08:00");
    await dailyAt.fill("18:30");
    // docs/schedule.md, "Digests": with both, the digest decides.
    await poll(preview).toBe(`E-mail is gathered into one digest at 18:30 in ${ZONE}.`);

    await save();
    await section().getByText("Quiet hours and digest saved.").waitFor();
    const stored = await api("GET", "/users/me/notifications/schedule");
    expect(stored.status).toBe(200);
    expect(stored.body).toMatchObject({
      timezone: ZONE,
      quiet_hours: [{ days: EVERY_DAY, start: RANGE.start, end: RANGE.end }],
      digest: "daily@18:30",
    });
    expect(stored.body.updated_at).toEqual(expect.any(String));

    await page.reload();
    await openPreferences();
    expect(await zoneField().inputValue()).toBe(ZONE);
    const reloaded = section().getByTestId("quiet-range");
    expect(await reloaded.count()).toBe(1);
    expect(await reloaded.getByLabel("From").inputValue()).toBe(RANGE.start);
    expect(await reloaded.getByLabel("Until").inputValue()).toBe(RANGE.end);
    for (const day of ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]) expect(await reloaded.getByLabel(day).isChecked()).toBe(true);
    expect(await section().getByLabel("Digest", { exact: true }).inputValue()).toBe("daily");
    expect(await section().getByLabel("Digest time").inputValue()).toBe("18:30");
    expect(await preview()).toBe(`E-mail is gathered into one digest at 18:30 in ${ZONE}.`);

    await accessibleInBothThemes("Preferences → Quiet hours and digest");
    await page.setViewportSize({ width: 360, height: 740 });
    await expectNoSidewaysScroll(page, "Quiet hours and digest at 360 px");
    await page.setViewportSize({ width: 1280, height: 800 });
    expect(problems).toEqual([]);
    await poll(() => requests.pending()).toEqual([]);
  });

  it("says a refusal at the field it concerns, stores nothing, and saves once it is put right", async () => {
    const before = (await api("GET", "/users/me/notifications/schedule")).body;
    const range = section().getByTestId("quiet-range");
    // An unknown zone, and a range that starts on no day: both refused by the API (docs/schedule.md, "The schedule").
    await zoneField().fill("Mars/Olympus_Mons");
    await poll(preview).toBe("Choose a time zone to see when e-mail goes out.");
    for (const day of ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]) await range.getByLabel(day).uncheck();
    await save();
    await section().getByText("Check the highlighted fields.").waitFor();
    expect(await errorOf(zoneField())).toBe(ScheduleMessages.unknownZone);
    expect(await zoneField().getAttribute("aria-invalid")).toBe("true");
    expect(await errorOf(range.getByLabel("Mon"))).toBe(ScheduleMessages.noDays);
    expect(await range.getByLabel("Mon").getAttribute("aria-invalid")).toBe("true");
    // Said once, at the fields: the alert only points at them, and focus is on the first.
    expect(await section().getByText(ScheduleMessages.unknownZone).count()).toBe(1);
    expect(await section().getByText(ScheduleMessages.noDays).count()).toBe(1);
    expect(await zoneField().evaluate((input) => input === document.activeElement)).toBe(true);
    expect((await api("GET", "/users/me/notifications/schedule")).body).toEqual(before);
    await accessibleInBothThemes("Quiet hours and digest, refused");

    // Seven ranges at most: the page stops offering an eighth rather than letting the API refuse it.
    for (let n = 2; n <= 7; n++) {
      await section().getByRole("button", { name: "Add quiet hours" }).click();
      await poll(() => range.count()).toBe(n);
    }
    expect(await section().getByRole("button", { name: "Add quiet hours" }).count()).toBe(0);
    for (let n = 7; n >= 2; n--)
      await section()
        .getByRole("button", { name: `Remove range ${n}` })
        .click();
    await poll(() => range.count()).toBe(1);

    // Put right: the errors go with the change, and the save goes through.
    await zoneField().fill("europe/berlin");
    await range.getByLabel("Sat").check();
    await range.getByLabel("Sun").check();
    await range.getByLabel("Mon").check();
    expect(await errorOf(zoneField())).toBe("");
    await section().getByLabel("Digest", { exact: true }).selectOption({ label: "Off: each e-mail on its own" });
    await save();
    await section().getByText("Quiet hours and digest saved.").waitFor();
    expect(await page.getByRole("alert").count()).toBe(0);
    // The zone is stored, and then shown, in its canonical spelling (docs/schedule.md, "The schedule").
    expect(await zoneField().inputValue()).toBe(ZONE);
    expect((await api("GET", "/users/me/notifications/schedule")).body).toMatchObject({
      timezone: ZONE,
      quiet_hours: [{ days: ["mon", "sat", "sun"], start: RANGE.start, end: RANGE.end }],
      digest: "off",
    });
  });

  it("holds a custom notification's e-mail for quiet hours, and Admin → Messages says so and until when", async () => {
    // Every day again, so that the range covers today whatever day it is.
    const range = section().getByTestId("quiet-range");
    for (const day of ["Tue", "Wed", "Thu", "Fri"]) await range.getByLabel(day).check();
    expect(await zoneField().inputValue()).toBe(ZONE);
    await poll(preview).toBe(`E-mail waits until ${RANGE.end} in ${ZONE}.`);
    await save();
    await section().getByText("Quiet hours and digest saved.").waitFor();

    const sent = await api("POST", "/notifications/custom", { content: { title: "Nightly export", message: "Ready." } });
    expect(sent.status).toBe(204);
    // docs/schedule.md, "Quiet hours": the inbox copy is never held.
    const inbox = await api("GET", "/notifications/inbox");
    expect((inbox.body.notifications as { title: string }[]).map((n) => n.title)).toContain("Nightly export");
    const held = await api("GET", "/notifications/messages?method=smtp&status=pending");
    const messages = held.body.messages as { status_reason: string; next_retry_after: string }[];
    expect(messages).toHaveLength(1);
    const [copy] = messages;
    expect(copy?.status_reason).toBe(ScheduleMessages.heldQuiet);
    // Held until the range's end on Berlin's clock, within the next two hours.
    const until = Date.parse(copy?.next_retry_after ?? "");
    expect(berlinClock(until)).toBe(RANGE.end);
    expect(until).toBeGreaterThan(Date.now());
    expect(until).toBeLessThanOrEqual(startedAt + 121 * 60_000);

    await page.goto(`${herald.url}/#/admin/messages`);
    await page.getByRole("heading", { name: "Message log", exact: true }).waitFor();
    const row = page.locator('[data-testid="message-row"][data-status="pending"]');
    await poll(() => row.count()).toBe(1);
    expect(await row.getByText("Custom Notification").count()).toBe(1);
    // The reason as the log has it, then until when (docs/dashboard.md, "Pages").
    expect(await row.locator("td.wrap").textContent()).toMatch(new RegExp(`^${ScheduleMessages.heldQuiet}until `));
    const heldUntil = row.getByTestId("held-until");
    // How far off, in words: two hours on most nights, less when the range's end falls in a repeated hour, whose
    // first occurrence is the one that counts (docs/schedule.md). The exact moment is the datetime below.
    expect(await heldUntil.textContent()).toMatch(/^until in (\d+ hours?|\d+ minutes?)$/);
    expect(await heldUntil.locator("time").getAttribute("datetime")).toBe(copy?.next_retry_after);
    await accessibleInBothThemes("Admin → Messages with a copy held for quiet hours");
    expect(problems).toEqual([]);
    await poll(() => requests.pending()).toEqual([]);
  });
});
