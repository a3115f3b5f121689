import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ChangeFrame, type NotificationFrame, type WatchStatus, type WatchStopReason, watchInbox } from "../../src/client/watch";
import { INBOX_LIMITS, inboxOf, startHerald } from "./harness";

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
    const res = await api("/users/login", {
      method: "POST",
      body: JSON.stringify({ email: "client-owner@herald.test", password: "amber-harbour-lantern-42" }),
    });
    const { session_token: token } = (await res.json()) as { session_token: string };
    const me = (await (await api("/users/me", { headers: { "Service-Session-Token": token } })).json()) as { id: string };
    return { token, userId: me.id };
  }

  async function deliver(userId: string, title: string, targets: string[] = []) {
    const id = crypto.randomUUID();
    await inboxOf(herald.env, userId).deliver(
      {
        id,
        userId,
        templateId: "c425f63e-716a-4bf4-ae24-78348f706c3f",
        templateGroup: "Notification Events",
        targets,
        title,
        content: "",
        icon: "",
        actions: [],
        createdAt: new Date().toISOString(),
      },
      INBOX_LIMITS,
    );
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

  it("starts after afterSeq: what arrived between listing and watching is replayed, in seq order", async () => {
    const { token, userId } = await session();
    const counts = (await (await api("/notifications/inbox/counts", { headers: { "Service-Session-Token": token } })).json()) as { seq: number };
    const first = await deliver(userId, "before the watch, 1");
    const second = await deliver(userId, "before the watch, 2");
    const frames: NotificationFrame[] = [];
    const handle = watchInbox({ baseUrl: herald.url.href, token, afterSeq: counts.seq, onNotification: (f) => frames.push(f) });
    await expect.poll(() => frames.length, { timeout: 10_000 }).toBe(2);
    expect(frames.map((f) => [f.seq, f.notification.id])).toEqual([
      [counts.seq + 1, first],
      [counts.seq + 2, second],
    ]);
    expect(handle.seq).toBe(counts.seq + 2);
    handle.close();
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
      constructor(
        url: string,
        readonly protocols: string[],
      ) {
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

  it.each([
    [4401, "session-ended"],
    [4429, "replaced"],
  ] as const)("stops for good on close code %i (%s) without reconnecting", async (code, reason) => {
    let sockets = 0;
    class EndedSocket extends EventTarget {
      constructor() {
        super();
        sockets += 1;
        queueMicrotask(() => {
          this.dispatchEvent(new Event("open"));
          this.dispatchEvent(Object.assign(new Event("close"), { code }));
        });
      }
      close() {}
    }
    const handle = watchInbox({
      baseUrl: "http://herald.test",
      token: "tok",
      onNotification: () => undefined,
      WebSocket: EndedSocket as unknown as typeof WebSocket,
      fetch: async () => Response.json({ seq: 0 }),
      setTimeout: (fn) => queueMicrotask(fn),
    });
    expect(await handle.stopped).toBe<WatchStopReason>(reason);
    expect(sockets).toBe(1);
  });
});

/** A socket the test drives: it opens, sends frames and drops when told, and records the URL it was opened with. */
function fakeSockets() {
  const sockets: FakeSocket[] = [];
  class FakeSocket extends EventTarget {
    constructor(readonly url: string) {
      super();
      sockets.push(this);
    }
    open() {
      this.dispatchEvent(new Event("open"));
    }
    frame(frame: object) {
      this.dispatchEvent(new MessageEvent("message", { data: JSON.stringify(frame) }));
    }
    drop(code = 1006) {
      this.dispatchEvent(Object.assign(new Event("close"), { code }));
    }
    close() {}
  }
  const last = () => {
    const socket = sockets.at(-1);
    if (!socket) throw new Error("no socket yet");
    return socket;
  };
  const afterSeq = (socket: FakeSocket) => new URL(socket.url).searchParams.get("after_seq");
  return { sockets, last, afterSeq, WebSocket: FakeSocket as unknown as typeof WebSocket };
}

const notification = (seq: number, id = `n${seq}`) => ({ seq, notification: { id }, unread_count: seq });
const change = (seq: number, ids: string[]) => ({ seq, change: { ids, read_at: "2026-01-01T00:00:00.000Z" }, unread_count: 0 });

/** Resume by seq, with sockets the test drives: the client's own bookkeeping. */
describe("watchInbox() resumes by seq", () => {
  function watch(extra: Partial<Parameters<typeof watchInbox>[0]> & { countsSeq?: () => number } = {}) {
    const fake = fakeSockets();
    const fetched: string[] = [];
    const seen: number[] = [];
    const statuses: [WatchStatus, string | undefined][] = [];
    const { countsSeq = () => 0, ...rest } = extra;
    const handle = watchInbox({
      baseUrl: "http://herald.test",
      token: "tok",
      sync: true,
      onNotification: (f) => seen.push(f.seq),
      onChange: (f) => seen.push(f.seq),
      onStatus: (status, detail) => statuses.push([status, detail]),
      WebSocket: fake.WebSocket,
      fetch: async (input) => {
        fetched.push(String(input));
        return Response.json({ unread: 0, archived: 0, snoozed: 0, total: 0, by_template: [], seq: countsSeq() });
      },
      random: () => 0,
      setTimeout: (fn) => queueMicrotask(fn),
      ...rest,
    });
    return { ...fake, fetched, seen, statuses, handle };
  }

  /** The first connection opens and is closed with 4409; resolves once the client has opened the next one. */
  async function closeWith4409(w: ReturnType<typeof watch>) {
    await expect.poll(() => w.sockets.length).toBe(1);
    w.last().open();
    w.last().drop(4409);
    await expect.poll(() => w.sockets.length).toBe(2);
  }

  it("starts from the inbox's seq, then resumes with after_seq = the last delivered seq after a drop", async () => {
    const w = watch({ countsSeq: () => 5 });
    await expect.poll(() => w.sockets.length).toBe(1);
    expect(w.fetched).toEqual(["http://herald.test/api/v2/notifications/inbox/counts"]);
    expect(w.last().url).toBe("ws://herald.test/api/v2/notifications/inbox/watch?sync=true&after_seq=5");
    w.last().open();
    w.last().frame(notification(6));
    w.last().frame(change(7, ["n6"]));
    w.last().drop();
    await expect.poll(() => w.sockets.length).toBe(2);
    expect(w.afterSeq(w.last())).toBe("7");
    w.last().open();
    w.last().frame(notification(8));
    w.last().drop(4008); // fell behind: the same resume
    await expect.poll(() => w.sockets.length).toBe(3);
    expect(w.afterSeq(w.last())).toBe("8");
    expect(w.seen).toEqual([6, 7, 8]);
    expect(w.handle.seq).toBe(8);
    w.handle.close();
  });

  it("drops frames at or below the last delivered seq", async () => {
    const w = watch();
    await expect.poll(() => w.sockets.length).toBe(1);
    w.last().open();
    for (const seq of [1, 2, 2, 1, 3]) w.last().frame(notification(seq));
    w.last().drop();
    await expect.poll(() => w.sockets.length).toBe(2);
    w.last().open();
    // A replay that (wrongly) starts too early: only what is new gets through.
    for (const seq of [2, 3, 4]) w.last().frame(change(seq, ["n1"]));
    expect(w.seen).toEqual([1, 2, 3, 4]);
    w.handle.close();
  });

  it("afterSeq starts there without asking the server, and the first connection already resumes", async () => {
    const w = watch({ afterSeq: 42 });
    await expect.poll(() => w.sockets.length).toBe(1);
    expect(w.fetched).toEqual([]);
    expect(w.afterSeq(w.last())).toBe("42");
    w.last().open();
    w.last().frame(notification(42)); // already listed: not delivered
    w.last().frame(notification(43));
    expect(w.seen).toEqual([43]);
    w.handle.close();
  });

  it("on 4409 asks onResync (the application re-lists) and resumes from the seq it returns", async () => {
    let resyncs = 0;
    const w = watch({
      afterSeq: 3,
      onResync: async () => {
        resyncs += 1;
        return 120;
      },
    });
    await closeWith4409(w);
    expect(resyncs).toBe(1);
    expect(w.fetched).toEqual([]);
    expect(w.afterSeq(w.last())).toBe("120");
    expect(w.statuses).toContainEqual(["resynced", "120"]);
    w.last().open();
    w.last().frame(notification(121));
    expect(w.seen).toEqual([121]);
    w.handle.close();
  });

  it("on 4409 without onResync resumes from the counts endpoint's seq and reports it as resynced", async () => {
    const w = watch({ afterSeq: 3, countsSeq: () => 77 });
    await closeWith4409(w);
    expect(w.fetched).toEqual(["http://herald.test/api/v2/notifications/inbox/counts"]);
    expect(w.afterSeq(w.last())).toBe("77");
    expect(w.statuses).toContainEqual(["resynced", "77"]);
    w.handle.close();
  });

  it("a throwing onResync is retried with the reconnect backoff", async () => {
    let calls = 0;
    const w = watch({
      afterSeq: 3,
      onResync: () => {
        calls += 1;
        if (calls === 1) throw new Error("listing failed");
        return 9;
      },
    });
    await closeWith4409(w);
    expect(calls).toBe(2);
    expect(w.afterSeq(w.last())).toBe("9");
    w.handle.close();
  });

  it("an after_seq the server refuses (beyond its seq, so the upgrade fails) is resynced from the counts", async () => {
    const w = watch({ afterSeq: 500, countsSeq: () => 10 });
    await expect.poll(() => w.sockets.length).toBe(1);
    w.last().drop(); // never opened: the 400 before the upgrade
    await expect.poll(() => w.sockets.length).toBe(2);
    expect(w.afterSeq(w.last())).toBe("10");
    expect(w.statuses).toContainEqual(["resynced", "10"]);
    w.handle.close();
  });

  it("the deprecated syncReadState still asks for sync; without either there is no change frame", async () => {
    const legacy = watch({ sync: undefined, syncReadState: true });
    await expect.poll(() => legacy.sockets.length).toBe(1);
    expect(new URL(legacy.last().url).searchParams.get("sync")).toBe("true");
    legacy.handle.close();
    const plain = watch({ sync: undefined });
    await expect.poll(() => plain.sockets.length).toBe(1);
    expect(new URL(plain.last().url).searchParams.has("sync")).toBe(false);
    plain.handle.close();
  });

  it("delivers change frames to onChange with their seq", async () => {
    const changes: ChangeFrame[] = [];
    const w = watch({ onChange: (f) => changes.push(f) });
    await expect.poll(() => w.sockets.length).toBe(1);
    w.last().open();
    w.last().frame(change(1, ["a", "b"]));
    w.last().frame({ seq: 2, change: { all: true, read_at: "2026-01-01T00:00:00.000Z" }, unread_count: 0 });
    expect(changes.map((f) => [f.seq, f.change])).toEqual([
      [1, { ids: ["a", "b"], read_at: "2026-01-01T00:00:00.000Z" }],
      [2, { all: true, read_at: "2026-01-01T00:00:00.000Z" }],
    ]);
    w.handle.close();
  });

  it("a token rejected at start stops it before any socket opens", async () => {
    const fake = fakeSockets();
    const handle = watchInbox({
      baseUrl: "http://herald.test",
      token: "tok",
      onNotification: () => undefined,
      WebSocket: fake.WebSocket,
      fetch: async () => new Response(null, { status: 401 }),
    });
    expect(await handle.stopped).toBe<WatchStopReason>("unauthorized");
    expect(fake.sockets).toHaveLength(0);
  });
});
