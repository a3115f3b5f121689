import { createExecutionContext, evictDurableObject, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Env } from "../../src/env";
import { Messages } from "../../src/http/errors";
import { InboxMessages } from "../../src/inbox/messages";
import { BASE, call, createUser, expectError, fetchApp, login, owner } from "../helpers";
import { deliver, inbox, TEMPLATE_A, TEMPLATE_B, watch } from "./inbox-helpers";

const WATCH = "/notifications/inbox/watch";

describe('N5 GET /notifications/inbox/watch (docs/api.md, "Watching the inbox")', () => {
  it("sends each matching new notification as one frame {seq, notification, unread_count}", async () => {
    const user = await createUser();
    const w = await watch("", { "Service-Session-Token": user.token });
    const n = await deliver(user.id);
    const frame = await w.next();
    // The interface's frame plus `seq` (docs/inbox.md, "Sequenced sync").
    expect(Object.keys(frame).sort()).toEqual(["notification", "seq", "unread_count"]);
    expect(frame.seq).toBe(1);
    expect(frame.unread_count).toBe(1);
    expect(frame.notification).toMatchObject({ id: n.id, user_id: user.id, title: n.title, content: n.content, read_at: null });
    w.ws.close();
  });

  it("filters by targets, templates and read_status; only matching deliveries arrive", async () => {
    const user = await createUser();
    const target = crypto.randomUUID();
    const w = await watch(`?targets=${target}&templates=${TEMPLATE_B}`, { "Service-Session-Token": user.token });
    await deliver(user.id, { templateId: TEMPLATE_B }); // no target
    await deliver(user.id, { templateId: TEMPLATE_A, targets: [target] }); // wrong template
    const match = await deliver(user.id, { templateId: TEMPLATE_B, targets: [target, crypto.randomUUID()] });
    const frame = await w.next();
    expect((frame.notification as { id: string }).id).toBe(match.id);
    expect(await w.quiet()).toBe(true);
    const readOnly = await watch("?read_status=read", { "Service-Session-Token": user.token });
    await deliver(user.id);
    expect(await readOnly.quiet()).toBe(true); // new notifications are unread
  });

  it("renders plaintext with a real Markdown parser: emphasis and headings stripped, links as text (url)", async () => {
    const user = await createUser();
    const w = await watch("?format=plaintext", { "Service-Session-Token": user.token });
    const md = await watch("?format=markdown", { "Service-Session-Token": user.token });
    await deliver(user.id, {
      title: "# Build **failed** on _main_",
      content: "See [the log](https://ci.example.com/1) and `retry`.\n\n- one\n- **two**",
    });
    const frame = (await w.next()).notification as { title: string; content: string };
    expect(frame.title).toBe("Build failed on main");
    expect(frame.content).toBe("See the log (https://ci.example.com/1) and retry.\n\n- one\n- two");
    const raw = (await md.next()).notification as { title: string };
    expect(raw.title).toBe("# Build **failed** on _main_");
  });

  it("delivers to every socket of the user", async () => {
    const user = await createUser();
    const a = await watch("", { "Service-Session-Token": user.token });
    const b = await watch("", { Authorization: `Bearer ${user.token}` });
    const n = await deliver(user.id);
    expect(((await a.next()).notification as { id: string }).id).toBe(n.id);
    expect(((await b.next()).notification as { id: string }).id).toBe(n.id);
  });

  it("keeps sockets and their filters across eviction of the inbox object", async () => {
    const user = await createUser();
    const target = crypto.randomUUID();
    const w = await watch(`?targets=${target}&format=plaintext`, { "Service-Session-Token": user.token });
    await evictDurableObject(inbox(user.id));
    await deliver(user.id); // does not match the filter
    const match = await deliver(user.id, { targets: [target], title: "**bold**" });
    const frame = (await w.next()).notification as { id: string; title: string };
    expect(frame.id).toBe(match.id);
    expect(frame.title).toBe("bold");
    expect(await w.quiet()).toBe(true);
  });

  it("answers ping with pong without involving the object", async () => {
    const user = await createUser();
    const w = await watch("", { "Service-Session-Token": user.token });
    const pong = new Promise<string>((resolve) => w.ws.addEventListener("message", (e) => resolve(String(e.data)), { once: true }));
    w.ws.send("ping");
    expect(await pong).toBe("pong");
  });

  it("opt-in sync (and its first name, sync_read_state) pushes change frames after N6 and N4; default sockets get none", async () => {
    const user = await createUser();
    const synced = await watch("?sync_read_state=true", { "Service-Session-Token": user.token });
    const named = await watch("?sync=true", { "Service-Session-Token": user.token });
    const plain = await watch("", { "Service-Session-Token": user.token });
    const n = await deliver(user.id);
    await deliver(user.id);
    await synced.next();
    await synced.next();
    await plain.next();
    await plain.next();
    await named.next();
    await named.next();
    await call("PUT", `/notifications/inbox/${n.id}/read-status`, { token: user.token, body: { is_read: true } });
    const one = await synced.next();
    expect(one).toMatchObject({ seq: 3, change: { ids: [n.id] }, unread_count: 1 });
    expect(Object.keys(one.change as object).sort()).toEqual(["ids", "read_at"]);
    expect(typeof (one.change as { read_at: string }).read_at).toBe("string");
    expect(await named.next()).toEqual(one);
    await call("PUT", "/notifications/inbox/mark-all-as-read", { token: user.token });
    expect(await synced.next()).toMatchObject({ seq: 4, change: { all: true }, unread_count: 0 });
    expect(await plain.quiet()).toBe(true);
  });

  it("accepts a token offered as a subprotocol and echoes only herald.v1", async () => {
    const user = await createUser();
    const w = await watch("", { "Sec-WebSocket-Protocol": `herald.v1, herald.token.${user.token}`, Origin: "https://dash.example.com" });
    expect(w.protocol).toBe("herald.v1");
    const n = await deliver(user.id);
    expect(((await w.next()).notification as { id: string }).id).toBe(n.id);
  });

  it("checks parameters and the upgrade before accepting, with JSON errors", async () => {
    const user = await createUser();
    const headers = { "Service-Session-Token": user.token, Upgrade: "websocket" };
    for (const [query, field] of [
      ["?format=html", "format"],
      ["?targets=x", "targets"],
      ["?read_status=new", "read_status"],
      ["?page=2", "page"],
      ["?after_seq=", "after_seq"],
      ["?after_seq=-1", "after_seq"],
      ["?after_seq=1.5", "after_seq"],
    ] as const) {
      const body = await expectError(await call("GET", `${WATCH}${query}`, { headers }), 400, Messages.validation);
      expect(body.validations?.map((v) => v.field)).toContain(field);
    }
    await expectError(await call("GET", WATCH, { token: user.token }), 400, InboxMessages.websocketOnly);
    await expectError(await call("GET", WATCH, { headers: { ...headers, "Sec-WebSocket-Protocol": "chat" } }), 400);
    await expectError(await call("GET", WATCH, { headers: { Upgrade: "websocket" } }), 401);
    await expectError(await call("GET", WATCH, { headers: { Upgrade: "websocket", "Sec-WebSocket-Protocol": "herald.v1, herald.token.bad" } }), 401);
  });

  it("a cookie-authenticated upgrade needs an allowed Origin", async () => {
    const user = await createUser();
    const cookie = `service_session_token=${user.token}`;
    await expectError(await call("GET", WATCH, { headers: { Upgrade: "websocket", Cookie: cookie, Origin: "https://evil.example.com" } }), 403);
    const ok = await watch("", { Cookie: cookie, Origin: "http://localhost:8787" });
    ok.ws.close();
  });

  it("a user's watch never receives another user's notifications", async () => {
    const a = await createUser();
    const b = await createUser();
    const w = await watch("", { "Service-Session-Token": a.token });
    await deliver(b.id);
    expect(await w.quiet()).toBe(true);
  });
});

describe("watch sockets end with their session", () => {
  const closed = (ws: WebSocket) => new Promise<CloseEvent>((resolve) => ws.addEventListener("close", resolve, { once: true }));

  it("logout closes the sockets that session opened with 4401; other sessions' sockets stay", async () => {
    const user = await createUser();
    const other = await login(user.email, user.password);
    const mine = await watch("", { "Service-Session-Token": user.token });
    const theirs = await watch("", { "Service-Session-Token": other });
    const ended = closed(mine.ws);
    expect((await call("POST", "/users/logout", { token: user.token })).status).toBe(200);
    expect((await ended).code).toBe(4401);
    const n = await deliver(user.id);
    expect(((await theirs.next()).notification as { id: string }).id).toBe(n.id);
  });

  it("ending a user's sessions closes their sessions' sockets with 4401; an API token's socket stays", async () => {
    const user = await createUser();
    const apiToken = (
      await (await call("POST", "/users/me/keys/tokens", { token: user.token, body: { token_name: "watcher" } })).json<{ key: string }>()
    ).key;
    const session = await watch("", { "Service-Session-Token": user.token });
    const byToken = await watch("", { "Service-Session-Token": apiToken });
    const ended = closed(session.ws);
    expect((await call("DELETE", `/users/${user.id}/keys/sessions`, { token: (await owner()).token })).status).toBe(204);
    expect((await ended).code).toBe(4401);
    const n = await deliver(user.id);
    expect(((await byToken.next()).notification as { id: string }).id).toBe(n.id);
  });

  const expireIn = async (token: string, ms: number) => {
    const keyId = token.split("-")[0] ?? "";
    await env.DB.prepare("UPDATE api_keys SET expires_at = ? WHERE id = ?")
      .bind(new Date(Date.now() + ms).toISOString(), keyId)
      .run();
  };

  it("a session that expires closes its sockets with 4401, from the inbox object's alarm", async () => {
    const user = await createUser();
    await expireIn(user.token, 1_500);
    const w = await watch("", { "Service-Session-Token": user.token });
    const ended = closed(w.ws);
    const event = await ended;
    expect(event.code).toBe(4401);
    expect(event.reason).toBe(InboxMessages.sessionExpired);
  });

  it("a session that slid forward while watched keeps its socket", async () => {
    const user = await createUser();
    await expireIn(user.token, 1_500);
    const w = await watch("", { "Service-Session-Token": user.token });
    let open = true;
    w.ws.addEventListener("close", () => (open = false));
    // Used elsewhere in the meantime: the session now lasts another hour.
    await expireIn(user.token, 3_600_000);
    await new Promise((r) => setTimeout(r, 2_500));
    expect(open).toBe(true);
    const n = await deliver(user.id);
    expect(((await w.next()).notification as { id: string }).id).toBe(n.id);
  });

  it("suspending the user closes every socket", async () => {
    const admin = await owner();
    const user = await createUser();
    const w = await watch("", { "Service-Session-Token": user.token });
    const ended = closed(w.ws);
    await call("PUT", `/users/${user.id}/status/suspend`, { token: admin.token });
    expect((await ended).code).toBe(4401);
  });
});

describe('watch sockets per user (docs/api.md, "Watching the inbox")', () => {
  /** A watch opened through a Worker whose WATCH_MAX_PER_USER is `max`. */
  async function watchCapped(token: string, max: number) {
    const ctx = createExecutionContext();
    const res = await fetchApp(
      new Request(`${BASE}/api/v2/notifications/inbox/watch`, { headers: { Upgrade: "websocket", "Service-Session-Token": token } }),
      { ...env, WATCH_MAX_PER_USER: String(max) } as Env,
      ctx,
    );
    await waitOnExecutionContext(ctx);
    expect(res.status).toBe(101);
    const ws = res.webSocket;
    if (!ws) throw new Error("no socket");
    ws.accept();
    const closed = new Promise<CloseEvent>((resolve) => ws.addEventListener("close", resolve, { once: true }));
    const frames: unknown[] = [];
    ws.addEventListener("message", (event) => {
      if (event.data !== "pong") frames.push(JSON.parse(String(event.data)));
    });
    return { ws, closed, frames };
  }

  it("past WATCH_MAX_PER_USER the oldest watch is closed with 4429, and every other one stays live", async () => {
    const user = await createUser();
    const other = await createUser();
    const sockets = [];
    for (let i = 0; i < 4; i++) sockets.push(await watchCapped(user.token, 3));
    const first = await Promise.race([sockets[0]?.closed, new Promise<undefined>((r) => setTimeout(() => r(undefined), 2000))]);
    expect(first?.code).toBe(4429);
    expect(first?.reason).toBe(InboxMessages.tooManyWatches);
    // Another user's watches are their own count.
    const theirs = await watchCapped(other.token, 3);
    await deliver(user.id);
    for (const socket of sockets.slice(1)) await expect.poll(() => socket.frames.length).toBe(1);
    expect(sockets[0]?.frames).toEqual([]);
    await deliver(other.id);
    await expect.poll(() => theirs.frames.length).toBe(1);
    for (const socket of [...sockets.slice(1), theirs]) socket.ws.close();
  });

  it("a fifth watch under a limit of 4 closes only one: the one opened first", async () => {
    const user = await createUser();
    const sockets = [];
    for (let i = 0; i < 5; i++) sockets.push(await watchCapped(user.token, 4));
    const outcome = async (s: { closed: Promise<CloseEvent> }) =>
      (await Promise.race([s.closed, new Promise<undefined>((r) => setTimeout(() => r(undefined), 300))]))?.code;
    expect(await Promise.all(sockets.map(outcome))).toEqual([4429, undefined, undefined, undefined, undefined]);
    for (const socket of sockets.slice(1)) socket.ws.close();
  });
});
