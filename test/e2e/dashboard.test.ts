import { mkdirSync } from "node:fs";
import path from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import PostalMime from "postal-mime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestProject } from "vitest/node";
import { browserAvailable, expectAccessible, expectNoSidewaysScroll, launchBrowser, trackRequests, watchConsole } from "./browser";
import { apiAs, freePort, type RunningHerald, startHerald } from "./herald";

// The dashboard (docs/dashboard.md) in a real Chromium against Herald started by npm start's machinery,
// with the real SMTP server and OpenID provider beside it. The journeys run in order, as one person's first day:
// set up, sign in, watch the inbox live, act on it, reset a password, sign in with OIDC, administer.
// With HERALD_SCREENSHOTS=<dir> (npm run docs:screenshots), each main page is also photographed, light and dark.

const SCREENSHOTS = process.env.HERALD_SCREENSHOTS;
const OWNER = { email: "ada@herald.test", username: "ada", name: "Ada Lovelace", password: "copper-meadow-lantern-81" };

let herald: RunningHerald;
let peers: Record<string, string | number>;
let stopPeers: () => Promise<void>;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let problems: string[];
let requests: ReturnType<typeof trackRequests>;
const axeResults: { label: string; violations: string[] }[] = [];

const control = async (route: string, body?: unknown) => {
  const init = body === undefined ? {} : { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) };
  return (await fetch(`http://127.0.0.1:${peers.peerPort}${route}`, init)).json() as Promise<unknown>;
};

/** Retries an assertion until it holds: what the page shows follows the API and the watch a moment later. */
const poll = <T>(probe: () => T | Promise<T>) => expect.poll(probe, { timeout: 20_000, interval: 100 });

/** Waits until the page shows no "Loading…" placeholder (the live watch keeps a socket open, so the network never idles). */
async function settled() {
  await poll(() => page.locator(".loading").count()).toBe(0);
}

/** Checks the page as it is now: no serious or critical axe violation, no sideways scroll; photographs it on request. */
async function checkPage(label: string) {
  await settled();
  axeResults.push(await expectAccessible(page, label));
  await expectNoSidewaysScroll(page, label);
  if (SCREENSHOTS) {
    mkdirSync(SCREENSHOTS, { recursive: true });
    const file = label.replace(/[^a-z0-9]+/gi, "-").toLowerCase();
    for (const scheme of ["light", "dark"] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      await page.screenshot({ path: path.join(SCREENSHOTS, `${file}-${scheme}.png`), fullPage: true });
    }
    await page.emulateMedia({ colorScheme: "light" });
  }
}

/** The same checks in the dark theme too: colour contrast is a property of each theme. */
async function checkBothThemes(label: string) {
  await checkPage(label);
  await page.emulateMedia({ colorScheme: "dark" });
  axeResults.push(await expectAccessible(page, `${label} (dark)`));
  await page.emulateMedia({ colorScheme: "light" });
}

beforeAll(async () => {
  const port = await freePort();
  process.env.HERALD_ACCESS_URL = `http://localhost:${port}`;
  // Imported after HERALD_ACCESS_URL is set: the OpenID provider registers Herald's callback URL from it.
  const { default: setup } = await import("../peers/global-setup");
  peers = {};
  stopPeers = await setup({ provide: (key: string, value: string | number) => (peers[key] = value) } as unknown as TestProject);
  herald = await startHerald(port, {
    EMAIL_SMARTHOST: `127.0.0.1:${peers.smtpPort}`,
    EMAIL_TLS: "none",
    EMAIL_FROM: "herald@herald.test",
    EMAIL_USERNAME: "herald",
    EMAIL_PASSWORD: "e2e-smtp-password",
    OIDC_ISSUER_URL: String(peers.oidcIssuer),
    OIDC_CLIENT_ID: "herald",
    OIDC_CLIENT_SECRET: "herald-oidc-secret",
    OIDC_SIGN_IN_TEXT: "Sign in with Acme SSO",
  });
  browser = await launchBrowser();
  context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  page = await context.newPage();
  problems = watchConsole(page);
  requests = trackRequests(page);
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await herald?.stop();
  await stopPeers?.();
  if (axeResults.length > 0)
    console.log(
      `axe-core, pages checked: ${axeResults.length}\n${axeResults.map((r) => `  ${r.label}: ${r.violations.join(", ") || "no violations"}`).join("\n")}`,
    );
});

describe.skipIf(!browserAvailable)("the dashboard in Chromium (docs/dashboard.md)", () => {
  it("first-user setup: a fresh Herald asks for the owner account, then signs it in to the inbox", async () => {
    await page.goto(herald.url);
    await page.getByRole("heading", { name: "Set up Herald" }).waitFor();
    // Every request of the load ends, the 404 that says no owner exists yet included: the page goes quiet.
    await poll(() => requests.pending()).toEqual([]);
    await checkBothThemes("Setup");
    await page.getByLabel("E-mail").fill(OWNER.email);
    await page.getByLabel("Username").fill(OWNER.username);
    await page.getByLabel("Name (optional)").fill(OWNER.name);
    await page.getByLabel("Password").fill(OWNER.password);
    await page.getByRole("button", { name: "Create the owner account" }).click();
    await page.getByRole("heading", { name: "Inbox", exact: true }).waitFor();
    expect(new URL(page.url()).hash).toBe("#/inbox");
    // The session is the HttpOnly cookie: no script can read it, and nothing is kept in storage or the URL.
    const cookies = await context.cookies(herald.url);
    expect(cookies.find((c) => c.name === "service_session_token")).toMatchObject({ httpOnly: true, sameSite: "Lax" });
    expect(await page.evaluate(() => document.cookie)).not.toContain("service_session_token");
    expect(await page.evaluate(() => ({ local: localStorage.length, session: sessionStorage.length }))).toEqual({ local: 0, session: 0 });
    // The API agrees: the owner exists.
    const first = await fetch(`${herald.url}/api/v2/users/first`);
    expect(first.status).toBe(200);
    await first.arrayBuffer();
  });

  it("sign-out and sign-in with a password, from the keyboard alone", async () => {
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("heading", { name: "Sign in to Herald" }).waitFor();
    await checkBothThemes("Sign in");
    // The configured OpenID provider's button is there, with its configured text.
    expect(await page.getByRole("link", { name: "Sign in with Acme SSO" }).count()).toBe(1);
    await page.getByLabel("E-mail").focus();
    await page.keyboard.type(OWNER.email);
    await page.keyboard.press("Tab");
    await page.keyboard.type("wrong-password-entirely");
    await page.keyboard.press("Enter");
    await page.getByRole("alert").waitFor();
    expect(await page.getByRole("alert").textContent()).toContain("Incorrect email or password.");
    await page.getByLabel("Password").fill("");
    await page.getByLabel("Password").focus();
    await page.keyboard.type(OWNER.password);
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { name: "Inbox", exact: true }).waitFor();
    await poll(() => requests.pending()).toEqual([]);
  });

  it("a notification sent through the API appears live, with the badge and the tab title counting it", async () => {
    const api = await apiAs(herald.url, OWNER);
    await page.locator(".live-open").waitFor();
    expect(await page.getByTestId("unread-badge").count()).toBe(0);
    expect(
      (
        await api("POST", "/notifications/custom", {
          content: { title: "Deploy **finished**", message: "See [the logs](https://ci.example.com/42)." },
        })
      ).status,
    ).toBe(204);
    const item = page.getByTestId("inbox-item").first();
    await item.waitFor();
    expect(await item.textContent()).toContain("Deploy finished");
    await poll(() => page.getByTestId("unread-badge").textContent()).toContain("1");
    await poll(() => page.title()).toMatch(/^\(1\) /);
    expect(
      (await api("POST", "/notifications/custom", { content: { title: "Backup complete", message: "All 12 databases are saved." } })).status,
    ).toBe(204);
    await poll(() => page.getByTestId("unread-badge").textContent()).toContain("2");
    await poll(() => page.title()).toMatch(/^\(2\) /);
    await checkBothThemes("Inbox");
  });

  it("read and archive in the dashboard are what the API then reports", async () => {
    const api = await apiAs(herald.url, OWNER);
    const first = page.getByTestId("inbox-item").filter({ hasText: "Deploy finished" });
    const id = await first.getAttribute("data-id");
    // Each row's actions are behind its one menu button (docs/dashboard.md, "The inbox").
    await first.getByRole("button", { name: /^Actions for/ }).click();
    await first.getByRole("button", { name: "Mark read" }).click();
    await poll(() => first.getAttribute("data-unread")).toBe("false");
    await poll(async () => (await api("GET", "/notifications/inbox/counts")).body.unread).toBe(1);
    await poll(() => page.getByTestId("unread-badge").textContent()).toContain("1");
    const second = page.getByTestId("inbox-item").filter({ hasText: "Backup complete" });
    const secondId = await second.getAttribute("data-id");
    await second.getByRole("button", { name: /^Actions for/ }).click();
    await second.getByRole("button", { name: "Archive" }).click();
    await poll(async () => (await api("GET", "/notifications/inbox/counts")).body).toMatchObject({ unread: 0, archived: 1 });
    const listed = (await api("GET", "/notifications/inbox?archived=include")).body.notifications as {
      id: string;
      read_at: string | null;
      archived_at: string | null;
    }[];
    expect(listed.find((n) => n.id === id)?.read_at).not.toBeNull();
    expect(listed.find((n) => n.id === secondId)?.archived_at).not.toBeNull();
    // Archived items leave the inbox view; the badge is gone with the last unread one.
    await poll(() => page.getByTestId("inbox-item").filter({ hasText: "Backup complete" }).count()).toBe(0);
    await poll(() => page.getByTestId("unread-badge").count()).toBe(0);
    // A change made elsewhere (the API) reaches the open page too.
    expect((await api("PUT", `/notifications/inbox/${id}/read-status`, { is_read: false })).status).toBe(200);
    await poll(() => first.getAttribute("data-unread")).toBe("true");
    await poll(() => page.getByTestId("unread-badge").textContent()).toContain("1");
  });

  it("the other pages of a signed-in owner are accessible, in both themes and at 360 px", async () => {
    for (const [hash, heading] of [
      ["#/preferences", "Preferences"],
      ["#/account", "Account"],
      ["#/admin/users", "Users"],
      ["#/admin/notifier", "Notifier"],
      ["#/admin/templates", "Templates"],
      ["#/admin/messages", "Message log"],
      ["#/admin/broadcasts", "Broadcasts"],
      ["#/audit", "Audit log"],
    ] as const) {
      await page.goto(`${herald.url}/${hash}`);
      await page.getByRole("heading", { name: heading, exact: true }).waitFor();
      await checkBothThemes(heading);
    }
    await page.setViewportSize({ width: 360, height: 740 });
    for (const hash of ["#/inbox", "#/preferences", "#/account", "#/admin/users", "#/admin/messages", "#/admin/broadcasts", "#/audit"]) {
      await page.goto(`${herald.url}/${hash}`);
      await page.locator("h1").waitFor();
      await settled();
      await expectNoSidewaysScroll(page, `${hash} at 360 px`);
    }
    if (SCREENSHOTS) {
      await page.goto(`${herald.url}/#/inbox`);
      await page.getByTestId("inbox-item").first().waitFor();
      await page.screenshot({ path: path.join(SCREENSHOTS, "inbox-360-light.png") });
    }
    await page.setViewportSize({ width: 1280, height: 800 });
    // The theme picker overrides the system's choice, and its choice (nothing else) is remembered across loads.
    const background = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    const light = await background();
    await page.getByLabel("Theme").selectOption("dark");
    await poll(background).not.toBe(light);
    await page.reload();
    await page.locator("h1").waitFor();
    await poll(background).not.toBe(light);
    expect(await page.evaluate(() => Object.keys(localStorage))).toEqual(["herald-theme"]);
    await page.getByLabel("Theme").selectOption("system");
    await poll(background).toBe(light);
    expect(await page.evaluate(() => localStorage.length)).toBe(0);
  });

  it("an owner pauses and resumes the notifier, and the API agrees", async () => {
    const api = await apiAs(herald.url, OWNER);
    await page.goto(`${herald.url}/#/admin/notifier`);
    await page.getByRole("button", { name: "Pause delivery" }).click();
    await poll(async () => (await api("GET", "/notifications/settings")).body.notifier_paused).toBe(true);
    await poll(() => page.getByTestId("notifier-state").textContent()).toMatch(/paused/i);
    await page.getByRole("button", { name: "Resume delivery" }).click();
    await poll(async () => (await api("GET", "/notifications/settings")).body.notifier_paused).toBe(false);
  });

  it("an owner sends a broadcast and watches it complete; it lands live in the owner's own inbox", async () => {
    const api = await apiAs(herald.url, OWNER);
    await page.goto(`${herald.url}/#/admin/broadcasts`);
    const form = page.getByTestId("broadcast-form");
    await form.getByLabel("Everyone").check();
    await form.getByLabel("Title").fill("Maintenance tonight");
    await form.getByLabel("Message").fill("The service restarts at **22:00 UTC**.");
    // A double click sends one broadcast: the form's Idempotency-Key is the same for both.
    await form.getByRole("button", { name: "Send broadcast" }).dblclick();
    await page.getByText(/Broadcast accepted for 1 recipient/).waitFor();
    const row = page.getByTestId("broadcast-row").filter({ hasText: "Maintenance tonight" });
    await poll(() => row.getAttribute("data-completed")).toBe("true");
    const listed = (await api("GET", "/notifications/broadcasts")).body.broadcasts as { id: string; delivered: number }[];
    expect(listed).toHaveLength(1);
    expect(listed[0]?.delivered).toBe(1);
    await checkPage("Broadcasts");
    await page.goto(`${herald.url}/#/inbox`);
    await page.getByTestId("inbox-item").filter({ hasText: "Maintenance tonight" }).waitFor();
  });

  it("forgot password: a passcode by e-mail (the real SMTP server) sets a new password, which then signs in", async () => {
    const api = await apiAs(herald.url, OWNER);
    const member = { email: "grace@herald.test", username: "grace", password: "harbour-violet-quartz-29" };
    expect((await api("POST", "/users", { ...member, login_type: "password" })).status).toBe(201);
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("link", { name: "Forgot your password?" }).click();
    await page.getByRole("heading", { name: "Reset your password" }).waitFor();
    await checkPage("Reset password");
    await page.getByLabel("E-mail").fill(member.email);
    await page.getByRole("button", { name: "Send a passcode" }).click();
    await page.getByLabel("Passcode").waitFor();
    // The e-mail's link opens the dashboard with the passcode filled in, and takes it out of the address bar.
    let link = "";
    await poll(async () => {
      const emails = (await control("/control/emails")) as { rcptTo: string[]; raw: string }[];
      for (const mail of emails.filter((m) => m.rcptTo.includes(member.email))) {
        // The link a person clicks: the HTML part's href.
        const html = (await PostalMime.parse(mail.raw)).html ?? "";
        link = /href="(http:\/\/[^"]+\/reset-password\/change\?otp=[^"]+)"/.exec(html)?.[1]?.replaceAll("&amp;", "&") ?? link;
      }
      return link;
    }).not.toBe("");
    await page.goto(link);
    await page.getByRole("heading", { name: "Reset your password" }).waitFor();
    expect(page.url()).toBe(`${herald.url}/#/reset-password`);
    expect(await page.getByLabel("Passcode").inputValue()).toMatch(/^[0-9a-f-]{36}$/);
    // The link carries no address (drizzle/0004): the person types it.
    expect(await page.getByLabel("E-mail").inputValue()).toBe("");
    await page.getByLabel("E-mail").fill(member.email);
    const fresh = "lilac-ember-summit-64";
    await page.getByLabel("New password").fill(fresh);
    await page.getByRole("button", { name: "Set the new password" }).click();
    await page.getByText("Your password is changed").or(page.getByRole("alert")).waitFor();
    expect(await page.getByRole("alert").count(), (await page.locator("main").textContent()) ?? "").toBe(0);
    await page.getByRole("link", { name: "Back to sign-in" }).click();
    await page.getByLabel("E-mail").fill(member.email);
    await page.getByLabel("Password").fill(fresh);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.getByRole("heading", { name: "Inbox", exact: true }).waitFor();
    // A member has no administration pages.
    expect(await page.getByRole("link", { name: "Users" }).count()).toBe(0);
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("heading", { name: "Sign in to Herald" }).waitFor();
  });

  it("OIDC sign-in through the real OpenID provider returns to the dashboard, signed in", async () => {
    const api = await apiAs(herald.url, OWNER);
    expect((await api("POST", "/users", { email: "ida@herald.test", username: "ida", login_type: "oidc" })).status).toBe(201);
    await control("/control/oidc/next-login", { sub: "dashboard-oidc-1", email: "ida@herald.test", email_verified: true, name: "Ida" });
    await page.getByRole("link", { name: "Sign in with Acme SSO" }).click();
    await page.getByRole("heading", { name: "Inbox", exact: true }).waitFor({ timeout: 30_000 });
    expect(new URL(page.url()).origin).toBe(herald.url);
    await page.getByRole("link", { name: "Account" }).click();
    await page.getByRole("heading", { name: "Account", exact: true }).waitFor();
    expect(await page.locator("main").textContent()).toContain("ida");
  });

  it("a session ended elsewhere (an owner ends it) sends the open dashboard back to sign-in", async () => {
    const api = await apiAs(herald.url, OWNER);
    expect((await api("DELETE", "/users/ida/keys/sessions")).status).toBe(204);
    // The watch is closed with 4401, and the next call answers 401: either way the page goes back to sign-in.
    await page.getByRole("link", { name: "Preferences" }).click();
    await page.getByRole("heading", { name: "Sign in to Herald" }).waitFor();
    expect(new URL(page.url()).hash).toBe("#/sign-in");
  });

  it("loaded nothing the Content-Security-Policy refused, and threw nothing", () => {
    expect(problems).toEqual([]);
  });
});
