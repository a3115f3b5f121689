import type { Browser, Page, Route } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ErrorBody, Messages } from "../../src/http/errors";
import { MANDATORY_TEMPLATE_IDS } from "../../src/notifications/templates";
import { TargetMessages } from "../../src/targets/messages";
import { type TargetDelivery, TargetStandIns } from "../peers/targets";
import { browserAvailable, expectAccessible, expectNoSidewaysScroll, launchBrowser, signInOnDashboard, trackRequests, watchConsole } from "./browser";
import { apiAs, freePort, type RunningHerald, startHerald } from "./herald";

// Account → Channels (docs/dashboard.md, "Channels"; the rules are docs/targets.md) in a real Chromium, against Herald
// started by npm start's machinery whose OUTBOUND_ALLOWED_ORIGINS is the origin of the Slack and webhook stand-ins
// (test/peers/targets.ts) this file starts: the code Herald sends travels its real queue to a real HTTP peer, is read
// there, and typed into the page.

const OWNER = { email: "grace@herald.test", username: "grace", password: "harbour-violet-compass-62" };

let herald: RunningHerald;
let standIns: TargetStandIns;
let browser: Browser;
let page: Page;
let problems: string[];
let requests: ReturnType<typeof trackRequests>;
let api: Awaited<ReturnType<typeof apiAs>>;

const poll = <T>(probe: () => T | Promise<T>) => expect.poll(probe, { timeout: 30_000, interval: 100 });
const section = () => page.getByTestId("channels");
const channel = (name: string) =>
  section()
    .getByTestId("channel")
    .filter({ has: page.getByRole("heading", { name }) });

/** What the stand-in received at `path` once it has something. */
async function arrived(path: string, secret?: string): Promise<TargetDelivery> {
  await poll(() => standIns.received(path).length).toBeGreaterThan(0);
  const [first] = standIns.received(path, secret);
  if (!first) throw new Error(`nothing at ${path}`);
  return first;
}

async function addChannel(kind: string, name: string, path: string) {
  await section().getByLabel("Kind").selectOption({ label: kind });
  await section().getByLabel("Name", { exact: true }).fill(name);
  await section().getByLabel("URL", { exact: true }).fill(`${standIns.origin}${path}`);
  await section().getByRole("button", { name: "Add channel" }).click();
}

async function accessibleInBothThemes(label: string) {
  await expectAccessible(page, label);
  await page.emulateMedia({ colorScheme: "dark" });
  await expectAccessible(page, `${label} (dark)`);
  await page.emulateMedia({ colorScheme: "light" });
}

beforeAll(async () => {
  standIns = await TargetStandIns.start();
  herald = await startHerald(await freePort(), { OUTBOUND_ALLOWED_ORIGINS: standIns.origin });
  const first = await fetch(`${herald.url}/api/v2/users/first`, { method: "POST", body: JSON.stringify(OWNER) });
  expect(first.status).toBe(201);
  await first.arrayBuffer();
  api = await apiAs(herald.url, OWNER);
  browser = await launchBrowser();
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  page = await context.newPage();
  problems = watchConsole(page);
  requests = trackRequests(page);
  await signInOnDashboard(page, herald.url, OWNER);
  await page.goto(`${herald.url}/#/account`);
  await page.getByRole("heading", { name: "Channels", exact: true }).waitFor();
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await herald?.stop();
  await standIns?.stop();
});

describe.skipIf(!browserAvailable)('docs/dashboard.md, "Channels"', () => {
  it("adds a Slack channel, shows its code on its way, and verifies it with the code the channel received", async () => {
    await section().getByText("You have no channels yet.").waitFor();
    const path = "/slack/T0E2E/B0E2E/dashboard";
    await addChannel("Slack", "Team alerts", path);
    await section().getByText("Herald is sending a code to “Team alerts”. Enter it below to start.").waitFor();
    const item = channel("Team alerts");
    expect(await item.getByText("Waiting for its code").count()).toBe(1);
    expect(await item.getByText(standIns.origin, { exact: true }).count()).toBe(1);
    // The code arrives at the stand-in through Herald's queue, and the page follows it: "Code sent".
    const delivery = await arrived(path);
    expect(delivery.problems).toEqual([]);
    const code = /Verification code: (\d{6})/.exec(delivery.body)?.[1] ?? "";
    expect(code).toMatch(/^\d{6}$/);
    await item.getByText("Code sent. Enter it here.").waitFor();
    await accessibleInBothThemes("Account → Channels, waiting for a code");

    // A wrong code first: said at the field, with the tries left.
    const wrong = String((Number(code) + 1) % 1_000_000).padStart(6, "0");
    await item.getByLabel("Verification code").fill(wrong);
    await item.getByRole("button", { name: "Verify" }).click();
    await item.getByText("Check the highlighted field.").waitFor();
    expect(await item.getByText(TargetMessages.incorrectCode).count()).toBe(1);
    expect(await item.getByLabel("Verification code").getAttribute("aria-invalid")).toBe("true");

    await item.getByLabel("Verification code").fill(code);
    await item.getByRole("button", { name: "Verify" }).click();
    await section().getByText("Channel “Team alerts” verified: your notifications go there now.").waitFor();
    expect(await item.getByText("Verified", { exact: true }).count()).toBe(1);
    expect(await item.getByLabel("Verification code").count()).toBe(0);
    const targets = (await api("GET", "/users/me/notification-targets")).body as unknown as { name: string; verified: boolean }[];
    expect(targets).toEqual([expect.objectContaining({ name: "Team alerts", verified: true })]);
    expect(problems).toEqual([]);
    await poll(() => requests.pending()).toEqual([]);
  });

  it("adds a webhook: its signing secret is shown once, and it signs the verification message", async () => {
    const path = "/webhook/dashboard";
    await addChannel("Webhook", "My receiver", path);
    const box = page.getByTestId("channel-secret");
    await box.waitFor();
    const secret = await box.getByLabel("Signing secret").inputValue();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const delivery = await arrived(path, secret);
    expect(delivery.signature).toBe("valid");
    expect(JSON.parse(delivery.body)).toMatchObject({ type: "target.verification" });
    await accessibleInBothThemes("Account → Channels, a webhook's secret");
    await box.getByRole("button", { name: "Done" }).click();
    await poll(() => box.count()).toBe(0);
    // Gone for good: neither a reload nor the API shows it again.
    await page.reload();
    await page.getByRole("heading", { name: "Channels", exact: true }).waitFor();
    await channel("My receiver").waitFor();
    expect(await page.content()).not.toContain(secret);
    expect(JSON.stringify((await api("GET", "/users/me/notification-targets")).body)).not.toContain(secret);
    await page.setViewportSize({ width: 360, height: 740 });
    await expectNoSidewaysScroll(page, "Account → Channels at 360 px");
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  it("refuses a URL elsewhere at the URL field, and removes a channel after asking", async () => {
    // Discord's own host: this deployment allows only the stand-ins' origin (docs/targets.md, "Outbound safety").
    await section().getByLabel("Kind").selectOption({ label: "Discord" });
    await section().getByLabel("Name", { exact: true }).fill("Elsewhere");
    await section().getByLabel("URL", { exact: true }).fill("https://discord.com/api/webhooks/1/abc");
    await section().getByRole("button", { name: "Add channel" }).click();
    const url = section().getByLabel("URL", { exact: true });
    await poll(() => url.getAttribute("aria-invalid")).toBe("true");
    expect(
      await section()
        .getByText(/The URL must be on an origin listed in OUTBOUND_ALLOWED_ORIGINS/)
        .count(),
    ).toBe(1);

    const item = channel("My receiver");
    await item.getByRole("button", { name: "Remove channel My receiver" }).click();
    await item.getByRole("button", { name: "Yes" }).click();
    await section().getByText("Channel “My receiver” removed.").waitFor();
    const targets = (await api("GET", "/users/me/notification-targets")).body as unknown as { name: string }[];
    expect(targets.map((t) => t.name)).toEqual(["Team alerts"]);
    expect(problems).toEqual([]);
    await poll(() => requests.pending()).toEqual([]);
  });

  it('Preferences → "Where each notification goes": a grid of templates × channels, mandatory ones locked on (docs/channels.md, "Channel preferences")', async () => {
    await page.goto(`${herald.url}/#/preferences`);
    const grid = page.getByTestId("channel-grid");
    await grid.waitFor();
    const headers = await grid.locator("thead th").allTextContents();
    expect(headers).toEqual(["Notification", "E-mail", "Push", "Team alerts"]);
    const templates = (await api("GET", "/notifications/templates/system")).body as unknown as { id: string; name: string }[];
    const mandatory = templates.find((t) => MANDATORY_TEMPLATE_IDS.includes(t.id as (typeof MANDATORY_TEMPLATE_IDS)[number]));
    const optional = templates.find((t) => !MANDATORY_TEMPLATE_IDS.includes(t.id as (typeof MANDATORY_TEMPLATE_IDS)[number]));
    if (!mandatory || !optional) throw new Error("no templates");
    const locked = grid.getByRole("checkbox", { name: `${mandatory.name} by Push` });
    expect(await locked.isChecked()).toBe(true);
    expect(await locked.isDisabled()).toBe(true);
    // A security notice never goes to the person's own channels: no switch there.
    expect(await grid.getByRole("checkbox", { name: `${mandatory.name} by Team alerts` }).count()).toBe(0);

    await grid.getByRole("checkbox", { name: `${optional.name} by Push` }).uncheck();
    await grid.getByRole("checkbox", { name: `${optional.name} by Team alerts` }).uncheck();
    await page.getByRole("button", { name: "Save channels" }).click();
    await page.getByText("Channels saved.").waitFor();
    const switches = (await api("GET", "/users/me/notifications/channels")).body as unknown as {
      template_id: string;
      channel: string;
      enabled: boolean;
    }[];
    expect(switches.filter((s) => !s.enabled).map((s) => [s.template_id, s.channel.replace(/:.*/, "")])).toEqual([
      [optional.id, "push"],
      [optional.id, "target"],
    ]);
    // What was saved is what the page shows after a reload.
    await page.reload();
    await grid.waitFor();
    expect(await grid.getByRole("checkbox", { name: `${optional.name} by Push` }).isChecked()).toBe(false);
    expect(await grid.getByRole("checkbox", { name: `${optional.name} by E-mail` }).isChecked()).toBe(true);
    await accessibleInBothThemes("Preferences, the channel grid");
    expect(problems).toEqual([]);
    await poll(() => requests.pending()).toEqual([]);
  });

  it('Preferences → "Where each notification goes": a save that fails says so in the alert, saves nothing, and Save again saves (docs/dashboard.md, "Errors")', async () => {
    await page.goto(`${herald.url}/#/preferences`);
    const grid = page.getByTestId("channel-grid");
    await grid.waitFor();
    const templates = (await api("GET", "/notifications/templates/system")).body as unknown as { id: string; name: string }[];
    const optional = templates.find((t) => !MANDATORY_TEMPLATE_IDS.includes(t.id as (typeof MANDATORY_TEMPLATE_IDS)[number]));
    if (!optional) throw new Error("no optional template");
    const stored = async () =>
      ((await api("GET", "/users/me/notifications/channels")).body as unknown as { template_id: string; channel: string; enabled: boolean }[])
        .filter((s) => !s.enabled)
        .map((s) => [s.template_id, s.channel.replace(/:.*/, "")])
        .sort();
    const before = await stored();
    const byEmail = `${optional.name} by E-mail`;
    expect(await grid.getByRole("checkbox", { name: byEmail }).isChecked()).toBe(true);

    // The save meets the answer Herald gives when something unexpected fails on its side (docs/api.md, "Conventions"):
    // a 500 in the error shape, whose detail is the request id. Only the PUT is answered so; the page's reads pass.
    const requestId = "e2e-channels-500";
    const refused: unknown[] = [];
    const failTheSave = async (route: Route) => {
      if (route.request().method() !== "PUT") return route.fallback();
      refused.push(route.request().postDataJSON());
      const body: ErrorBody = { message: Messages.internal, detail: Messages.requestId(requestId) };
      return route.fulfill({ status: 500, contentType: "application/json", headers: { "X-Request-Id": requestId }, body: JSON.stringify(body) });
    };
    const channelsUrl = `${herald.url}/api/v2/users/me/notifications/channels`;
    await page.route(channelsUrl, failTheSave);
    await grid.getByRole("checkbox", { name: byEmail }).uncheck();
    await page.getByRole("button", { name: "Save channels" }).click();
    const alert = page.getByRole("alert").filter({ hasText: Messages.internal });
    await alert.waitFor();
    expect(refused).toEqual([[{ template_id: optional.id, channel: "email", enabled: false }]]);
    // What the person reads: the API's message and the request id to quote, nothing claiming it was saved.
    expect(await alert.textContent()).toBe(`${Messages.internal} ${Messages.requestId(requestId)}`);
    expect(await page.getByText("Channels saved.").count()).toBe(0);
    expect(await page.getByRole("button", { name: "Saving…" }).count()).toBe(0);
    await accessibleInBothThemes("Preferences, the channel grid after a failed save");
    // Nothing changed: the API and a fresh view of the grid show the stored switch, on. The failed page keeps the
    // person's choice, unsaved, so that Save can send it again.
    expect(await stored()).toEqual(before);
    const fresh = await page.context().newPage();
    await fresh.goto(`${herald.url}/#/preferences`);
    await fresh.getByTestId("channel-grid").waitFor();
    expect(await fresh.getByTestId("channel-grid").getByRole("checkbox", { name: byEmail }).isChecked()).toBe(true);
    await fresh.close();
    expect(await grid.getByRole("checkbox", { name: byEmail }).isChecked()).toBe(false);

    // Herald answers again: Save sends the same switch, the alert goes, and it is saved.
    await page.unroute(channelsUrl, failTheSave);
    await page.getByRole("button", { name: "Save channels" }).click();
    await page.getByText("Channels saved.").waitFor();
    expect(await page.getByRole("alert").filter({ hasText: Messages.internal }).count()).toBe(0);
    expect(await stored()).toEqual([...before, [optional.id, "email"]].sort());
    await page.reload();
    await grid.waitFor();
    expect(await grid.getByRole("checkbox", { name: byEmail }).isChecked()).toBe(false);
    expect(problems).toEqual([]);
    await poll(() => requests.pending()).toEqual([]);
  });
});
