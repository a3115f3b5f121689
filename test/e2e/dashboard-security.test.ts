import { readFileSync } from "node:fs";
import type { Browser, BrowserContext, CDPSession, Locator, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { browserAvailable, expectAccessible, expectNoSidewaysScroll, launchBrowser, trackRequests, watchConsole } from "./browser";
import { apiAs, freePort, type RunningHerald, startHerald } from "./herald";
import { stepNow, totpAt } from "./totp";

// The dashboard's second factor, passkeys and step-up (docs/dashboard.md, "Second factor, passkeys and step-up") in a
// real Chromium against Herald started by npm start's machinery. Passkeys live in Chromium's virtual authenticator
// (the DevTools protocol's WebAuthn domain: a platform authenticator that holds discoverable credentials and verifies
// its user), so every ceremony is the browser's own, signed and checked by Herald. TOTP codes are computed here from
// the secret the page shows, as an authenticator app does. The journeys of each Herald run in order.

const OWNER = { email: "ada@herald.test", username: "ada", password: "copper-meadow-lantern-81" };
const GRACE = { email: "grace@herald.test", username: "grace", password: "Velvet-Harbor-Lantern-31" };
const LIN = { email: "lin@herald.test", username: "lin", password: "Amber-Quarry-Kestrel-47" };
/** STEP_UP_MAX_AGE of the second Herald: short, so that a session is old enough for a step-up within a test. */
const STEP_UP_MAX_AGE_MS = 2_000;

/** Retries an assertion until it holds: what the page shows follows the API a moment later. */
const poll = <T>(probe: () => T | Promise<T>) => expect.poll(probe, { timeout: 20_000, interval: 100 });

/**
 * The codes of one secret, each step used once: Herald refuses a code again within its window (docs/dashboard.md,
 * "Second factor") and accepts the next step early, so a later code is the next step, or the current one if time has moved on.
 */
function authenticatorApp(secret: string) {
  let last = Number.NEGATIVE_INFINITY;
  return {
    next(): string {
      const step = Math.max(stepNow(), last + 1);
      if (step > stepNow() + 1) throw new Error("more than one code ahead of the clock in one window");
      last = step;
      return totpAt(secret, step);
    },
    /** A code this secret does not produce anywhere near now. */
    wrong(): string {
      const near = new Set([-2, -1, 0, 1, 2].map((d) => totpAt(secret, stepNow() + d)));
      return ["000000", "111111", "222222", "333333", "444444", "555555"].find((code) => !near.has(code)) ?? "999999";
    },
  };
}

// --- The browser ----------------------------------------------------------------------------------------------------

async function credentialsOf(cdp: CDPSession, authenticatorId: string) {
  return (await cdp.send("WebAuthn.getCredentials", { authenticatorId })).credentials;
}
/** A passkey as the virtual authenticator holds it: its private key included, so another "device" can hold it too. */
type VirtualCredential = Awaited<ReturnType<typeof credentialsOf>>[number];

/**
 * The passkey as a device holds it after use, for the next "device" to continue from: its signature counter moved
 * on, and Herald refuses a counter that goes back (docs/dashboard.md, "Passkeys").
 */
async function keptPasskey(device: { credentials(): Promise<VirtualCredential[]> }): Promise<VirtualCredential> {
  const [credential] = await device.credentials();
  if (!credential) throw new Error("the virtual authenticator holds no passkey");
  return credential;
}

/**
 * Chromium's virtual authenticator for one page. With presence simulated, it answers every request at once, as a
 * person touching the sensor would: a modal prompt, and also the sign-in page's autofill request (as if the person
 * picked the passkey from the suggestions). `away()` stops that: requests then wait, as they do while a person types
 * a password instead.
 */
async function authenticator(page: Page) {
  const cdp: CDPSession = await page.context().newCDPSession(page);
  await cdp.send("WebAuthn.enable", { enableUI: false });
  const { authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", {
    options: {
      protocol: "ctap2",
      transport: "internal",
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
  const presence = (enabled: boolean) => cdp.send("WebAuthn.setAutomaticPresenceSimulation", { authenticatorId, enabled });
  return {
    present: () => presence(true),
    away: () => presence(false),
    credentials: () => credentialsOf(cdp, authenticatorId),
    /** Puts a passkey made on another "device" (page) here, as a synced passkey arrives on a new device. */
    async holds(credential: VirtualCredential) {
      await cdp.send("WebAuthn.addCredential", { authenticatorId, credential });
    },
  };
}

interface Tab {
  page: Page;
  context: BrowserContext;
  problems: string[];
  requests: ReturnType<typeof trackRequests>;
}

let browser: Browser;
const tabs: Tab[] = [];

/** A browser of its own (no cookie), 1280×800, whose page reports what its policy refused and every script error. */
async function newTab(): Promise<Tab> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, acceptDownloads: true });
  const page = await context.newPage();
  const tab = { page, context, problems: watchConsole(page), requests: trackRequests(page) };
  tabs.push(tab);
  return tab;
}

async function signInWithPassword(page: Page, url: string, who: { email: string; password: string }) {
  await page.goto(`${url}/#/sign-in`);
  await page.getByRole("heading", { name: "Sign in to Herald" }).waitFor();
  await page.getByLabel("E-mail").fill(who.email);
  await page.getByLabel("Password").fill(who.password);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
}

const inbox = (page: Page) => page.getByRole("heading", { name: "Inbox", exact: true });

async function signOut(page: Page) {
  await page.getByRole("button", { name: "Sign out", exact: true }).click();
  await page.getByRole("heading", { name: "Sign in to Herald" }).waitFor();
}

async function openSecurity(page: Page, url: string) {
  await page.goto(`${url}/#/account`);
  await page.getByRole("heading", { name: "Security", exact: true }).waitFor();
  await poll(() => page.locator(".loading").count()).toBe(0);
}

/** axe-core in both themes: contrast is a property of each theme. */
async function accessibleInBothThemes(page: Page, label: string) {
  await expectAccessible(page, label);
  await page.emulateMedia({ colorScheme: "dark" });
  await expectAccessible(page, `${label} (dark)`);
  await page.emulateMedia({ colorScheme: "light" });
}

/** The error tied to an input by aria-describedby (class field-error), or "" when none is. */
async function errorOf(input: Locator): Promise<string> {
  for (const id of ((await input.getAttribute("aria-describedby")) ?? "").split(" ").filter(Boolean)) {
    const element = input.page().locator(`[id="${id}"]`);
    if ((await element.getAttribute("class"))?.includes("field-error")) return (await element.textContent()) ?? "";
  }
  return "";
}

/** The page's alerts (refusals), as text: none is expected on a page that worked. */
const alerts = (page: Page) => page.getByRole("alert").allTextContents();

beforeAll(async () => {
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
});

describe.skipIf(!browserAvailable)('docs/dashboard.md, "Second factor, passkeys and step-up"', () => {
  let herald: RunningHerald;
  /** The owner's API session, made before any factor, so checks through the API need no second factor. */
  let ownerApi: Awaited<ReturnType<typeof apiAs>>;
  /** The passkey made in the dashboard, as the virtual authenticator holds it. */
  let adaPasskey: VirtualCredential;
  let recoveryCodes: string[] = [];
  let graceApp: ReturnType<typeof authenticatorApp>;

  beforeAll(async () => {
    herald = await startHerald(await freePort(), {});
    const first = await fetch(`${herald.url}/api/v2/users/first`, { method: "POST", body: JSON.stringify(OWNER) });
    expect(first.status).toBe(201);
    await first.arrayBuffer();
    ownerApi = await apiAs(herald.url, OWNER);
    expect((await ownerApi("POST", "/users", GRACE)).status).toBe(201);
  }, 240_000);

  afterAll(async () => {
    await herald?.stop();
  });

  it("a passkey added in Account → Security signs in with the passkey button, without a password", async () => {
    const { page, problems, requests } = await newTab();
    const device = await authenticator(page);
    await signInWithPassword(page, herald.url, OWNER);
    await inbox(page).waitFor();
    await openSecurity(page, herald.url);
    await page.getByTestId("passkeys").getByText("You have no passkeys yet.").waitFor();

    await page.getByLabel("Passkey name").fill("Work laptop");
    await page.getByRole("button", { name: "Add a passkey" }).click();
    await page.getByText("Passkey “Work laptop” added.").waitFor();
    const item = page.getByTestId("passkey");
    await poll(() => item.count()).toBe(1);
    expect(await item.locator(".key-name").textContent()).toBe("Work laptop");
    expect(await item.getByText("Never").count()).toBe(1);
    // Herald holds it, and the factors say so.
    const listed = await ownerApi("GET", "/users/me/passkeys");
    expect(listed.status).toBe(200);
    expect((listed.body as unknown as { name: string }[]).map((p) => p.name)).toEqual(["Work laptop"]);
    expect((await ownerApi("GET", "/users/me/mfa")).body).toMatchObject({ passkeys: 1, totp: false });
    await accessibleInBothThemes(page, "Account → Security with a passkey");

    // Signed out, the sign-in page's autofill request waits (the person does not pick anything); the button asks.
    await device.away();
    await signOut(page);
    expect(await page.getByLabel("E-mail").getAttribute("autocomplete")).toBe("username webauthn");
    await device.present();
    await page.getByRole("button", { name: "Sign in with a passkey" }).click();
    await inbox(page).waitFor();
    expect(await alerts(page)).toEqual([]);
    await openSecurity(page, herald.url);
    expect(await page.getByTestId("passkey").getByText("Never").count()).toBe(0);
    expect(problems).toEqual([]);
    await poll(() => requests.pending()).toEqual([]);
    adaPasskey = await keptPasskey(device);
  });

  it("a new browser whose device holds the passkey signs in from the e-mail field's autofill", async () => {
    const { page, problems } = await newTab();
    const device = await authenticator(page);
    await device.holds(adaPasskey);
    // The virtual authenticator answers the page's conditional request at once, as a person picking the passkey.
    const finished = page.waitForResponse((res) => res.url().endsWith("/api/v2/users/login/passkey") && res.request().method() === "POST");
    await page.goto(herald.url);
    expect((await finished).status()).toBe(201);
    await inbox(page).waitFor();
    expect(await page.getByLabel("E-mail").count()).toBe(0);
    expect(problems).toEqual([]);
    adaPasskey = await keptPasskey(device);
  });

  it("a password sign-in of an account with a passkey asks for the second factor, and the stopped autofill says nothing", async () => {
    const { page, problems, requests } = await newTab();
    const device = await authenticator(page);
    await device.holds(adaPasskey);
    await device.away();
    const armed = page.waitForResponse((res) => res.url().endsWith("/api/v2/users/login/passkey/options"));
    await page.goto(`${herald.url}/#/sign-in`);
    await armed;
    await page.getByLabel("E-mail").fill(OWNER.email);
    await page.getByLabel("Password").fill(OWNER.password);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.getByRole("heading", { name: "Confirm it is you" }).waitFor();
    // The autofill request was stopped when the page changed: no message about it, no script error.
    expect(await alerts(page)).toEqual([]);
    expect(problems).toEqual([]);
    // Ada has a passkey only: no code is asked for. No session exists yet.
    expect(await page.getByLabel("Code from your authenticator app").count()).toBe(0);
    await accessibleInBothThemes(page, "Second factor (passkey)");
    await device.present();
    await page.getByRole("button", { name: "Use a passkey" }).click();
    await inbox(page).waitFor();
    expect(await alerts(page)).toEqual([]);
    expect(problems).toEqual([]);
    await poll(() => requests.pending()).toEqual([]);
  });

  it("an authenticator app set up from its secret: QR code, recovery codes shown once, then sign-ins ask for its code", async () => {
    const { page, problems } = await newTab();
    await signInWithPassword(page, herald.url, GRACE);
    await inbox(page).waitFor();
    await openSecurity(page, herald.url);
    await page.getByRole("button", { name: "Set up an authenticator app" }).click();
    const secretBox = page.getByTestId("totp-secret");
    await secretBox.waitFor();
    const secret = ((await secretBox.textContent()) ?? "").replace(/\s/g, "");
    expect(secret).toMatch(/^[A-Z2-7]{16,}$/);
    // The QR code is drawn in the page: an SVG with its text alternative, nothing loaded.
    expect(await page.getByRole("img", { name: "QR code to add Herald to your authenticator app" }).evaluate((svg) => svg.tagName)).toBe("svg");
    const code = page.getByLabel("Code from the app");
    expect(await code.getAttribute("autocomplete")).toBe("one-time-code");
    expect(await code.getAttribute("inputmode")).toBe("numeric");
    await accessibleInBothThemes(page, "Setting up the authenticator app");
    await page.setViewportSize({ width: 360, height: 800 });
    await expectNoSidewaysScroll(page, "Setting up the authenticator app at 360 px");
    await page.setViewportSize({ width: 1280, height: 800 });

    graceApp = authenticatorApp(secret);
    await code.fill(graceApp.wrong());
    await page.getByRole("button", { name: "Turn on" }).click();
    // Said once, at the field, and focus goes there to fix it.
    await poll(() => errorOf(code)).toBe("Incorrect one-time code.");
    expect(await alerts(page)).toEqual(["Check the highlighted field."]);
    expect(await code.evaluate((input) => input === document.activeElement)).toBe(true);
    await code.fill(graceApp.next());
    await page.getByRole("button", { name: "Turn on" }).click();
    const shown = page.getByTestId("recovery-codes");
    await shown.waitFor();
    recoveryCodes = (await shown.locator("li code").allTextContents()).map((text) => text.trim());
    expect(recoveryCodes).toHaveLength(10);
    expect(new Set(recoveryCodes).size).toBe(10);
    // Each code is read on one line, also at 360 px: a code broken in the middle is easily copied wrong.
    const lines = () => shown.locator("li code").evaluateAll((codes) => codes.map((code) => code.getClientRects().length));
    expect(await lines()).toEqual(Array(10).fill(1));
    await page.setViewportSize({ width: 360, height: 800 });
    expect(await lines()).toEqual(Array(10).fill(1));
    await expectNoSidewaysScroll(page, "Recovery codes at 360 px");
    await page.setViewportSize({ width: 1280, height: 800 });
    // The download is a text file with every code, made in the page.
    const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("link", { name: "Download codes (.txt)" }).click()]);
    expect(download.suggestedFilename()).toBe("herald-recovery-codes.txt");
    const file = readFileSync(await download.path(), "utf8");
    for (const recovery of recoveryCodes) expect(file).toContain(recovery);
    await accessibleInBothThemes(page, "Recovery codes");
    await page.getByRole("button", { name: "Done" }).click();
    await page.getByTestId("recovery-codes-left").getByText("10 recovery codes left.").waitFor();
    // Shown once: nothing on the page holds them any more.
    expect(await page.locator("body").textContent()).not.toContain(recoveryCodes[0]);

    await signOut(page);
    await page.getByLabel("E-mail").fill(GRACE.email);
    await page.getByLabel("Password").fill(GRACE.password);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.getByRole("heading", { name: "Confirm it is you" }).waitFor();
    const asked = page.getByLabel("Code from your authenticator app");
    expect(await asked.getAttribute("autocomplete")).toBe("one-time-code");
    expect(await asked.getAttribute("inputmode")).toBe("numeric");
    expect(await page.getByRole("button", { name: "Use a passkey" }).count()).toBe(0);
    await accessibleInBothThemes(page, "Second factor (authenticator app)");
    await page.setViewportSize({ width: 360, height: 800 });
    await expectNoSidewaysScroll(page, "Second factor at 360 px");
    await page.setViewportSize({ width: 1280, height: 800 });
    await asked.fill(graceApp.next());
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await inbox(page).waitFor();
    expect(problems).toEqual([]);
  });

  it("a recovery code signs in once, and never again", async () => {
    const [first, second] = recoveryCodes;
    if (!first || !second) throw new Error("the recovery codes were not kept by the journey before");
    const { page, problems } = await newTab();
    const useRecoveryCode = async (recovery: string) => {
      await page.getByRole("heading", { name: "Confirm it is you" }).waitFor();
      if ((await page.getByLabel("Recovery code").count()) === 0) await page.getByRole("button", { name: "Use a recovery code instead" }).click();
      await page.getByLabel("Recovery code").fill(recovery);
      await page.getByRole("button", { name: "Sign in", exact: true }).click();
    };
    await signInWithPassword(page, herald.url, GRACE);
    await useRecoveryCode(first);
    await inbox(page).waitFor();
    await openSecurity(page, herald.url);
    await page.getByTestId("recovery-codes-left").getByText("9 recovery codes left.").waitFor();

    await signOut(page);
    await signInWithPassword(page, herald.url, GRACE);
    await useRecoveryCode(first);
    await poll(() => alerts(page)).toEqual(["Incorrect one-time code. Each recovery code works once: check it, or try another of yours."]);
    expect(await page.getByRole("heading", { name: "Inbox", exact: true }).count()).toBe(0);
    // A way on is always shown: another code, or starting again.
    expect(await page.getByRole("link", { name: "start again" }).count()).toBe(1);
    await accessibleInBothThemes(page, "Second factor, a used recovery code");
    // Another code still finishes the same sign-in.
    await useRecoveryCode(second);
    await inbox(page).waitFor();
    await openSecurity(page, herald.url);
    await page.getByTestId("recovery-codes-left").getByText("8 recovery codes left.").waitFor();
    expect(problems).toEqual([]);
  });
});

describe.skipIf(!browserAvailable)('docs/dashboard.md, "Step-up" and a role that needs a second factor', () => {
  let herald: RunningHerald;
  let ownerApi: Awaited<ReturnType<typeof apiAs>>;

  /**
   * Waits until a session last authenticated before `since` (taken once the sign-in or step-up had finished) is older
   * than STEP_UP_MAX_AGE by Herald's clock, the same machine's: only real time ages a session, so this is a wait on
   * the clock, not a pause for luck.
   */
  async function aged(since: number) {
    const until = since + STEP_UP_MAX_AGE_MS + 500;
    while (Date.now() < until) await new Promise((resolve) => setTimeout(resolve, until - Date.now()));
  }

  beforeAll(async () => {
    herald = await startHerald(await freePort(), { STEP_UP_MAX_AGE: `${STEP_UP_MAX_AGE_MS / 1000}s`, MFA_REQUIRED_ROLES: "user-admin" });
    const first = await fetch(`${herald.url}/api/v2/users/first`, { method: "POST", body: JSON.stringify(OWNER) });
    expect(first.status).toBe(201);
    await first.arrayBuffer();
    ownerApi = await apiAs(herald.url, OWNER);
    // Lin is a user admin, whose role needs a second factor here. Changing roles needs a recent sign-in: the owner's
    // API session confirms with the password first, as the owner has no factor yet.
    const lin = await ownerApi("POST", "/users", LIN);
    expect(lin.status).toBe(201);
    expect((await ownerApi("POST", "/users/me/step-up", { password: OWNER.password })).status).toBe(204);
    expect((await ownerApi("PUT", `/users/${String(lin.body.id)}/roles`, { roles: ["user-admin"] })).status).toBe(200);
  }, 240_000);

  afterAll(async () => {
    await herald?.stop();
  });

  it("creating an API token on an older session asks to confirm it is you; Cancel changes nothing, the password goes on", async () => {
    const { page, problems, requests } = await newTab();
    await signInWithPassword(page, herald.url, OWNER);
    await inbox(page).waitFor();
    const signedInAt = Date.now();
    await openSecurity(page, herald.url);
    await page.getByLabel("Token name").fill("ci-deploy");
    await aged(signedInAt);

    await page.getByRole("button", { name: "Create token" }).click();
    const prompt = page.getByRole("dialog", { name: "Confirm it is you" });
    await prompt.waitFor();
    // No factor: the password is asked for, with the browser's own field for it.
    const password = prompt.getByLabel("Your password");
    expect(await password.getAttribute("autocomplete")).toBe("current-password");
    // Focus is in the prompt, on the password; Escape cancels, and focus is back on the button that asked.
    expect(await password.evaluate((input) => input === document.activeElement)).toBe(true);
    await accessibleInBothThemes(page, "Step-up prompt");
    await page.keyboard.press("Escape");
    await poll(() => prompt.count()).toBe(0);
    expect(await page.getByRole("button", { name: "Create token" }).evaluate((button) => button === document.activeElement)).toBe(true);
    await poll(() => alerts(page)).toEqual([
      "Nothing was changed: this needs you to confirm it is you. Try again when you are ready, and confirm it is you when Herald asks.",
    ]);
    // The form is as it was, and Herald made no token.
    expect(await page.getByLabel("Token name").inputValue()).toBe("ci-deploy");
    expect((await ownerApi("GET", "/users/me/keys/tokens")).body).toEqual([]);

    await page.getByRole("button", { name: "Create token" }).click();
    await prompt.waitFor();
    await prompt.getByLabel("Your password").fill("not-the-password-at-all");
    await prompt.getByRole("button", { name: "Confirm" }).click();
    await poll(async () => (await prompt.getByRole("alert").allTextContents()).length).toBe(1);
    await prompt.getByLabel("Your password").fill(OWNER.password);
    await prompt.getByRole("button", { name: "Confirm" }).click();
    // Confirmed: the same request went again, once, and the token is shown.
    await page.getByTestId("new-token").waitFor();
    expect(await prompt.count()).toBe(0);
    const tokens = (await ownerApi("GET", "/users/me/keys/tokens")).body as unknown as { token_name: string }[];
    expect(tokens.map((t) => t.token_name)).toEqual(["ci-deploy"]);
    expect(problems).toEqual([]);
    await poll(() => requests.pending()).toEqual([]);
  });

  it("with a passkey, the step-up prompt asks for it instead of the password", async () => {
    const { page, problems } = await newTab();
    await authenticator(page);
    await signInWithPassword(page, herald.url, OWNER);
    await inbox(page).waitFor();
    let signedInAt = Date.now();
    await openSecurity(page, herald.url);
    await aged(signedInAt);
    // Adding a factor is a change that needs a recent sign-in too: the password, as there is no factor yet.
    await page.getByLabel("Passkey name").fill("Phone");
    await page.getByRole("button", { name: "Add a passkey" }).click();
    const prompt = page.getByRole("dialog", { name: "Confirm it is you" });
    await prompt.getByLabel("Your password").fill(OWNER.password);
    await prompt.getByRole("button", { name: "Confirm" }).click();
    await page.getByText("Passkey “Phone” added.").waitFor();

    signedInAt = Date.now();
    await page.getByLabel("Token name").fill("with-passkey");
    await aged(signedInAt);
    await page.getByRole("button", { name: "Create token" }).click();
    await prompt.waitFor();
    await prompt.getByRole("button", { name: "Use a passkey" }).waitFor();
    expect(await prompt.getByLabel("Your password").count()).toBe(0);
    await prompt.getByRole("button", { name: "Use a passkey" }).click();
    await page.getByTestId("new-token").waitFor();
    const tokens = (await ownerApi("GET", "/users/me/keys/tokens")).body as unknown as { token_name: string }[];
    expect(tokens.map((t) => t.token_name).sort()).toEqual(["ci-deploy", "with-passkey"]);
    expect(problems).toEqual([]);
  });

  it("a user admin without a second factor is sent to add one, and is then led back", async () => {
    const { page, problems } = await newTab();
    await authenticator(page);
    await signInWithPassword(page, herald.url, LIN);
    await page.getByRole("heading", { name: "Add a second factor" }).waitFor();
    const signedInAt = Date.now();
    await page.getByTestId("enrol-why").getByText("Your role needs a second factor.").waitFor();
    await accessibleInBothThemes(page, "Second factor required");
    await aged(signedInAt);
    await page.getByLabel("Passkey name").fill("Desk key");
    await page.getByRole("button", { name: "Add a passkey" }).click();
    const prompt = page.getByRole("dialog", { name: "Confirm it is you" });
    await prompt.getByLabel("Your password").fill(LIN.password);
    await prompt.getByRole("button", { name: "Confirm" }).click();
    await page.getByText("Passkey “Desk key” added.").waitFor();
    await page.getByTestId("enrol-continue").click();
    await inbox(page).waitFor();
    await poll(() => page.locator(".loading").count()).toBe(0);
    expect(await alerts(page)).toEqual([]);
    expect(problems).toEqual([]);
  });
});
