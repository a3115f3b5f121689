import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CaughtMessage } from "../../scripts/mail-catcher.mjs";
import { browserAvailable, expectAccessible, launchBrowser, watchConsole } from "./browser";
import { freePort, type RunningHerald, startHerald } from "./herald";

// E-mail locally (docs/deployment.md, "Running locally"): npm start's machinery without EMAIL_SMARTHOST starts the
// mail catcher and points Herald at it; with EMAIL_SMARTHOST set to nothing, no mail server is configured, and the
// dashboard says so (docs/dashboard.md, "Pages").

const OWNER = { email: "owner@local.test", username: "owner", password: "lantern-orchard-river-93" };

let withCatcher: RunningHerald;
let withoutMail: RunningHerald;
/** EMAIL_SMARTHOST names a port where nothing listens: configured, and every delivery fails. */
let unreachable: RunningHerald;
let browser: Browser | undefined;

const poll = <T>(probe: () => T | Promise<T>) => expect.poll(probe, { timeout: 30_000, interval: 200 });

/** Creates the owner on a fresh Herald and returns its session token. */
async function ownerSession(url: string): Promise<string> {
  const first = await fetch(`${url}/api/v2/users/first`, { method: "POST", body: JSON.stringify(OWNER) });
  expect(first.status).toBe(201);
  await first.arrayBuffer();
  const login = await fetch(`${url}/api/v2/users/login`, { method: "POST", body: JSON.stringify({ email: OWNER.email, password: OWNER.password }) });
  expect(login.status).toBe(201);
  return ((await login.json()) as { session_token: string }).session_token;
}

async function caught(mailUrl: string): Promise<Pick<CaughtMessage, "id" | "received_at" | "from" | "to" | "subject">[]> {
  return (
    (await (await fetch(`${mailUrl}/api/messages`)).json()) as { messages: Pick<CaughtMessage, "id" | "received_at" | "from" | "to" | "subject">[] }
  ).messages;
}

/** Signs the owner in through the dashboard's own form. */
async function signIn(page: Page, url: string): Promise<void> {
  await page.goto(url);
  await page.getByLabel("E-mail").fill(OWNER.email);
  await page.getByLabel("Password").fill(OWNER.password);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await page.getByRole("heading", { name: "Inbox", exact: true }).waitFor();
}

beforeAll(async () => {
  const [a, b, c, nobody] = [await freePort(), await freePort(), await freePort(), await freePort()];
  [withCatcher, withoutMail, unreachable] = await Promise.all([
    startHerald(a, {}, { mailCatcher: true }),
    startHerald(b, {}),
    startHerald(c, { EMAIL_SMARTHOST: `127.0.0.1:${nobody}`, EMAIL_TLS: "none" }),
  ]);
  if (browserAvailable) browser = await launchBrowser();
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await Promise.all([withCatcher?.stop(), withoutMail?.stop(), unreachable?.stop()]);
});

describe("npm start's mail catcher (docs/deployment.md)", () => {
  it("prints its page's address at start-up", () => {
    expect(withCatcher.mailUrl).toMatch(/^http:\/\/localhost:\d+$/);
    expect(withCatcher.output()).toContain(`Mail catcher: e-mail Herald sends is at ${withCatcher.mailUrl}`);
    expect(withoutMail.output()).not.toContain("Mail catcher");
  });

  it("catches the password-reset passcode, readable on its page and through its JSON API, and the passcode works (docs/deployment.md)", async () => {
    const mailUrl = withCatcher.mailUrl ?? "";
    await ownerSession(withCatcher.url);
    const methods = (await (await fetch(`${withCatcher.url}/api/v2/users/authmethods`)).json()) as {
      password: { reset_passcode_deliverable: boolean };
    };
    expect(methods.password.reset_passcode_deliverable).toBe(true);

    const request = await fetch(`${withCatcher.url}/api/v2/users/otp/request`, { method: "POST", body: JSON.stringify({ email: OWNER.email }) });
    expect(request.status).toBe(204);
    await poll(async () => (await caught(mailUrl)).filter((m) => m.to === OWNER.email && m.subject === "Reset your password").length).toBe(1);
    const [summary] = (await caught(mailUrl)).filter((m) => m.subject === "Reset your password");
    const message = (await (await fetch(`${mailUrl}/api/messages/${summary?.id}`)).json()) as CaughtMessage;
    expect(message.envelope.rcpt_to).toEqual([OWNER.email]);
    const code = /otp=([0-9a-f-]{36})/.exec(message.text)?.[1];
    expect(code, message.text).toBeDefined();
    expect(message.html).toContain(`otp=${code}`);

    // The list page names it, newest first; the message page escapes the text part and frames the HTML part in a
    // sandbox, from a response that sandboxes itself too.
    const list = await (await fetch(mailUrl)).text();
    expect(list).toContain(`href="/messages/${message.id}">Reset your password</a>`);
    const shown = await fetch(`${mailUrl}/messages/${message.id}`);
    expect(shown.headers.get("content-security-policy")).toContain("default-src 'none'");
    const body = await shown.text();
    expect(body).toContain(`<iframe sandbox title="The message's HTML part" src="/messages/${message.id}/html">`);
    expect(body).toContain(`otp=${code}`);
    const html = await fetch(`${mailUrl}/messages/${message.id}/html`);
    expect(html.headers.get("content-security-policy")).toMatch(/^sandbox; default-src 'none'/);
    await html.arrayBuffer();

    // The passcode is the real one: it sets a new password.
    const change = await fetch(`${withCatcher.url}/api/v2/users/otp/change-password`, {
      method: "POST",
      body: JSON.stringify({ email: OWNER.email, one_time_passcode: code, password: "quartz-meadow-lantern-5119" }),
    });
    expect(change.status).toBe(204);
    OWNER.password = "quartz-meadow-lantern-5119";
  });

  it("answers only for its own loopback name, so another site cannot read it through DNS rebinding", async () => {
    const { request } = await import("node:http");
    const port = new URL(withCatcher.mailUrl ?? "").port;
    const status = await new Promise<number | undefined>((resolve, reject) => {
      const req = request({ host: "127.0.0.1", port, path: "/api/messages", headers: { Host: `attacker.example:${port}` } }, (res) => {
        res.resume();
        resolve(res.statusCode);
      });
      req.on("error", reject);
      req.end();
    });
    expect(status).toBe(421);
  });

  it("the test notification reaches the catcher, and the Notifier page has no warning then (docs/dashboard.md)", async () => {
    const login = await fetch(`${withCatcher.url}/api/v2/users/login`, {
      method: "POST",
      body: JSON.stringify({ email: OWNER.email, password: OWNER.password }),
    });
    const { session_token: token } = (await login.json()) as { session_token: string };
    const sent = await fetch(`${withCatcher.url}/api/v2/notifications/test`, { method: "POST", headers: { "Service-Session-Token": token } });
    expect(sent.status).toBe(200);
    await sent.arrayBuffer();
    await poll(async () => (await caught(withCatcher.mailUrl ?? "")).some((m) => m.subject === "A test notification")).toBe(true);
    const configured = await fetch(`${withCatcher.url}/api/v2/notifications/dispatch-methods/configured`, {
      headers: { "Service-Session-Token": token },
    });
    expect(await configured.json()).toEqual({ smtp: true, webhook: false });
    if (!browser) return;
    const context = await browser.newContext();
    const page = await context.newPage();
    await signIn(page, withCatcher.url);
    // The warning is decided from the message log, read last: once it has arrived and been rendered, none is shown.
    const log = page.waitForResponse((r) => r.url().includes("/api/v2/notifications/messages"));
    await page.goto(`${withCatcher.url}/#/admin/notifier`);
    expect((await log).status()).toBe(200);
    await page.getByTestId("dispatch-methods").waitFor();
    await page.waitForTimeout(500);
    expect(await page.getByTestId("delivery-warning").count()).toBe(0);
    await context.close();
  });
});

describe.skipIf(!browserAvailable)("with no mail server, the dashboard says so (docs/dashboard.md)", () => {
  it("the Notifier page warns that e-mail is not configured, and the page is accessible in both themes (docs/dashboard.md)", async () => {
    const token = await ownerSession(withoutMail.url);
    const configured = await fetch(`${withoutMail.url}/api/v2/notifications/dispatch-methods/configured`, {
      headers: { "Service-Session-Token": token },
    });
    expect(await configured.json()).toEqual({ smtp: false, webhook: false });
    const context = await (browser as Browser).newContext();
    const page = await context.newPage();
    const problems = watchConsole(page);
    await signIn(page, withoutMail.url);
    await page.goto(`${withoutMail.url}/#/admin/notifier`);
    const warning = page.getByTestId("delivery-warning");
    await warning.waitFor();
    expect(await warning.textContent()).toContain("E-mail is not configured.");
    expect(await warning.textContent()).toContain("No EMAIL_SMARTHOST is set");
    await expectAccessible(page, "Notifier, e-mail not configured");
    await page.emulateMedia({ colorScheme: "dark" });
    await expectAccessible(page, "Notifier, e-mail not configured (dark)");
    expect(problems).toEqual([]);
    await context.close();
  });

  it("the Notifier page warns when the latest e-mail deliveries failed (docs/dashboard.md)", async () => {
    const token = await ownerSession(unreachable.url);
    const sent = await fetch(`${unreachable.url}/api/v2/notifications/test`, { method: "POST", headers: { "Service-Session-Token": token } });
    expect(sent.status).toBe(200);
    await sent.arrayBuffer();
    await poll(async () => {
      const res = await fetch(`${unreachable.url}/api/v2/notifications/messages?method=smtp`, { headers: { "Service-Session-Token": token } });
      return ((await res.json()) as { messages: { status: string }[] }).messages[0]?.status;
    }).toBe("temporary_failure");
    const context = await (browser as Browser).newContext();
    const page = await context.newPage();
    await signIn(page, unreachable.url);
    await page.goto(`${unreachable.url}/#/admin/notifier`);
    const warning = page.getByTestId("delivery-warning");
    await warning.waitFor();
    const text = await warning.textContent();
    expect(text).toContain("E-mail deliveries are failing.");
    expect(text).toContain("1 of the last 1 finished e-mail deliveries failed.");
    expect(text).toContain("failed and will be retried");
    await expectAccessible(page, "Notifier, e-mail failing");
    await context.close();
  });

  it("the password reset page says no passcode can be sent instead of promising one (docs/dashboard.md)", async () => {
    const context = await (browser as Browser).newContext();
    const page = await context.newPage();
    await page.goto(`${withoutMail.url}/#/reset-password`);
    const warning = page.getByTestId("reset-undeliverable");
    await warning.waitFor();
    expect(await warning.textContent()).toContain("No passcode can be sent.");
    expect(await page.getByRole("button", { name: "Send a passcode" }).count()).toBe(0);
    await expectAccessible(page, "Reset password, no mail server");
    await page.emulateMedia({ colorScheme: "dark" });
    await expectAccessible(page, "Reset password, no mail server (dark)");
    await context.close();
  });
});
