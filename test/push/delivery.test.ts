import { env } from "cloudflare:workers";
import { and, eq, ne } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { database } from "../../src/db/client";
import { auditLogs, notificationMessages, pushSubscriptions } from "../../src/db/schema";
import type { Env } from "../../src/env";
import { dispatchMessage } from "../../src/notifications/dispatch";
import { TEMPLATE_IDS } from "../../src/notifications/templates";
import { MAX_PLAINTEXT_BYTES } from "../../src/push/encryption";
import { PUSH_TTL_S } from "../../src/push/message";
import { PushMessages } from "../../src/push/messages";
import { messageRow } from "../fixtures/message-row";
import { call, createUser, json, type TestUser } from "../helpers";
import { type PushBrowser, type ReceivedPush, receivedPushes, scriptPushService, subscribeBrowser, waitFor } from "../peers";

/**
 * docs/push.md, "Delivery": push copies (message rows of method `push` whose `destination` is a subscription) sent by
 * dispatchMessage to the push-service stand-in (test/peers/push-service.ts), which checks each VAPID token with jose
 * and decrypts each message with http_ece, as a browser would; and every answer a push service gives, on cue.
 */

const DAY = 24 * 60 * 60 * 1000;
const CHANNEL_ADDED_TITLE = "A notification channel was added to your account";
const db = database(env.DB);

interface Subscribed {
  user: TestUser;
  browser: PushBrowser;
  subscriptionId: string;
}

/** A user with one browser subscribed through the API. */
async function subscribed(): Promise<Subscribed> {
  const [user, browser] = await Promise.all([createUser(), subscribeBrowser()]);
  const res = await call("POST", "/users/me/push-subscriptions", { token: user.token, body: browser.subscription });
  expect(res.status, await res.clone().text()).toBe(201);
  const { id } = await json<{ id: string }>(res);
  // Subscribing sends the channel-added security notice (docs/security.md, "Security notices"), to this browser too:
  // it is let arrive before the test scripts or counts anything, and `pushesOf` leaves it out.
  await waitFor(async () => ((await receivedPushes(browser)).length > 0 ? true : undefined));
  return { user, browser, subscriptionId: id };
}

/** What `browser` received, but the channel-added notices its own subscribing (and any other's) sent. */
async function pushesOf(browser: PushBrowser): Promise<ReceivedPush[]> {
  return (await receivedPushes(browser)).filter((p) => !p.payload?.includes(CHANNEL_ADDED_TITLE));
}

/**
 * A push copy for `to`, dated a day ahead of real time and sent with that clock: the retries it schedules are never
 * due for the real queue consumer, so only this test sends it (as in test/notifications/delivery-faults.test.ts).
 */
async function pushCopy(to: Subscribed, options: { templateId?: string; title?: string; message?: string; destination?: string } = {}) {
  const t0 = Date.now() + DAY;
  const title = options.title ?? `push ${crypto.randomUUID().slice(0, 8)}`;
  const row = messageRow({
    userId: to.user.id,
    method: "push",
    destination: options.destination ?? to.subscriptionId,
    templateId: options.templateId ?? TEMPLATE_IDS.custom,
    payload: { labels: { custom_title: title, custom_message: options.message ?? "The build is green." }, data: {} },
    createdAt: new Date(t0).toISOString(),
    updatedAt: new Date(t0).toISOString(),
  });
  await db.insert(notificationMessages).values(row);
  return { id: row.id, notificationId: row.notificationId, title, t0, createdAt: row.createdAt };
}

async function rowOf(id: string) {
  const [row] = await db.select().from(notificationMessages).where(eq(notificationMessages.id, id));
  if (!row) throw new Error(`no message ${id}`);
  return row;
}

const subscriptionExists = async (id: string) => (await db.select().from(pushSubscriptions).where(eq(pushSubscriptions.id, id))).length === 1;

describe('docs/push.md, "Delivery"', () => {
  it("a notification is pushed to each browser of its recipient, once each, through the queue", async () => {
    const to = await subscribed();
    const second = await subscribeBrowser();
    const res = await call("POST", "/users/me/push-subscriptions", { token: to.user.token, body: second.subscription });
    const secondId = (await json<{ id: string }>(res)).id;
    const title = `queued ${crypto.randomUUID().slice(0, 8)}`;
    expect(
      (await call("POST", "/notifications/custom", { token: to.user.token, body: { content: { title, message: "Both of them." } } })).status,
    ).toBe(204);
    for (const browser of [to.browser, second]) {
      const [push] = await waitFor(async () => {
        const pushes = await pushesOf(browser);
        return pushes.length > 0 ? pushes : undefined;
      });
      expect(push?.problem).toBeNull();
      expect(JSON.parse(push?.payload ?? "")).toMatchObject({ title, body: "Both of them." });
    }
    const rows = await waitFor(async () => {
      const copies = await db
        .select()
        .from(notificationMessages)
        .where(
          and(
            eq(notificationMessages.userId, to.user.id),
            eq(notificationMessages.method, "push"),
            ne(notificationMessages.templateId, TEMPLATE_IDS.channelAdded),
          ),
        );
      return copies.length === 2 && copies.every((c) => c.status === "sent") ? copies : undefined;
    });
    expect(rows.map((r) => r.destination).sort()).toEqual([to.subscriptionId, secondId].sort());
    expect((await pushesOf(to.browser)).length + (await pushesOf(second)).length).toBe(2);
  });

  it("pushes the item's JSON, encrypted to the browser, with TTL, normal urgency and a VAPID token for the service's origin", async () => {
    const to = await subscribed();
    const copy = await pushCopy(to, { message: "The **build** is green." });
    expect(await dispatchMessage(env, copy.id, copy.t0)).toBe("sent");
    const [push, ...more] = await pushesOf(to.browser);
    expect(more).toEqual([]);
    expect(push?.problem).toBeNull();
    expect(push?.status).toBe(201);
    expect(JSON.parse(push?.payload ?? "")).toEqual({
      id: copy.notificationId,
      title: copy.title,
      body: "The build is green.",
      url: `http://localhost:8787/#/inbox?item=${copy.notificationId}`,
      created_at: copy.createdAt,
    });
    expect(push?.headers).toEqual({
      ttl: String(PUSH_TTL_S),
      urgency: "normal",
      contentEncoding: "aes128gcm",
      contentType: "application/octet-stream",
      topic: null,
    });
    expect(push?.vapid).toMatchObject({ aud: env.PUSH_SERVICE_URL, sub: "mailto:herald@herald.test" });
    expect(push?.vapid?.exp).toBeLessThanOrEqual(Date.now() / 1000 + 24 * 3600);
    expect(await rowOf(copy.id)).toMatchObject({ status: "sent", statusReason: null, attempts: 1 });
  });

  it("marks mandatory templates (security notices) Urgency: high", async () => {
    const to = await subscribed();
    const copy = await pushCopy(to, { templateId: TEMPLATE_IDS.passwordChanged });
    expect(await dispatchMessage(env, copy.id, copy.t0)).toBe("sent");
    const [push] = await pushesOf(to.browser);
    expect(push?.headers.urgency).toBe("high");
    expect(JSON.parse(push?.payload ?? "")).toMatchObject({ title: "Your password was changed" });
  });

  it("cuts a long body so the message fits the 4,096 bytes a push service takes, and says so with an ellipsis", async () => {
    const to = await subscribed();
    const copy = await pushCopy(to, { message: 'é"'.repeat(3000) });
    expect(await dispatchMessage(env, copy.id, copy.t0)).toBe("sent");
    const [push] = await pushesOf(to.browser);
    expect(push?.problem).toBeNull();
    const payload = push?.payload ?? "";
    expect(new TextEncoder().encode(payload).byteLength).toBeLessThanOrEqual(MAX_PLAINTEXT_BYTES);
    const { body } = JSON.parse(payload) as { body: string };
    expect(body.endsWith("…")).toBe(true);
    // As much as fits: one more character would not.
    expect(new TextEncoder().encode(payload).byteLength).toBeGreaterThan(MAX_PLAINTEXT_BYTES - 4);
  });

  for (const status of [404, 410]) {
    it(`a ${status} from the push service removes the subscription (audited) and fails the copy for good`, async () => {
      const to = await subscribed();
      await scriptPushService(to.browser, [{ status }]);
      const copy = await pushCopy(to);
      expect(await dispatchMessage(env, copy.id, copy.t0)).toBe("failed");
      expect(await rowOf(copy.id)).toMatchObject({ status: "permanent_failure", statusReason: PushMessages.subscriptionGone(status) });
      expect(await subscriptionExists(to.subscriptionId)).toBe(false);
      const [entry] = await db
        .select()
        .from(auditLogs)
        .where(and(eq(auditLogs.resourceId, to.subscriptionId), eq(auditLogs.action, "expire")));
      expect(entry).toMatchObject({ action: "expire", resourceType: "push_subscription", userId: null, diff: { owner: to.user.id, status } });
      // The next copy to it has nothing to go to.
      const next = await pushCopy(to);
      expect(await dispatchMessage(env, next.id, next.t0)).toBe("failed");
      expect(await rowOf(next.id)).toMatchObject({ statusReason: PushMessages.subscriptionRemoved });
      expect(await pushesOf(to.browser)).toHaveLength(1);
    });
  }

  it("retries a 429 no sooner than its Retry-After, and a 500 on the backoff, then sends once", async () => {
    const to = await subscribed();
    await scriptPushService(to.browser, [{ status: 429, retryAfter: 600 }, { status: 500 }]);
    const copy = await pushCopy(to);
    expect(await dispatchMessage(env, copy.id, copy.t0)).toBe("retry");
    const limited = await rowOf(copy.id);
    expect(limited).toMatchObject({ status: "temporary_failure", statusReason: "push service answered 429: scripted 429" });
    const after429 = Date.parse(limited.nextRetryAfter ?? "");
    expect(after429 - copy.t0).toBeGreaterThanOrEqual(600_000);
    // Not due before then.
    expect(await dispatchMessage(env, copy.id, after429 - 1000)).toBe("not_taken");
    expect(await dispatchMessage(env, copy.id, after429)).toBe("retry");
    const failed = await rowOf(copy.id);
    expect(failed.statusReason).toBe("push service answered 500: scripted 500");
    expect(await dispatchMessage(env, copy.id, Date.parse(failed.nextRetryAfter ?? ""))).toBe("sent");
    const pushes = await pushesOf(to.browser);
    expect(pushes.map((p) => p.status)).toEqual([429, 500, 201]);
    expect(new Set(pushes.map((p) => p.payload)).size).toBe(1);
    expect(await subscriptionExists(to.subscriptionId)).toBe(true);
  });

  it("never follows a redirect, and fails for good on any other refusal", async () => {
    const to = await subscribed();
    await scriptPushService(to.browser, [{ status: 301 }, { status: 403 }]);
    const moved = await pushCopy(to);
    expect(await dispatchMessage(env, moved.id, moved.t0)).toBe("failed");
    expect((await rowOf(moved.id)).statusReason).toBe("push service answered 301: scripted 301 (a redirect, not followed)");
    const refused = await pushCopy(to);
    expect(await dispatchMessage(env, refused.id, refused.t0)).toBe("failed");
    expect((await rowOf(refused.id)).statusReason).toBe("push service answered 403: scripted 403");
    expect(await subscriptionExists(to.subscriptionId)).toBe(true);
  });

  it("fails a copy whose subscription was removed, or that names another user's, without pushing", async () => {
    const [mine, theirs] = await Promise.all([subscribed(), subscribed()]);
    const removed = await call("DELETE", `/users/me/push-subscriptions/${mine.subscriptionId}`, { token: mine.user.token });
    expect(removed.status).toBe(204);
    const orphan = await pushCopy(mine);
    expect(await dispatchMessage(env, orphan.id, orphan.t0)).toBe("failed");
    expect(await rowOf(orphan.id)).toMatchObject({ status: "permanent_failure", statusReason: PushMessages.subscriptionRemoved });
    const foreign = await pushCopy(mine, { destination: theirs.subscriptionId });
    expect(await dispatchMessage(env, foreign.id, foreign.t0)).toBe("failed");
    expect((await rowOf(foreign.id)).statusReason).toBe(PushMessages.subscriptionRemoved);
    expect([...(await pushesOf(mine.browser)), ...(await pushesOf(theirs.browser))]).toEqual([]);
  });

  it("retries when the push service cannot be reached", async () => {
    const to = await subscribed();
    // A port nothing listens on, allowed for this run only.
    const closed = "http://127.0.0.1:9";
    await db
      .update(pushSubscriptions)
      .set({ endpoint: `${closed}/push/nowhere` })
      .where(eq(pushSubscriptions.id, to.subscriptionId));
    const copy = await pushCopy(to);
    const reachable = { ...env, OUTBOUND_ALLOWED_ORIGINS: `${env.PUSH_SERVICE_URL},${closed}` } as Env;
    expect(await dispatchMessage(reachable, copy.id, copy.t0)).toBe("retry");
    expect(await rowOf(copy.id)).toMatchObject({ status: "temporary_failure", statusReason: "push service could not connect" });
  });

  it("fails for good, without a request, when push is off or the endpoint is no longer allowed", async () => {
    const to = await subscribed();
    const off = await pushCopy(to);
    expect(await dispatchMessage({ ...env, VAPID_PUBLIC_KEY: "", VAPID_PRIVATE_KEY: "" } as Env, off.id, off.t0)).toBe("failed");
    expect((await rowOf(off.id)).statusReason).toBe(PushMessages.deliveryNotConfigured);
    const moved = await pushCopy(to);
    expect(await dispatchMessage({ ...env, OUTBOUND_ALLOWED_ORIGINS: "https://push.example" } as Env, moved.id, moved.t0)).toBe("failed");
    expect((await rowOf(moved.id)).statusReason).toMatch(
      /^the push endpoint is no longer allowed: it must be on an origin listed in OUTBOUND_ALLOWED_ORIGINS/,
    );
    expect(await pushesOf(to.browser)).toEqual([]);
  });

  it("fails for good with the reason when the VAPID keys do not make a pair", async () => {
    const to = await subscribed();
    const copy = await pushCopy(to);
    const mismatched = { ...env, VAPID_PRIVATE_KEY: "UkkQJBJejsrRQ-8NCFCEllw0p5r_dnWTkU7imITcokE" } as Env;
    expect(await dispatchMessage(mismatched, copy.id, copy.t0)).toBe("failed");
    expect((await rowOf(copy.id)).statusReason).toBe("VAPID_PUBLIC_KEY is not the public key of VAPID_PRIVATE_KEY");
    expect(await pushesOf(to.browser)).toEqual([]);
  });
});
