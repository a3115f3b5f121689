import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { TARGET_VERIFICATION_TEMPLATE_ID, TEMPLATE_IDS } from "../../src/notifications/templates";
import { quiesce } from "../fixtures/d1-state";
import { apiRequest, call, createUser, json, send, type TestUser } from "../helpers";
import { list } from "../inbox/inbox-helpers";
import { emails, type ReceivedEmail, subscribeBrowser, waitFor } from "../peers";
import { addTarget, addVerifiedTarget, receivedAt } from "../targets/stand-ins";

// docs/security.md, "Security notices": a browser subscribed to Web Push or a target added is a new place the
// person's notifications go, so it is told, like every other change a stolen session could make unseen. The notice
// names the channel by kind, name and origin, never by its URL (docs/push.md, docs/targets.md), and, being a security
// notice, never goes to a target (docs/channels.md, "One copy per destination").

const CHROME_MAC = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
const BERLIN = { country: "DE", city: "Berlin" };
const TITLE = "A notification channel was added to your account";

/** A request from Chrome on macOS in Berlin: the device and the place the notice must name. */
const fromBerlin = (method: string, path: string, options: { token: string; body?: unknown }) =>
  send(
    new Request(apiRequest(method, path, { ...options, headers: { "User-Agent": CHROME_MAC, "CF-Connecting-IP": "198.51.100.23" } }), {
      cf: BERLIN,
    }),
  );

interface Copy {
  method: string;
  status: string;
  payload: string;
}

/** Every copy of the channel-added notice the user was sent, as the message log holds it. */
async function copies(userId: string): Promise<Copy[]> {
  const { results } = await env.DB.prepare(
    "SELECT method, status, payload FROM notification_messages WHERE user_id = ? AND template_id = ? ORDER BY created_at",
  )
    .bind(userId, TEMPLATE_IDS.channelAdded)
    .all<Copy>();
  return results;
}

const methods = (rows: Copy[]) => rows.map((r) => r.method).sort();

/** Waits for `count` notices' copies (inbox and e-mail each) to be written, then lets any duplicate arrive. */
async function settled(userId: string, count: number): Promise<Copy[]> {
  await waitFor(async () => ((await copies(userId)).filter((r) => r.method === "smtp").length >= count ? true : undefined), 10_000);
  await quiesce(3);
  return copies(userId);
}

/** The notice's e-mails, as the SMTP peer received them through Herald's queue. */
async function noticeMails(user: TestUser, count: number): Promise<ReceivedEmail[]> {
  return waitFor(async () => {
    const mails = (await emails()).filter((m) => m.rcptTo.includes(user.email) && m.subject === TITLE);
    return mails.length >= count ? mails : undefined;
  }, 15_000);
}

/** The notice as the person reads it: in the inbox and in the e-mail. */
async function noticeText(user: TestUser, count = 1): Promise<{ inbox: string; mail: string; labels: Record<string, string> }> {
  const items = (await list(user.token)).notifications.filter((n) => n.template_id === TEMPLATE_IDS.channelAdded);
  expect(items).toHaveLength(count);
  const mails = await noticeMails(user, count);
  expect(mails).toHaveLength(count);
  const [row] = (await copies(user.id)).filter((r) => r.method === "inbox").slice(-1);
  const { labels } = JSON.parse(row?.payload ?? "{}") as { labels: Record<string, string> };
  return {
    inbox: items.map((n) => `${n.title}\n${n.content}\n${JSON.stringify(n.actions)}`).join("\n"),
    mail: mails.map((m) => `${m.text}\n${m.html}`).join("\n"),
    labels,
  };
}

describe('docs/security.md, "Security notices": a notification channel added', () => {
  it("a browser subscribed to Web Push sends one notice, in the inbox and by e-mail, naming it by name and origin only", async () => {
    const [user, browser] = await Promise.all([createUser(), subscribeBrowser()]);
    const res = await fromBerlin("POST", `/users/${user.id}/push-subscriptions`, { token: user.token, body: browser.subscription });
    expect(res.status, await res.clone().text()).toBe(201);
    const endpoint = new URL(browser.subscription.endpoint);

    // One notice: its inbox copy, its e-mail and, as for every notice, a push to each of the person's browsers.
    expect(methods(await settled(user.id, 1))).toEqual(["inbox", "push", "smtp"]);
    const { inbox, mail, labels } = await noticeText(user);
    expect(labels).toMatchObject({
      channel: 'The browser "Chrome 131 on macOS"',
      channel_origin: endpoint.origin,
      device: "Chrome 131 on macOS",
      place: "Berlin, Germany (198.51.100.0/24)",
    });
    expect(labels.when).toMatch(/^\d{1,2} \w+ \d{4} at \d{2}:\d{2} UTC$/);
    expect(mail).toContain(`${endpoint.origin},`);
    for (const text of [inbox, mail]) {
      expect(text).toContain("Chrome 131 on macOS");
      // The endpoint is a capability: whoever holds it can push to the browser.
      expect(text).not.toContain(endpoint.pathname);
    }
  });

  it("the same endpoint again is the same browser: no notice", async () => {
    const [user, browser] = await Promise.all([createUser(), subscribeBrowser()]);
    expect((await call("POST", "/users/me/push-subscriptions", { token: user.token, body: browser.subscription })).status).toBe(201);
    await settled(user.id, 1);
    const again = await call("POST", "/users/me/push-subscriptions", { token: user.token, body: { ...browser.subscription, name: "Renamed" } });
    expect(again.status).toBe(200);
    await quiesce(3);
    expect(methods(await copies(user.id))).toEqual(["inbox", "push", "smtp"]);
  });

  it("a target added sends one notice naming its kind, name and origin, never its URL or its secret", async () => {
    const user = await createUser();
    const res = await fromBerlin("POST", "/users/me/notification-targets", {
      token: user.token,
      body: { kind: "webhook", url: `${env.TARGETS_URL}/webhook/${crypto.randomUUID().replace(/-/g, "")}`, name: "Build hooks" },
    });
    expect(res.status, await res.clone().text()).toBe(201);
    const target = await json<{ url_origin: string; secret: string }>(res);
    expect(target.secret).toBeTruthy();

    expect(methods(await settled(user.id, 1))).toEqual(["inbox", "smtp"]);
    const { inbox, mail, labels } = await noticeText(user);
    expect(labels).toMatchObject({
      channel: 'The webhook "Build hooks"',
      channel_origin: target.url_origin,
      device: "Chrome 131 on macOS",
      place: "Berlin, Germany (198.51.100.0/24)",
    });
    const stored = (await copies(user.id)).map((r) => r.payload).join("\n");
    for (const text of [inbox, mail, stored]) {
      expect(text).not.toContain("/webhook/");
      expect(text).not.toContain(target.secret);
    }
  });
});

describe('docs/channels.md, "One copy per destination": the channel-added notice never goes to a target', () => {
  it("a verified target receives nothing of the notice about a second target", async () => {
    const user = await createUser();
    const first = await addVerifiedTarget(user.token, "slack");
    await settled(user.id, 1);
    const second = await addTarget(user.token, "discord", "Alerts");
    const rows = await settled(user.id, 2);
    expect(methods(rows)).toEqual(["inbox", "inbox", "smtp", "smtp"]);
    expect((await noticeText(user, 2)).labels.channel).toBe('The Discord channel "Alerts"');
    // Each target got its own verification message and nothing else.
    await waitFor(async () => ((await receivedAt(second.path)).length === 1 ? true : undefined), 15_000);
    expect(await receivedAt(first.path)).toHaveLength(1);
    const { results } = await env.DB.prepare("SELECT template_id FROM notification_messages WHERE user_id = ? AND method = 'target'")
      .bind(user.id)
      .all<{ template_id: string }>();
    expect(results.map((r) => r.template_id)).toEqual([TARGET_VERIFICATION_TEMPLATE_ID, TARGET_VERIFICATION_TEMPLATE_ID]);
  });
});

describe(`docs/security.md, "This wasn't me": from the channel-added notice`, () => {
  it("its link ends every session of the account and tells the owners what was added", async () => {
    const [user, browser] = await Promise.all([createUser(), subscribeBrowser()]);
    expect((await call("POST", "/users/me/push-subscriptions", { token: user.token, body: browser.subscription })).status).toBe(201);
    const item = await waitFor(async () => (await list(user.token)).notifications.find((n) => n.template_id === TEMPLATE_IDS.channelAdded), 10_000);
    const action = item.actions.find((a) => a.label === "This wasn't me");
    if (!action) throw new Error("the notice has no This wasn't me action");
    const res = await call("POST", "/users/not-me", { body: { token: decodeURIComponent(new URL(action.url).hash.slice(1)) } });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ revoked_sessions: 1, revoked_tokens: 0 });
    expect((await call("GET", "/users/me", { token: user.token })).status).toBe(401);
    await waitFor(async () => {
      const row = await env.DB.prepare("SELECT 1 AS found FROM notification_messages WHERE template_id = ? AND payload LIKE ? AND payload LIKE ?")
        .bind(TEMPLATE_IDS.compromiseReported, `%${user.username}%`, "%a notification channel was added%")
        .first<{ found: number }>();
      return row ?? undefined;
    }, 10_000);
  });
});
