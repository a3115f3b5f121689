import { randomBytes } from "node:crypto";
import type { Browser, BrowserContext, Page } from "playwright-core";
import PostalMime, { type Email } from "postal-mime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestProject } from "vitest/node";
import { AuthMessages } from "../../src/auth/messages";
import { SecurityMessages } from "../../src/security/messages";
import { NOT_ME_LIFETIME_MS, signNotMeToken } from "../../src/security/not-me-token";
import { browserAvailable, expectAccessible, expectNoSidewaysScroll, launchBrowser, watchConsole } from "./browser";
import { freePort, type RunningHerald, startHerald } from "./herald";

// "This wasn't me" end to end (docs/security.md, "Security notices"; docs/dashboard.md, "This wasn't me"): Herald
// started by npm start's machinery, the real SMTP peer receiving its e-mail, a WebSocket watch over real HTTP, and the
// notice's link opened in a real Chromium. The journeys run in order, as one person's bad day: a sign-in they did not
// make, the notice, the lock, the passcode, and back in.

const OWNER = { email: "ada@herald.test", username: "ada", password: "copper-meadow-lantern-81" };
const LIN = { email: "lin@herald.test", username: "lin", password: "Amber-Quarry-Kestrel-47" };
const NEW_PASSWORD = "Harbour-Quartz-Meadow-62";
const FIREFOX_LINUX = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0";
const CHROME_MAC = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
/** A device name holding markup, as no notice writes one: the page must show it as it is. */
const HOSTILE_DEVICE = `<img src=x onerror="document.title='owned'">Firefox 133 on Linux`;
/** The deployment's SECRET_KEY, known here only to sign the expired link a week-old notice would carry. */
const SECRET_KEY = randomBytes(32).toString("hex");

let herald: RunningHerald;
let peers: Record<string, string | number>;
let stopPeers: () => Promise<void>;
let browser: Browser | undefined;
const contexts: BrowserContext[] = [];

/** Retries an assertion until it holds: e-mail and notices are sent after the response. */
const poll = <T>(probe: () => T | Promise<T>) => expect.poll(probe, { timeout: 30_000, interval: 100 });

beforeAll(async () => {
  const port = await freePort();
  process.env.HERALD_ACCESS_URL = `http://localhost:${port}`;
  const { default: setup } = await import("../peers/global-setup");
  peers = {};
  stopPeers = await setup({ provide: (key: string, value: string | number) => (peers[key] = value) } as unknown as TestProject);
  herald = await startHerald(port, {
    SECRET_KEY,
    EMAIL_SMARTHOST: `127.0.0.1:${peers.smtpPort}`,
    EMAIL_TLS: "none",
    EMAIL_FROM: "herald@herald.test",
    EMAIL_USERNAME: "herald",
    EMAIL_PASSWORD: "e2e-smtp-password",
  });
  if (browserAvailable) browser = await launchBrowser();
}, 240_000);

afterAll(async () => {
  for (const context of contexts) await context.close();
  await browser?.close();
  await herald?.stop();
  await stopPeers?.();
});

// --- Herald over HTTP -----------------------------------------------------------------------------------------------

async function api(method: string, route: string, options: { token?: string; body?: unknown; userAgent?: string } = {}) {
  const headers: Record<string, string> = { "Content-Type": "application/json" };
  if (options.token) headers["Service-Session-Token"] = options.token;
  if (options.userAgent) headers["User-Agent"] = options.userAgent;
  const res = await fetch(`${herald.url}/api/v2${route}`, {
    method,
    headers,
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as Record<string, unknown> };
}

async function signIn(who: { email: string; password: string }, userAgent: string): Promise<string> {
  const res = await api("POST", "/users/login", { body: { email: who.email, password: who.password }, userAgent });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.session_token as string;
}

interface Frame {
  notification?: { title: string; template_id: string; actions: { label: string; url: string }[] };
}

/** A watch of the inbox over a real WebSocket, opened with a token the way every client opens it (docs/api.md, "Watching the inbox"). */
async function openWatch(token: string) {
  const url = `${herald.url.replace(/^http/, "ws")}/api/v2/notifications/inbox/watch?format=markdown`;
  const socket = new WebSocket(url, ["herald.v1", `herald.token.${token}`]);
  const frames: { frame: Frame; at: number }[] = [];
  socket.addEventListener("message", (event) => {
    if (typeof event.data === "string" && event.data !== "pong") frames.push({ frame: JSON.parse(event.data) as Frame, at: performance.now() });
  });
  const closed = new Promise<{ code: number }>((resolve) => socket.addEventListener("close", (event) => resolve({ code: event.code })));
  await new Promise<void>((resolve, reject) => {
    socket.addEventListener("open", () => resolve(), { once: true });
    socket.addEventListener("error", () => reject(new Error("the watch did not open")), { once: true });
  });
  /**
   * When the server's close frame arrived: the socket is CLOSING from then on. The close event, with its code, comes
   * only once the TCP connection ends, which wrangler dev's local proxy holds open for about 10 s more.
   */
  const closing = async () => {
    await expect.poll(() => socket.readyState, { timeout: 10_000, interval: 5 }).toBeGreaterThanOrEqual(WebSocket.CLOSING);
    return performance.now();
  };
  return { frames, closed, closing };
}

// --- The SMTP peer --------------------------------------------------------------------------------------------------

/** Every message the SMTP peer accepted for `address` whose subject is `subject`, parsed, oldest first. */
async function mailTo(address: string, subject: string): Promise<Email[]> {
  const res = await fetch(`http://127.0.0.1:${peers.peerPort}/control/emails`);
  const recorded = (await res.json()) as { rcptTo: string[]; raw: string }[];
  const parsed = await Promise.all(recorded.filter((m) => m.rcptTo.includes(address)).map((m) => PostalMime.parse(m.raw)));
  return parsed.filter((m) => m.subject === subject);
}

/** The href of the HTML part's link whose text is `label`: the link a person clicks. */
function linkIn(mail: Email, label: string): string {
  const html = mail.html ?? "";
  const anchors = [...html.matchAll(/<a\b[^>]*\bhref="([^"]+)"[^>]*>([\s\S]*?)<\/a>/g)];
  const decode = (s: string) =>
    s
      .replace(/<[^>]+>/g, "")
      .replaceAll("&amp;", "&")
      .replaceAll("&#39;", "'")
      .replaceAll("&#x27;", "'")
      .replaceAll("&quot;", '"')
      .trim();
  const found = anchors.find(([, , text]) => decode(text ?? "") === label);
  if (!found?.[1]) throw new Error(`no link "${label}" in ${html}`);
  return decode(found[1]);
}

// --- The browser ----------------------------------------------------------------------------------------------------

/** A browser of its own, with the given session cookie if any, its script errors and every URL it requested recorded. */
async function newPage(sessionToken?: string): Promise<{ page: Page; problems: string[]; requested: string[] }> {
  const context = await (browser as Browser).newContext({ viewport: { width: 1280, height: 800 } });
  contexts.push(context);
  if (sessionToken) await context.addCookies([{ name: "service_session_token", value: sessionToken, url: herald.url }]);
  const page = await context.newPage();
  const requested: string[] = [];
  page.on("request", (request) => requested.push(request.url()));
  return { page, problems: watchConsole(page), requested };
}

/** What the journeys pass on to the next. */
const story: {
  linToken?: string;
  intruderToken?: string;
  apiToken?: string;
  watch?: Awaited<ReturnType<typeof openWatch>>;
  link?: string;
} = {};

describe.skipIf(!browserAvailable)("This wasn't me, from the notice to signing in again (docs/dashboard.md, \"This wasn't me\")", () => {
  it("a sign-in from a new device: the New sign-in notice arrives as a watch frame and by e-mail, with the same link", async () => {
    expect((await api("POST", "/users/first", { body: OWNER })).status).toBe(201);
    const owner = await signIn(OWNER, FIREFOX_LINUX);
    expect((await api("POST", "/users", { token: owner, body: { ...LIN, login_type: "password" } })).status).toBe(201);

    // Lin's own sign-in, the account's first: nothing to compare with, so no notice (docs/security.md, "Devices").
    story.linToken = await signIn(LIN, FIREFOX_LINUX);
    const me = await api("GET", "/users/me", { token: story.linToken });
    const created = await api("POST", `/users/${me.body.id}/keys/tokens`, { token: story.linToken, body: { token_name: "ci" } });
    expect(created.status).toBe(201);
    story.apiToken = created.body.key as string;
    story.watch = await openWatch(story.linToken);

    // Someone else, with Lin's password, from a browser the account has never used.
    const started = performance.now();
    story.intruderToken = await signIn(LIN, CHROME_MAC);
    const title = "New sign-in to your account";
    await poll(() => story.watch?.frames.filter(({ frame }) => frame.notification?.title === title).length).toBe(1);
    const arrived = story.watch.frames.find(({ frame }) => frame.notification?.title === title);
    console.log(`sign-in → New sign-in frame on the open watch: ${((arrived?.at ?? 0) - started).toFixed(0)} ms`);
    const action = arrived?.frame.notification?.actions.find((a) => a.label === "This wasn't me");
    expect(action?.url).toMatch(new RegExp(`^${herald.url}/not-me#[A-Za-z0-9_-]+\\.[0-9a-f]+$`));

    await poll(async () => (await mailTo(LIN.email, title)).length).toBe(1);
    const [mail] = await mailTo(LIN.email, title);
    expect(mail?.text).toContain("Chrome 131 on macOS");
    story.link = linkIn(mail as Email, "This wasn't me");
    // The token rides in the fragment, never in a query: no server or proxy log sees it.
    expect(new URL(story.link).search).toBe("");
    expect(story.link).toBe(action?.url);
  });

  it("the link opens the page that explains the event and what confirming does, the token out of the address bar and every request", async () => {
    const link = story.link as string;
    const token = decodeURIComponent(new URL(link).hash.slice(1));
    // This browser holds Lin's own session (the cookie): the page works signed in as well, and shows no signed-in frame.
    const { page, problems, requested } = await newPage(story.linToken);
    await page.goto(link);
    await page.getByRole("heading", { name: "Was this you?" }).waitFor();
    expect(page.url()).toBe(`${herald.url}/#/not-me`);
    const event = page.getByTestId("not-me-event");
    expect(await event.textContent()).toContain("A sign-in from a new device");
    expect(await event.textContent()).toContain("Chrome 131 on macOS");
    const confirm = page.getByRole("button", { name: "It wasn't me: lock my account" });
    const explained = await page.locator("main").textContent();
    for (const said of ["including this browser's", "passcode, which is e-mailed to you now", "It cannot undo what was already done"]) {
      expect(explained).toContain(said);
    }
    expect(await page.getByRole("button", { name: "Sign out" }).count()).toBe(0);
    await expectAccessible(page, "This wasn't me");
    await page.emulateMedia({ colorScheme: "dark" });
    await expectAccessible(page, "This wasn't me (dark)");
    await page.emulateMedia({ colorScheme: "light" });
    await page.setViewportSize({ width: 360, height: 740 });
    await expectNoSidewaysScroll(page, "This wasn't me at 360 px");
    await page.setViewportSize({ width: 1280, height: 800 });

    // Confirmed: the POST carries the token in its body; no URL the browser asked for ever held it.
    const answer = page.waitForResponse((res) => res.url().endsWith("/api/v2/users/not-me"));
    const clicked = performance.now();
    await confirm.click();
    const res = await answer;
    expect(res.status()).toBe(200);
    expect(res.request().postDataJSON()).toEqual({ token });
    // Lin's own session (this browser's too) and the intruder's, and the API token.
    expect(await res.json()).toEqual({ revoked_sessions: 2, revoked_tokens: 1 });
    await page.getByRole("heading", { name: "Your account is locked" }).waitFor();
    expect(await page.getByTestId("not-me-done").textContent()).toContain("Ended 2 sessions and 1 API token.");
    expect(await page.getByText("Check your e-mail for a passcode.").count()).toBe(1);
    expect(requested.filter((url) => url.includes(token.split(".")[1] ?? token))).toEqual([]);
    await expectAccessible(page, "This wasn't me, confirmed");

    // The open watch is closed by the server as soon as the report commits, with 4401 (checked once the socket is
    // gone, below).
    const watch = story.watch as Awaited<ReturnType<typeof openWatch>>;
    const closing = await watch.closing();
    console.log(`This wasn't me confirmed → the open watch's close frame: ${(closing - clicked).toFixed(0)} ms after the click`);
    // Every token ends: Lin's session, the intruder's and the API token.
    for (const credential of [story.linToken, story.intruderToken, story.apiToken]) {
      expect((await api("GET", "/users/me", { token: credential })).status).toBe(401);
    }
    // The password, which the intruder knows, no longer signs in.
    const refused = await api("POST", "/users/login", { body: { email: LIN.email, password: LIN.password }, userAgent: CHROME_MAC });
    expect(refused.status).toBe(401);
    expect(refused.body.message).toBe(AuthMessages.passwordMustBeReset);
    // The way on: the reset page, ready for the passcode already sent (asking for another would replace it).
    await page.getByRole("link", { name: "Set a new password" }).click();
    await page.getByRole("heading", { name: "Reset your password" }).waitFor();
    await page.getByLabel("Passcode").waitFor();
    expect(await page.getByRole("button", { name: "Send a passcode" }).count()).toBe(0);
    // The dashboard does not act signed in: its session was among those ended.
    await page.goto(`${herald.url}/#/inbox`);
    await page.getByRole("heading", { name: "Sign in to Herald" }).waitFor();
    expect(problems).toEqual([]);
    expect((await watch.closed).code).toBe(4401);
  });

  it("the passcode e-mailed at once resets the password on the dashboard's reset page, and the new password signs in", async () => {
    await poll(async () => (await mailTo(LIN.email, "Reset your password")).length).toBe(1);
    const [mail] = await mailTo(LIN.email, "Reset your password");
    const code = /otp=([0-9a-f-]{36})/.exec(mail?.text ?? "")?.[1];
    expect(code, mail?.text).toBeDefined();

    // Where the confirmed page's "Set a new password" leads, in a browser of its own.
    const { page, problems } = await newPage();
    await page.goto(`${herald.url}/#/reset-password?passcode=sent`);
    await page.getByRole("heading", { name: "Reset your password" }).waitFor();
    expect(await page.getByRole("button", { name: "Send a passcode" }).count()).toBe(0);
    await page.getByLabel("E-mail").fill(LIN.email);
    await page.getByLabel("Passcode").fill(code as string);
    await page.getByLabel("New password").fill(NEW_PASSWORD);
    await page.getByRole("button", { name: "Set the new password" }).click();
    await page.getByText("Your password is changed").waitFor();
    expect(problems).toEqual([]);

    expect((await api("POST", "/users/login", { body: { email: LIN.email, password: LIN.password } })).status).toBe(401);
    await signIn({ email: LIN.email, password: NEW_PASSWORD }, FIREFOX_LINUX);
  });

  it("the same link again is refused (400), in the page with what to do next, and over the API", async () => {
    const link = story.link as string;
    const { page, problems } = await newPage();
    await page.goto(link);
    await page.getByRole("button", { name: "It wasn't me: lock my account" }).click();
    await page.getByRole("heading", { name: "This link does not work" }).waitFor();
    const shown = page.getByTestId("not-me-bad-link");
    expect(await shown.textContent()).toContain(SecurityMessages.badNotMeLink);
    // Never a dead end: the ways on are there.
    await shown.getByRole("link", { name: "Reset your password" }).waitFor();
    await shown.getByRole("link", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "Sign in to Herald" }).waitFor();
    expect(problems).toEqual([]);

    const again = await api("POST", "/users/not-me", { body: { token: decodeURIComponent(new URL(link).hash.slice(1)) } });
    expect(again.status).toBe(400);
    expect(again.body.message).toBe(SecurityMessages.badNotMeLink);
    // And it ended nothing: the new password still signs in.
    await signIn({ email: LIN.email, password: NEW_PASSWORD }, FIREFOX_LINUX);
  });

  it("a forged or an expired link is refused (400), in the page and over the API, and ends nothing", async () => {
    const session = await signIn({ email: LIN.email, password: NEW_PASSWORD }, FIREFOX_LINUX);
    const me = await api("GET", "/users/me", { token: session });
    const token = decodeURIComponent(new URL(story.link as string).hash.slice(1));
    const [body = "", mac = ""] = token.split(".");
    // A real link's body with another event id written in (a link that would work again): the signature no longer holds.
    const claims = JSON.parse(Buffer.from(body, "base64url").toString()) as { v: Record<string, unknown>; exp: number };
    const forgedBody = Buffer.from(JSON.stringify({ ...claims, v: { ...claims.v, eventId: crypto.randomUUID() } })).toString("base64url");
    const forged = `${forgedBody}.${mac}`;
    const expired = await signNotMeToken(SECRET_KEY, {
      userId: me.body.id as string,
      eventId: crypto.randomUUID(),
      event: "password_changed",
      at: Date.now() - NOT_ME_LIFETIME_MS - 60_000,
      // What the page shows of a link is text, whatever the link holds (docs/dashboard.md, "This wasn't me").
      device: HOSTILE_DEVICE,
      place: "an unknown place",
    });
    for (const [label, bad] of [
      ["forged", forged],
      ["expired", expired],
    ] as const) {
      const res = await api("POST", "/users/not-me", { body: { token: bad } });
      expect(res.status, label).toBe(400);
      expect(res.body.message, label).toBe(SecurityMessages.badNotMeLink);

      const { page, problems } = await newPage();
      await page.goto(`${herald.url}/not-me#${bad}`);
      await page.getByRole("heading", { name: "Was this you?" }).waitFor();
      if (label === "expired") {
        expect(await page.getByTestId("not-me-event").textContent()).toContain(HOSTILE_DEVICE);
        expect(await page.locator("main img").count()).toBe(0);
      }
      await page.getByRole("button", { name: "It wasn't me: lock my account" }).click();
      await page.getByRole("heading", { name: "This link does not work" }).waitFor();
      if (label === "expired") await expectAccessible(page, "This wasn't me, a link that does not work");
      expect(problems, label).toEqual([]);
    }
    expect((await api("GET", "/users/me", { token: session })).status).toBe(200);
  });

  it("Account → Sessions names each session's device and place, marks this browser, and ends the others", async () => {
    const intruder = await signIn({ email: LIN.email, password: NEW_PASSWORD }, CHROME_MAC);
    const { page, problems } = await newPage();
    await page.goto(`${herald.url}/#/sign-in`);
    await page.getByLabel("E-mail").fill(LIN.email);
    await page.getByLabel("Password").fill(NEW_PASSWORD);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.getByRole("heading", { name: "Inbox", exact: true }).waitFor();
    await page.goto(`${herald.url}/#/account`);
    const sessions = page.getByTestId("session");
    await poll(() => sessions.count()).toBeGreaterThanOrEqual(3);
    const current = page.locator('[data-testid="session"][data-current="true"]');
    expect(await current.textContent()).toContain("This browser");
    const mac = sessions.filter({ hasText: "Chrome 131 on macOS" });
    expect(await mac.count()).toBe(1);
    const facts = await mac.textContent();
    expect(facts).toContain("Password");
    expect(facts).toMatch(/Last used/);
    await expectAccessible(page, "Account, sessions with devices");

    await mac.getByRole("button", { name: "End session on Chrome 131 on macOS" }).click();
    await poll(() => sessions.filter({ hasText: "Chrome 131 on macOS" }).count()).toBe(0);
    expect((await api("GET", "/users/me", { token: intruder })).status).toBe(401);

    await page.getByRole("button", { name: "Sign out everywhere else" }).click();
    await poll(() => sessions.count()).toBe(1);
    expect(await sessions.getAttribute("data-current")).toBe("true");
    expect(problems).toEqual([]);
  });
});
