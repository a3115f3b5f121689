import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { watchInbox, type NotificationFrame, type WatchStopReason } from "../../src/client/watch";
import { startHerald } from "./harness";

/** The browser/Node watch helper against the real Worker on a real port. */
describe("watchInbox()", () => {
  let herald: Awaited<ReturnType<typeof startHerald>>;
  const api = (path: string, init: RequestInit = {}) =>
    fetch(new URL(`/api/v2${path}`, herald.url), { ...init, headers: { "Content-Type": "application/json", ...init.headers } });

  beforeAll(async () => {
    herald = await startHerald();
    const owner = { email: "client-owner@herald.test", username: "client-owner", password: "amber-harbour-lantern-42" };
    expect((await api("/users/first", { method: "POST", body: JSON.stringify(owner) })).status).toBe(201);
  }, 120_000);

  afterAll(async () => {
    await herald?.server.close();
  });

  async function session() {
    const res = await api("/users/login", { method: "POST", body: JSON.stringify({ email: "client-owner@herald.test", password: "amber-harbour-lantern-42" }) });
    const { session_token: token } = (await res.json()) as { session_token: string };
    const me = (await (await api("/users/me", { headers: { "Service-Session-Token": token } })).json()) as { id: string };
    return { token, userId: me.id };
  }

  async function deliver(userId: string, title: string, targets: string[] = []) {
    const id = crypto.randomUUID();
    await herald.env.USER_INBOX.get(herald.env.USER_INBOX.idFromName(userId)).deliver({
      id, userId, templateId: "c425f63e-716a-4bf4-ae24-78348f706c3f", templateGroup: "Notification Events",
      targets, title, content: "", icon: "", actions: [], createdAt: new Date().toISOString(),
    });
    return id;
  }

  it("receives matching notifications with its filters, in the asked format", async () => {
    const { token, userId } = await session();
    const target = crypto.randomUUID();
    const frames: NotificationFrame[] = [];
    const statuses: string[] = [];
    const handle = watchInbox({
      baseUrl: herald.url.href,
      token,
      targets: [target],
      format: "plaintext",
      onNotification: (f) => frames.push(f),
      onStatus: (s) => statuses.push(s),
    });
    await expect.poll(() => statuses.includes("open"), { timeout: 10_000 }).toBe(true);
    await deliver(userId, "not for this filter");
    const id = await deliver(userId, "**for** the filter", [target]);
    await expect.poll(() => frames.length, { timeout: 10_000 }).toBe(1);
    expect(frames[0]?.notification).toMatchObject({ id, title: "for the filter" });

    handle.close();
    expect(await handle.stopped).toBe<WatchStopReason>("closed");
  });

  it("stops without retrying when the token is rejected", async () => {
    const handle = watchInbox({ baseUrl: herald.url.href, token: "AAAAAAAAAA-BBBBBBBBBBBBBBBBBBBBBB", onNotification: () => undefined });
    expect(await handle.stopped).toBe<WatchStopReason>("unauthorized");
  });

  it("close() stops it", async () => {
    const { token } = await session();
    const statuses: string[] = [];
    const handle = watchInbox({ baseUrl: herald.url.href, token, onNotification: () => undefined, onStatus: (s) => statuses.push(s) });
    await expect.poll(() => statuses.includes("open"), { timeout: 10_000 }).toBe(true);
    handle.close();
    expect(await handle.stopped).toBe<WatchStopReason>("closed");
  });
});

/** The reconnect schedule, with a socket that fails on demand (the policy is the client's own logic). */
describe("watchInbox() reconnects", () => {
  it("backs off with full jitter, resubscribes with the same URL, and resets after a successful open", async () => {
    const urls: string[] = [];
    const delays: number[] = [];
    let plan = ["fail", "fail", "open-then-drop", "fail"];
    class FlakySocket extends EventTarget {
      constructor(url: string, readonly protocols: string[]) {
        super();
        urls.push(url);
        const step = plan.shift() ?? "open";
        queueMicrotask(() => {
          if (step !== "fail") this.dispatchEvent(new Event("open"));
          if (step !== "open") this.dispatchEvent(Object.assign(new Event("close"), { code: 1006 }));
        });
      }
      close() {}
    }
    const handle = watchInbox({
      baseUrl: "http://herald.test",
      token: "tok",
      targets: ["11111111-1111-4111-8111-111111111111"],
      onNotification: () => undefined,
      WebSocket: FlakySocket as unknown as typeof WebSocket,
      fetch: async () => new Response(null, { status: 200 }),
      random: () => 1,
      setTimeout: (fn, ms) => {
        delays.push(ms);
        queueMicrotask(fn);
      },
      backoff: { initialMs: 100, maxMs: 1000 },
    });
    await expect.poll(() => urls.length).toBe(5);
    expect(delays).toEqual([100, 200, 100, 200]);
    expect(new Set(urls).size).toBe(1);
    expect(urls[0]).toBe("ws://herald.test/api/v2/notifications/inbox/watch?targets=11111111-1111-4111-8111-111111111111");
    handle.close();
    plan = [];
  });

  it("stops for good on close code 4401 (session ended) without reconnecting", async () => {
    let sockets = 0;
    class EndedSocket extends EventTarget {
      constructor() {
        super();
        sockets += 1;
        queueMicrotask(() => {
          this.dispatchEvent(new Event("open"));
          this.dispatchEvent(Object.assign(new Event("close"), { code: 4401 }));
        });
      }
      close() {}
    }
    const handle = watchInbox({
      baseUrl: "http://herald.test",
      token: "tok",
      onNotification: () => undefined,
      WebSocket: EndedSocket as unknown as typeof WebSocket,
      setTimeout: (fn) => queueMicrotask(fn),
    });
    expect(await handle.stopped).toBe<WatchStopReason>("session-ended");
    expect(sockets).toBe(1);
  });
});
