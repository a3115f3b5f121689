import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import PostalMime from "postal-mime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CuttingProxy, type ProxyCut } from "./cutting-proxy";
import { freePort, type RunningHerald, startHerald } from "./herald";
import { type PostfixInstance, postfixUnavailable, startPostfix } from "./postfix";
import { stepNow, totpAt } from "./totp";

// Herald (started by npm start's machinery) → a real Postfix 3.7 with Cyrus SASL (enabled, optional) over STARTTLS →
// a local Maildir; then SpamAssassin scores each message offline after a simulated Internet hop (docs/email.md).
// CI installs Postfix and SpamAssassin from Debian's packages and sets HERALD_REQUIRE_POSTFIX=1, which turns a missing
// Postfix into a failure; elsewhere this file is skipped with the reason.

const unavailable =
  postfixUnavailable() ??
  (spawnSync("spamassassin", ["--version"]).status === 0 ? undefined : "spamassassin is missing (apt-get install spamassassin)");
if (unavailable && process.env.HERALD_REQUIRE_POSTFIX === "1") throw new Error(`HERALD_REQUIRE_POSTFIX=1 but ${unavailable}`);
if (unavailable) console.warn(`[skip] the Postfix + SpamAssassin test: ${unavailable}`);

const OWNER = { email: "owner@example.net", username: "owner", password: "a quiet harbour at dawn 42" };
/**
 * A public address standing in for Herald's egress (one of Cloudflare's, 104.16.0.0/13, where a Worker's outbound
 * connections come from). Nothing is sent to it: it is only text in a header. RFC 5737's documentation ranges are no
 * good here: SpamAssassin's RCVD_ILLEGAL_IP scores them 1.3 as impossible on the Internet.
 */
const PUBLIC_TEST_IP = "104.16.0.25";
const HELLO = "herald.example.org";

let herald: RunningHerald;
let postfix: PostfixInstance;
/** Between Herald and Postfix: passes everything, until a test arms it to cut one connection at a TLS stage. */
let proxy: CuttingProxy;
let saHome: string;

beforeAll(async () => {
  if (unavailable) return;
  postfix = startPostfix(await freePort());
  proxy = new CuttingProxy(postfix.port);
  await proxy.start();
  // workerd trusts the test CA that signed Postfix's certificate, so STARTTLS is verified, not skipped.
  process.env.NODE_EXTRA_CA_CERTS = path.resolve(import.meta.dirname, "../peers/tls/ca.pem");
  const port = await freePort();
  herald = await startHerald(port, {
    ACCESS_URL: `http://localhost:${port}`,
    EMAIL_SMARTHOST: `localhost:${proxy.port}`,
    EMAIL_TLS: "starttls",
    EMAIL_FROM: "Herald Alerts <alerts@herald.example.org>",
    EMAIL_HELLO: HELLO,
  });
  saHome = mkdtempSync(path.join(tmpdir(), "herald-sa-"));
}, 180_000);

afterAll(async () => {
  await herald?.stop();
  await proxy?.stop();
  postfix?.stop();
  if (saHome) rmSync(saHome, { recursive: true, force: true });
});

async function api(method: string, route: string, body?: unknown, token?: string, extra: Record<string, string> = {}): Promise<Response> {
  const headers: Record<string, string> = { "content-type": "application/json", ...extra };
  if (token) headers["Service-Session-Token"] = token;
  return fetch(`${herald.url}/api/v2${route}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
}

async function waitForMail(count: number): Promise<string[]> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const mail = postfix.delivered();
    if (mail.length >= count) return mail;
    if (Date.now() > deadline) throw new Error(`only ${mail.length} of ${count} messages arrived; Postfix log:\n${postfix.log().slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * The hop from Herald to this Postfix is loopback, which SpamAssassin would trust outright (ALL_TRUSTED, -1.0). A
 * deployed Herald reaches the relay from a public address whose reverse DNS matches its EHLO name, so the relay's
 * Received line is rewritten to say exactly that.
 */
function simulateInternetHop(raw: string): string {
  const rewritten = raw.replace(`from ${HELLO} (localhost [127.0.0.1])`, `from ${HELLO} (${HELLO} [${PUBLIC_TEST_IP}])`);
  expect(rewritten).not.toBe(raw);
  return rewritten;
}

interface Score {
  score: number;
  rules: { points: number; name: string }[];
}

function spamassassin(raw: string): Score {
  const run = spawnSync("spamassassin", ["-L", "-t"], { input: raw, encoding: "utf8", env: { ...process.env, HOME: saHome }, maxBuffer: 10_000_000 });
  expect(run.status, run.stderr).toBe(0);
  const status = /^X-Spam-Status: .*score=(-?\d+(?:\.\d+)?)/m.exec(run.stdout);
  const report = run.stdout.slice(run.stdout.indexOf("Content analysis details:"));
  const rules = [...report.matchAll(/^\s*(-?\d+\.\d+)\s+([A-Z0-9_]+)\s/gm)].map((m) => ({ points: Number(m[1]), name: m[2] ?? "" }));
  return { score: Number(status?.[1]), rules };
}

describe.skipIf(Boolean(unavailable))("real Postfix and SpamAssassin (docs/email.md)", () => {
  it("the test notification, a custom notification and the passcode e-mail arrive over STARTTLS and each scores ≤ 1.0", async () => {
    expect((await api("POST", "/users/first", OWNER)).status).toBe(201);
    const login = await api("POST", "/users/login", { email: OWNER.email, password: OWNER.password });
    const { session_token: token } = (await login.json()) as { session_token: string };

    expect((await api("POST", "/notifications/test", undefined, token)).status).toBe(200);
    const custom = {
      title: "Deploy finished",
      message: "Version **2.4.1** is live on all regions.\n\nSee the [release notes](https://example.com/releases/2.4.1) for what changed.",
    };
    expect((await api("POST", "/notifications/custom", { content: custom }, token)).status).toBe(204);
    expect((await api("POST", "/users/otp/request", { email: OWNER.email })).status).toBe(204);

    const raws = await waitForMail(3);
    const scores: (Score & { subject: string })[] = [];
    const subjects: string[] = [];
    for (const raw of raws) {
      const parsed = await PostalMime.parse(raw);
      subjects.push(parsed.subject ?? "");
      // Postfix's own Received line shows the STARTTLS session and the EHLO name Herald gave.
      expect(raw).toMatch(new RegExp(`Received: from ${HELLO.replace(/\./g, "\\.")} \\(localhost \\[127\\.0\\.0\\.1\\]\\)\\s+\\(using TLS`));
      expect(parsed.from?.address).toBe("alerts@herald.example.org");
      expect(/^Return-Path: <(.*)>/m.exec(raw)?.[1]).toBe("alerts@herald.example.org");
      expect(parsed.messageId).toMatch(/@herald\.example\.org>$/);
      scores.push({ subject: parsed.subject ?? "", ...spamassassin(simulateInternetHop(raw)) });
    }
    console.log(
      [
        "| message | SpamAssassin score | rules that fired |",
        "|---|---|---|",
        ...scores.map((s) => `| ${s.subject} | ${s.score.toFixed(1)} | ${s.rules.map((r) => `${r.name} ${r.points}`).join(", ")} |`),
      ].join("\n"),
    );
    expect(subjects.sort()).toEqual(["A test notification", "Deploy finished", "Reset your password"]);
    for (const s of scores) expect(s.score, `${s.subject}: ${s.rules.map((r) => `${r.name}=${r.points}`).join(" ")}`).toBeLessThanOrEqual(1.0);
  });

  // docs/email.md, "What it does": a connection cut at a TLS stage is temporary, never a
  // certificate failure; the passcode e-mail still arrives, once.
  const cuts: [ProxyCut, string][] = [
    ["at-client-hello", "cut as Herald's ClientHello reaches the proxy, before Postfix sees it"],
    ["during-handshake", "cut when Postfix's first handshake bytes come back"],
    ["after-handshake", "cut after the handshake has completed"],
  ];
  for (const [stage, what] of cuts) {
    it(`${what}: the passcode e-mail is sent, exactly one copy arrives`, async () => {
      const login = await api("POST", "/users/login", { email: OWNER.email, password: OWNER.password });
      const { session_token: token } = (await login.json()) as { session_token: string };
      const before = postfix.delivered().length;
      const cutsBefore = proxy.cuts;
      proxy.arm(stage);
      expect((await api("POST", "/users/otp/request", { email: OWNER.email })).status).toBe(204);
      const raws = await waitForMail(before + 1);
      expect(proxy.cuts).toBe(cutsBefore + 1);
      // A retry on the backoff (first wait ≤ NOTIFICATIONS_RETRY_BASE) has had time to send a second copy if it would.
      await new Promise((r) => setTimeout(r, 3_000));
      expect(postfix.delivered()).toHaveLength(before + 1);
      expect((await PostalMime.parse(raws[before] ?? "")).subject).toBe("Reset your password");
      // The message log: the newest passcode e-mail is sent.
      const log = (await (
        await api("GET", "/notifications/messages?method=smtp&template_id=62f86a30-2330-4b61-a26d-311ff3b608cf&limit=1", undefined, token)
      ).json()) as { messages: { status: string }[] };
      expect(log.messages[0]?.status).toBe("sent");
    });
  }
  // docs/security.md, "Security notices": every notice e-mail reads as mail, not spam. Login method changed needs an
  // external provider and is the same layout as the rest (its own first paragraph, then the shared lines).
  it("the security notices arrive and each scores ≤ 1.0", async () => {
    const before = postfix.delivered().length;
    const chrome = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
    const ok = async (res: Response | Promise<Response>, status: number) => {
      const answered = await res;
      expect(answered.status, await answered.clone().text()).toBe(status);
      return answered;
    };
    const session = async (res: Response) => ((await (await ok(res, 201)).json()) as { session_token: string }).session_token;

    // The owner: a sign-in from a browser it never used, then an API token.
    const owner = await session(
      await api("POST", "/users/login", { email: OWNER.email, password: OWNER.password }, undefined, { "User-Agent": chrome }),
    );
    await ok(api("POST", "/users/me/keys/tokens", { token_name: "deploy-bot", scopes: ["user:read"] }, owner), 201);

    // A member: roles changed and sessions ended by the owner, a password change, an authenticator app with its
    // recovery codes (used down to two by step-ups, then a new set), removed; then This wasn't me.
    const member = { email: "member@example.net", username: "member", password: "a lighthouse keeper's ledger 7" };
    const { id: memberId } = (await (await ok(api("POST", "/users", member, owner), 201)).json()) as { id: string };
    await session(await api("POST", "/users/login", { email: member.email, password: member.password }));
    await ok(api("PUT", `/users/${memberId}/roles`, { roles: ["auditor"] }, owner), 200);
    await ok(api("DELETE", `/users/${memberId}/keys/sessions`, undefined, owner), 204);
    const mine = await session(await api("POST", "/users/login", { email: member.email, password: member.password }));
    const password = "a second ledger, kept at sea 8";
    await ok(api("PUT", "/users/me/password", { old_password: member.password, password }, mine), 204);
    const { secret } = (await (await ok(api("POST", "/users/me/mfa/totp", undefined, mine), 200)).json()) as { secret: string };
    const confirmed = await ok(api("POST", "/users/me/mfa/totp/confirm", { code: totpAt(secret, stepNow()) }, mine), 200);
    const { recovery_codes: codes } = (await confirmed.json()) as { recovery_codes: string[] };
    for (const code of codes.slice(0, 8)) await ok(api("POST", "/users/me/step-up", { code }, mine), 204);
    await ok(api("POST", "/users/me/mfa/recovery-codes", undefined, mine), 200);
    await ok(api("DELETE", "/users/me/mfa/totp", undefined, mine), 204);
    const inbox = (await (await ok(api("GET", "/notifications/inbox?limit=50", undefined, mine), 200)).json()) as {
      notifications: { title: string; actions: { label: string; url: string }[] }[];
    };
    const link = inbox.notifications.find((n) => n.title === "Your password was changed")?.actions.find((a) => a.label === "This wasn't me");
    expect(link?.url).toMatch(/\/not-me#/);
    await ok(api("POST", "/users/not-me", { token: decodeURIComponent(new URL(link?.url ?? "").hash.slice(1)) }), 200);

    const notices = [
      "New sign-in to your account",
      "An API token was created for your account",
      "Your site roles were changed",
      "Your sessions were ended by someone else",
      "Your password was changed",
      "A sign-in method was added to your account",
      "Only 2 recovery codes are left",
      "New recovery codes were made for your account",
      "A sign-in method was removed from your account",
      "Account compromise reported by member",
    ];
    // Every notice, and the passcode e-mail This wasn't me sends at once.
    const raws = (await waitForMail(before + notices.length + 1)).slice(before);
    const parsed = await Promise.all(raws.map(async (raw) => ({ raw, mail: await PostalMime.parse(raw) })));
    expect(parsed.map(({ mail }) => mail.subject ?? "").sort()).toEqual([...notices, "Reset your password"].sort());
    const scores = parsed.map(({ raw, mail }) => ({ subject: mail.subject ?? "", text: mail.text ?? "", ...spamassassin(simulateInternetHop(raw)) }));
    console.log(
      [
        "| notice | SpamAssassin score | rules that fired |",
        "|---|---|---|",
        ...scores.map((s) => `| ${s.subject} | ${s.score.toFixed(1)} | ${s.rules.map((r) => `${r.name} ${r.points}`).join(", ")} |`),
      ].join("\n"),
    );
    for (const s of scores) expect(s.score, `${s.subject}: ${s.rules.map((r) => `${r.name}=${r.points}`).join(" ")}`).toBeLessThanOrEqual(1.0);
    // The plain-text part names the device and carries the link.
    const signIn = scores.find((s) => s.subject === "New sign-in to your account");
    expect(signIn?.text).toContain("Chrome 131 on macOS");
    expect(signIn?.text).toMatch(/\/not-me#/);
  }, 120_000);

  // docs/schedule.md, "Digests": the digest reads as mail, not spam, and its text part reads on its own. The window is
  // one minute and ends on the user's inbox object's own alarm, as deployed.
  it("a digest of unread notifications arrives once, multipart, and scores ≤ 1.0", async () => {
    const login = await api("POST", "/users/login", { email: OWNER.email, password: OWNER.password });
    const { session_token: token } = (await login.json()) as { session_token: string };
    const schedule = { timezone: "Europe/Berlin", quiet_hours: [], digest: "1m" };
    expect((await api("PUT", "/users/me/notifications/schedule", schedule, token)).status).toBe(200);
    const before = postfix.delivered().length;
    const items = [
      { title: "Nightly build passed", message: "All 412 tests passed on main." },
      { title: "Deploy finished", message: "Version **2.4.2** is live. See the [release notes](https://example.com/releases/2.4.2)." },
      { title: "Weekly report ready", message: "Your team's weekly summary is ready to read." },
    ];
    for (const content of items) expect((await api("POST", "/notifications/custom", { content }, token)).status).toBe(204);
    // The window's end, then the queue: up to two minutes of real time.
    const deadline = Date.now() + 150_000;
    while (postfix.delivered().length < before + 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 500));
    const raws = postfix.delivered().slice(before);
    expect(raws).toHaveLength(1);
    const raw = raws[0] ?? "";
    const mail = await PostalMime.parse(raw);
    expect(mail.subject).toBe("Your digest: 3 unread notifications");
    expect(raw).toMatch(/Content-Type: multipart\/alternative/i);
    for (const { title } of items) {
      expect(mail.text).toContain(title);
      expect(mail.html).toContain(title);
    }
    expect(mail.text).toContain(`Open your inbox: ${herald.url}/#/inbox`);
    const score = spamassassin(simulateInternetHop(raw));
    console.log(`| ${mail.subject} | ${score.score.toFixed(1)} | ${score.rules.map((r) => `${r.name} ${r.points}`).join(", ")} |`);
    expect(score.score, score.rules.map((r) => `${r.name}=${r.points}`).join(" ")).toBeLessThanOrEqual(1.0);
    // Nothing else follows: the held copies went out in the digest, not on their own.
    await new Promise((r) => setTimeout(r, 3_000));
    expect(postfix.delivered()).toHaveLength(before + 1);
    expect((await api("PUT", "/users/me/notifications/schedule", { timezone: "UTC", quiet_hours: [], digest: "off" }, token)).status).toBe(200);
  }, 240_000);
});
