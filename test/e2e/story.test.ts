import PostalMime from "postal-mime";
import type { TestProject } from "vitest/node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHeraldClient, watchInbox, type NotificationFrame } from "../../src/client";
import { freePort, startHerald, type RunningHerald } from "./herald";

// End to end over real HTTP and WebSockets: Herald started by npm start's own machinery (scripts/dev.mjs →
// wrangler dev) on a free port, with a real SMTP server, webhook receiver and OpenID provider beside it.

let herald: RunningHerald;
let peers: Record<string, string | number>;
let stopPeers: () => Promise<void>;

const control = async (path: string, body?: unknown) => {
  const res = await fetch(`http://127.0.0.1:${peers.peerPort}${path}`, body === undefined ? {} : { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  return res.json() as Promise<unknown>;
};

async function waitFor<T>(probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error("timed out waiting");
    await new Promise((r) => setTimeout(r, 100));
  }
}

beforeAll(async () => {
  const port = await freePort();
  process.env.HERALD_ACCESS_URL = `http://localhost:${port}`;
  // Imported after HERALD_ACCESS_URL is set: the OAuth peers register Herald's callback URL from it.
  const { default: setup } = await import("../peers/global-setup");
  peers = {};
  const provide = (key: string, value: string | number) => {
    peers[key] = value;
  };
  stopPeers = await setup({ provide } as unknown as TestProject);
  herald = await startHerald(port, {
    ACCESS_URL: `http://localhost:${port}`,
    EMAIL_SMARTHOST: `127.0.0.1:${peers.smtpPort}`,
    EMAIL_TLS: "none",
    EMAIL_FROM: "herald@herald.test",
    EMAIL_USERNAME: "herald",
    EMAIL_PASSWORD: "e2e-smtp-password",
    NOTIFICATIONS_WEBHOOK_URL: `http://127.0.0.1:${peers.peerPort}/webhook`,
    NOTIFICATIONS_RETRY_BASE: "1s",
    OIDC_ISSUER_URL: String(peers.oidcIssuer),
    OIDC_CLIENT_ID: "herald",
    OIDC_CLIENT_SECRET: "herald-oidc-secret",
  });
}, 180_000);

afterAll(async () => {
  await herald?.stop();
  await stopPeers?.();
});

interface RecordedEmail {
  rcptTo: string[];
  raw: string;
}

async function emailTo(address: string, subject: string) {
  return waitFor(async () => {
    const all = (await control("/control/emails")) as RecordedEmail[];
    for (const mail of all.filter((m) => m.rcptTo.includes(address))) {
      const parsed = await PostalMime.parse(mail.raw);
      if (parsed.subject === subject) return parsed;
    }
    return undefined;
  });
}

describe("the whole story, as clients live it", () => {
  it("first owner → member invited → member watches, receives live, reads, mutes, resets its password", async () => {
    const anonymous = createHeraldClient({ baseUrl: herald.url });
    const ownerCreds = { email: "owner@e2e.test", username: "owner", password: "copper-meadow-lantern-81" };
    expect((await anonymous.users.first.$post({ json: ownerCreds })).status).toBe(201);
    const ownerLogin = await anonymous.users.login.$post({ json: { email: ownerCreds.email, password: ownerCreds.password } });
    expect(ownerLogin.status).toBe(201);
    const ownerToken = (await ownerLogin.json()).session_token;
    const owner = createHeraldClient({ baseUrl: herald.url, token: ownerToken });

    // Invite a member.
    const member = { email: "member@e2e.test", username: "member", password: "violet-harbour-compass-27" };
    expect((await owner.users.$post({ json: member })).status).toBe(201);
    const memberLogin = await anonymous.users.login.$post({ json: { email: member.email, password: member.password } });
    const memberToken = (await memberLogin.json()).session_token;
    const me = createHeraldClient({ baseUrl: herald.url, token: memberToken });

    // Watch the inbox live and receive a custom notification.
    const frames: NotificationFrame[] = [];
    const statuses: string[] = [];
    const watch = watchInbox({ baseUrl: herald.url, token: memberToken, onNotification: (f) => frames.push(f), onStatus: (s) => statuses.push(s) });
    await waitFor(async () => (statuses.includes("open") ? true : undefined));
    expect((await me.notifications.custom.$post({ json: { content: { title: "Release **1.0** shipped", message: "Go [look](https://example.com)" } } })).status).toBe(204);
    const frame = await waitFor(async () => frames[0]);
    expect(frame.notification.title).toBe("Release **1.0** shipped");
    expect(frame.unread_count).toBe(1);

    // Mark it read.
    const read = await me.notifications.inbox[":id"]["read-status"].$put({ param: { id: frame.notification.id }, json: { is_read: true } });
    expect(read.status).toBe(200);
    expect((await read.json()).unread_count).toBe(0);

    // Mute the custom template: the next one is inhibited and never reaches the watcher.
    const muted = await me.users[":user"].notifications.preferences.$put({
      param: { user: "me" },
      json: { template_disabled_map: { "39b1e189-c857-4b0c-877a-511144c18516": true } },
    });
    expect(muted.status).toBe(200);
    expect((await me.notifications.custom.$post({ json: { content: { title: "muted", message: "" } } })).status).toBe(204);
    const inhibited = await waitFor(async () => {
      const res = await owner.notifications.messages.$get({ query: { status: "inhibited" } });
      const body = (await res.json()) as { messages: { template_id: string }[] };
      return body.messages.length >= 2 ? body.messages : undefined;
    });
    expect(inhibited.every((m) => m.template_id === "39b1e189-c857-4b0c-877a-511144c18516")).toBe(true);
    expect(frames).toHaveLength(1);

    // Forgot the password: request a passcode, receive the e-mail, reset, and the old session is dead.
    expect((await anonymous.users.otp.request.$post({ json: { email: member.email } })).status).toBe(204);
    const mail = await emailTo(member.email, "Reset your password");
    const link = /reset-password\/change\?otp=([0-9a-f-]{36})/.exec(mail.text ?? "");
    expect(link?.[1]).toBeDefined();
    const reset = await anonymous.users.otp["change-password"].$post({
      json: { email: member.email, one_time_passcode: link?.[1] ?? "", password: "a-brand-new-passphrase-64" },
    });
    expect(reset.status).toBe(204);
    expect((await me.users[":user"].$get({ param: { user: "me" } })).status).toBe(401);
    watch.close();
    await emailTo(member.email, "Your password was changed");
    expect((await anonymous.users.login.$post({ json: { email: member.email, password: "a-brand-new-passphrase-64" } })).status).toBe(201);
  }, 180_000);
});
