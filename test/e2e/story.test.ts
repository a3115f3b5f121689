import PostalMime from "postal-mime";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestProject } from "vitest/node";
import { createHeraldClient, type NotificationFrame, watchInbox } from "../../src/client";
import { freePort, type RunningHerald, sessionTokenOf, startHerald } from "./herald";

// End to end over real HTTP and WebSockets: Herald started by npm start's own machinery (scripts/dev.mjs →
// wrangler dev) on a free port, with a real SMTP server, webhook receiver and OpenID provider beside it.

let herald: RunningHerald;
let peers: Record<string, string | number>;
let stopPeers: () => Promise<void>;

const control = async (path: string, body?: unknown) => {
  const res = await fetch(
    `http://127.0.0.1:${peers.peerPort}${path}`,
    body === undefined ? {} : { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) },
  );
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
    const ownerToken = await sessionTokenOf(ownerLogin);
    const owner = createHeraldClient({ baseUrl: herald.url, token: ownerToken });

    // Invite a member.
    const member = { email: "member@e2e.test", username: "member", password: "violet-harbour-compass-27" };
    expect((await owner.users.$post({ json: member })).status).toBe(201);
    const memberLogin = await anonymous.users.login.$post({ json: { email: member.email, password: member.password } });
    const memberToken = await sessionTokenOf(memberLogin);
    const me = createHeraldClient({ baseUrl: herald.url, token: memberToken });

    // Watch the inbox live and receive a custom notification.
    const frames: NotificationFrame[] = [];
    const statuses: string[] = [];
    const watch = watchInbox({ baseUrl: herald.url, token: memberToken, onNotification: (f) => frames.push(f), onStatus: (s) => statuses.push(s) });
    await waitFor(async () => (statuses.includes("open") ? true : undefined));
    expect(
      (await me.notifications.custom.$post({ json: { content: { title: "Release **1.0** shipped", message: "Go [look](https://example.com)" } } }))
        .status,
    ).toBe(204);
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

/** Cookies per host, enough to walk a redirect chain like a browser. */
class Jar {
  private readonly cookies = new Map<string, Map<string, string>>();
  absorb(url: string, res: Response) {
    const host = new URL(url).host;
    const jar = this.cookies.get(host) ?? new Map<string, string>();
    for (const line of res.headers.getSetCookie()) {
      const [pair = ""] = line.split(";");
      const eq = pair.indexOf("=");
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      if (/max-age=0|expires=thu, 01 jan 1970/i.test(line) || value === "") jar.delete(name);
      else jar.set(name, value);
    }
    this.cookies.set(host, jar);
  }
  header(url: string): string {
    return [...(this.cookies.get(new URL(url).host) ?? new Map<string, string>())].map(([k, v]) => `${k}=${v}`).join("; ");
  }
  get(url: string, name: string): string | undefined {
    return this.cookies.get(new URL(url).host)?.get(name);
  }
}

describe("every endpoint over real HTTP", () => {
  it("answers each endpoint of the interface as documented", async () => {
    const anonymous = createHeraldClient({ baseUrl: herald.url });
    const login = async (email: string, password: string) => sessionTokenOf(await anonymous.users.login.$post({ json: { email, password } }));
    const ownerToken = await login("owner@e2e.test", "copper-meadow-lantern-81");
    const owner = createHeraldClient({ baseUrl: herald.url, token: ownerToken });

    const health = await fetch(`${herald.url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.text()).toBe("OK");
    const spec = (await (await fetch(`${herald.url}/api/v2/openapi.json`)).json()) as { openapi: string };
    expect(spec.openapi).toMatch(/^3\.1\./);

    // A1, A2, A6
    expect((await (await anonymous.auth.scopes.$get()).json()).external).toContain("all");
    const check = await owner.authcheck.$post({ json: { checks: { all: { action: "delete", object: { resource_type: "*" } } } } });
    expect(await check.json()).toEqual({ all: true });
    expect(await (await owner.users["validate-password"].$post({ json: { password: "short" } })).json()).toMatchObject({ valid: false });

    // Accounts: create, list, roles, suspend/activate, tokens, delete.
    const created = await owner.users.$post({ json: { email: "temp@e2e.test", username: "temp", password: "silver-orchard-kettle-55" } });
    const temp = (await created.json()) as { id: string };
    expect((await owner.users.$get({ query: { q: "temp" } })).status).toBe(200);
    expect((await owner.users[":user"].roles.$put({ param: { user: temp.id }, json: { roles: ["auditor"] } })).status).toBe(200);
    expect((await owner.users[":user"].status[":status{suspend|activate}"].$put({ param: { user: temp.id, status: "suspend" } })).status).toBe(200);
    expect((await owner.users[":user"].status[":status{suspend|activate}"].$put({ param: { user: temp.id, status: "activate" } })).status).toBe(200);

    // A broadcast to the temporary user, through the typed client and the real local queue (docs/broadcasts.md);
    // the same Idempotency-Key answers the same broadcast.
    const broadcastBody = { audience: { user_ids: [temp.id] }, content: { title: "Story broadcast", message: "" } };
    const posted = await owner.notifications.broadcasts.$post({ json: broadcastBody, header: { "idempotency-key": "story-1" } });
    expect(posted.status).toBe(202);
    const broadcast = await posted.json();
    expect(broadcast.recipients).toBe(1);
    expect(await (await owner.notifications.broadcasts.$post({ json: broadcastBody, header: { "idempotency-key": "story-1" } })).json()).toEqual(
      broadcast,
    );
    const done = await waitFor(async () => {
      const progress = await (await owner.notifications.broadcasts[":id"].$get({ param: { id: broadcast.id } })).json();
      return progress.completed_at ? progress : undefined;
    });
    expect(done).toMatchObject({ recipients: 1, delivered: 1, failed: 0, pending: 0 });
    const token = await owner.users[":user"].keys.tokens.$post({ param: { user: "me" }, json: { token_name: "e2e", scopes: ["user:read"] } });
    const { key } = (await token.json()) as { key: string };
    expect((await owner.users[":user"].keys.tokens.$get({ param: { user: "me" } })).status).toBe(200);
    expect((await owner.users[":user"].keys[":id"].$delete({ param: { user: "me", id: key.slice(0, 10) } })).status).toBe(204);

    // Notifications: N2, N3, N4, N7, N8, N9, N10, N11, N12, N13.
    expect(await (await owner.notifications["dispatch-methods"].$get()).json()).toEqual([{ available: ["smtp", "webhook"], default: "smtp" }]);
    expect((await owner.notifications.test.$post()).status).toBe(200);
    const inbox = await waitFor(async () => {
      const body = await (await owner.notifications.inbox.$get({ query: {} })).json();
      return body.notifications.length > 0 ? body : undefined;
    });
    expect(inbox.notifications[0]?.template_id).toBe("c425f63e-716a-4bf4-ae24-78348f706c3f");
    expect((await owner.notifications.inbox["mark-all-as-read"].$put()).status).toBe(204);
    expect((await (await owner.notifications.inbox.$get({ query: { read_status: "unread" } })).json()).unread_count).toBe(0);
    expect(await (await owner.notifications.settings.$get()).json()).toEqual({ notifier_paused: false });
    expect((await owner.notifications.settings.$put({ json: { notifier_paused: false } })).status).toBe(304);
    expect((await (await owner.notifications.templates.system.$get()).json()).length).toBe(20);
    // Custom Notification (N1's) and Broadcast (docs/broadcasts.md).
    expect((await (await owner.notifications.templates.custom.$get()).json()).length).toBe(2);
    expect((await owner.users[":user"].notifications.preferences.$get({ param: { user: "me" } })).status).toBe(200);
    expect((await owner.users[":user"].notifications.preferences.$put({ param: { user: "me" }, json: { template_disabled_map: {} } })).status).toBe(
      200,
    );
    // Web Push (docs/push.md): the public key, and a browser subscribed, listed and removed (nothing is pushed to it).
    const { public_key: publicKey } = await (await anonymous.notifications.push["public-key"].$get()).json();
    expect(publicKey).toMatch(/^B[\w-]{86}$/);
    const browser = {
      endpoint: "https://fcm.googleapis.com/fcm/send/e2e-story",
      keys: { p256dh: "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4", auth: "BTBZMqHH6r4Tts7J_aSIgg" },
    };
    const subscribed = await owner.users[":user"]["push-subscriptions"].$post({ param: { user: "me" }, json: browser });
    expect(subscribed.status).toBe(201);
    const subscription = (await subscribed.json()) as { id: string; endpoint_origin: string };
    expect(subscription.endpoint_origin).toBe("https://fcm.googleapis.com");
    expect((await (await owner.users[":user"]["push-subscriptions"].$get({ param: { user: "me" } })).json()).map((s) => s.id)).toEqual([
      subscription.id,
    ]);
    expect((await owner.users[":user"]["push-subscriptions"][":id"].$delete({ param: { user: "me", id: subscription.id } })).status).toBe(204);

    // A7 and external sign-in through the real OpenID provider.
    const convert = await owner.users[":user"]["convert-login"].$post({ param: { user: temp.id }, json: { password: "x", to_type: "oidc" } });
    expect(convert.status).toBe(403);
    await control("/control/oidc/next-login", { sub: "e2e-oidc-1", email: "oidc@e2e.test", email_verified: true, name: "Ida" });
    expect((await owner.users.$post({ json: { email: "oidc@e2e.test", username: "ida", login_type: "oidc" } })).status).toBe(201);
    const jar = new Jar();
    let url = `${herald.url}/api/v2/users/oidc/callback?redirect=/dashboard`;
    let res: Response | undefined;
    for (let hop = 0; hop < 12; hop++) {
      res = await fetch(url, { redirect: "manual", headers: { cookie: jar.header(url) } });
      jar.absorb(url, res);
      const location = res.headers.get("location");
      if (!location || (url.startsWith(herald.url) && hop > 0)) break;
      url = new URL(location, url).href;
    }
    expect(res?.status).toBe(302);
    expect(res?.headers.get("location")).toBe("/dashboard");
    const session = jar.get(herald.url, "service_session_token");
    expect(session).toBeDefined();
    const ida = createHeraldClient({ baseUrl: herald.url, token: session });
    expect(await (await ida.users[":user"].$get({ param: { user: "me" } })).json()).toMatchObject({ username: "ida", login_type: "oidc" });

    // The temporary user's data, exported by the owner as one document (docs/privacy.md, "The export").
    const exported = await owner.users[":user"].export.$get({ param: { user: temp.id } });
    expect(exported.status).toBe(200);
    expect(JSON.parse(await exported.text())).toMatchObject({ user_id: temp.id, account: { username: "temp" } });

    // Logout and delete.
    expect((await ida.users.logout.$post()).status).toBe(200);
    expect((await owner.users[":user"].$delete({ param: { user: temp.id } })).status).toBe(200);
  }, 180_000);
});
