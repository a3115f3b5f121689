import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { Messages } from "../../src/http/errors";
import { InboxMessages } from "../../src/inbox/messages";
import { FALLBACK_ICONS } from "../../src/inbox/model";
import type { UserInbox } from "../../src/inbox/user-inbox";
import { call, createUser, expectError, json } from "../helpers";
import { deliver, inbox, LIMITS, list, TEMPLATE_A, TEMPLATE_B } from "./inbox-helpers";

describe('N3 GET /notifications/inbox (docs/api.md, "Notifications")', () => {
  it("lists the caller's notifications newest first with every interface field and the unread count", async () => {
    const user = await createUser();
    const first = await deliver(user.id);
    const second = await deliver(user.id, { icon: "https://example.com/icon.png" });
    const body = await list(user.token);
    expect(body.unread_count).toBe(2);
    expect(body.notifications.map((n) => n.id)).toEqual([second.id, first.id]);
    expect(body.notifications[1]).toEqual({
      id: first.id,
      user_id: user.id,
      template_id: TEMPLATE_A,
      targets: [],
      title: first.title,
      content: first.content,
      icon: FALLBACK_ICONS.other,
      actions: first.actions,
      read_at: null,
      created_at: first.createdAt,
      // Item states (docs/inbox.md): new fields, so a client of the interface's shape keeps working.
      archived_at: null,
      snoozed_until: null,
    });
    expect(body.seq).toBe(2);
    expect(body.notifications[0]?.icon).toBe("https://example.com/icon.png");
  });

  it("an empty inbox is an empty array, never null", async () => {
    const user = await createUser();
    expect(await list(user.token)).toEqual({ notifications: [], unread_count: 0, seq: 0 });
  });

  it("filters by targets (all), templates (any) and read_status, alone and combined; unread_count ignores filters", async () => {
    const user = await createUser();
    const [t1, t2] = [crypto.randomUUID(), crypto.randomUUID()];
    const both = await deliver(user.id, { targets: [t1, t2] });
    const onlyT1 = await deliver(user.id, { targets: [t1], templateId: TEMPLATE_B });
    const none = await deliver(user.id, { templateId: TEMPLATE_B });
    await inbox(user.id).setReadStatus(onlyT1.id, true);
    const ids = async (q: string) => (await list(user.token, q)).notifications.map((n) => n.id);

    expect(await ids(`?targets=${t1}`)).toEqual([onlyT1.id, both.id]);
    expect(await ids(`?targets=${t1},${t2}`)).toEqual([both.id]);
    expect(await ids(`?templates=${TEMPLATE_B}`)).toEqual([none.id, onlyT1.id]);
    expect(await ids(`?templates=${TEMPLATE_A},${TEMPLATE_B}`)).toEqual([none.id, onlyT1.id, both.id]);
    expect(await ids("?read_status=read")).toEqual([onlyT1.id]);
    expect(await ids("?read_status=unread")).toEqual([none.id, both.id]);
    expect(await ids("?read_status=all")).toHaveLength(3);
    expect(await ids(`?targets=${t1}&templates=${TEMPLATE_B}&read_status=read`)).toEqual([onlyT1.id]);
    expect(await ids(`?targets=${t1}&read_status=unread`)).toEqual([both.id]);
    expect((await list(user.token, `?targets=${t2}`)).unread_count).toBe(2);
  });

  it("pages a 60-item inbox with equal created_at values: no row skipped or repeated", async () => {
    const user = await createUser();
    const sameTime = "2026-02-02T02:02:02.000Z";
    const delivered = [];
    for (let i = 0; i < 60; i++) delivered.push(await deliver(user.id, { createdAt: i % 3 === 0 ? "2026-02-02T02:02:03.000Z" : sameTime }));
    const seen: string[] = [];
    let cursor = "";
    for (let page = 0; page < 10; page++) {
      const body = await list(user.token, `?limit=7${cursor ? `&starting_before=${cursor}` : ""}`);
      if (body.notifications.length === 0) break;
      seen.push(...body.notifications.map((n) => n.id));
      cursor = body.notifications.at(-1)?.id ?? "";
    }
    expect(seen).toHaveLength(60);
    expect(new Set(seen).size).toBe(60);
    expect(new Set(seen)).toEqual(new Set(delivered.map((d) => d.id)));
    // Default page size is 25.
    expect((await list(user.token)).notifications).toHaveLength(25);
  });

  // docs/inbox.md: the list renders like the watch, so a client that shows plain text shows both alike (the dashboard).
  it("format=plaintext renders title and content as the watch does; markdown (the default) leaves them as stored", async () => {
    const user = await createUser();
    const stored = await deliver(user.id, { title: "Build **failed**", content: "See [the log](https://ci.example.com/1)." });
    const plain = await list(user.token, "?format=plaintext");
    expect(plain.notifications[0]).toMatchObject({ id: stored.id, title: "Build failed", content: "See the log (https://ci.example.com/1)." });
    expect((await list(user.token)).notifications[0]).toMatchObject({ title: stored.title, content: stored.content });
    expect((await list(user.token, "?format=markdown")).notifications[0]?.title).toBe(stored.title);
    const body = await expectError(await call("GET", "/notifications/inbox?format=html", { token: user.token }), 400, Messages.validation);
    expect(body.validations?.[0]?.field).toBe("format");
  });

  it("limit is 1..100", async () => {
    const user = await createUser();
    await deliver(user.id);
    expect((await list(user.token, "?limit=1")).notifications).toHaveLength(1);
    expect((await list(user.token, "?limit=100")).notifications).toHaveLength(1);
    for (const bad of ["0", "101", "abc", "1.5"]) {
      const body = await expectError(await call("GET", `/notifications/inbox?limit=${bad}`, { token: user.token }), 400, Messages.validation);
      expect(body.validations?.[0]?.field).toBe("limit");
    }
  });

  it("answers 400 with validations for bad UUIDs, read_status, unknown parameters and a foreign cursor", async () => {
    const user = await createUser();
    const other = await createUser();
    const foreign = await deliver(other.id);
    const cases: [string, string][] = [
      ["?targets=not-a-uuid", "targets"],
      [`?templates=${TEMPLATE_A},nope`, "templates"],
      ["?read_status=maybe", "read_status"],
      ["?starting_before=123", "starting_before"],
      [`?starting_before=${foreign.id}`, "starting_before"],
      [`?starting_before=${crypto.randomUUID()}`, "starting_before"],
      ["?bogus=1", "bogus"],
    ];
    for (const [query, field] of cases) {
      const body = await expectError(await call("GET", `/notifications/inbox${query}`, { token: user.token }), 400, Messages.validation);
      expect(
        body.validations?.map((v) => v.field),
        query,
      ).toContain(field);
    }
  });

  it("requires authentication", async () => {
    await expectError(await call("GET", "/notifications/inbox"), 401);
  });
});

describe("N4 PUT /notifications/inbox/mark-all-as-read", () => {
  it("marks every unread notification read and keeps earlier read_at values", async () => {
    const user = await createUser();
    const early = await deliver(user.id);
    await deliver(user.id);
    await deliver(user.id);
    const marked = await inbox(user.id).setReadStatus(early.id, true);
    const res = await call("PUT", "/notifications/inbox/mark-all-as-read", { token: user.token });
    expect(res.status).toBe(204);
    expect(await res.text()).toBe("");
    const body = await list(user.token);
    expect(body.unread_count).toBe(0);
    expect(body.notifications.every((n) => n.read_at !== null)).toBe(true);
    expect(body.notifications.find((n) => n.id === early.id)?.read_at).toBe(marked?.notification.read_at);
  });
});

describe("N6 PUT /notifications/inbox/{id}/read-status", () => {
  it("sets and clears read_at and answers {message, notification, unread_count}", async () => {
    const user = await createUser();
    const n = await deliver(user.id);
    await deliver(user.id);
    const read = await call("PUT", `/notifications/inbox/${n.id}/read-status`, { token: user.token, body: { is_read: true } });
    expect(read.status).toBe(200);
    const readBody = await json<{ message: string; notification: { id: string; read_at: string | null }; unread_count: number }>(read);
    expect(readBody.message).toBe(InboxMessages.markedRead);
    expect(readBody.notification.id).toBe(n.id);
    expect(Date.parse(readBody.notification.read_at ?? "")).toBeGreaterThan(0);
    expect(readBody.unread_count).toBe(1);
    // Setting the same state again changes nothing.
    const again = await json<{ unread_count: number }>(
      await call("PUT", `/notifications/inbox/${n.id}/read-status`, { token: user.token, body: { is_read: true } }),
    );
    expect(again.unread_count).toBe(1);
    const unread = await json<{ notification: { read_at: string | null }; unread_count: number }>(
      await call("PUT", `/notifications/inbox/${n.id}/read-status`, { token: user.token, body: { is_read: false } }),
    );
    expect(unread.notification.read_at).toBeNull();
    expect(unread.unread_count).toBe(2);
  });

  it("400 for a non-UUID id or a missing/mistyped is_read; 404 for unknown or another user's notification", async () => {
    const user = await createUser();
    const other = await createUser();
    const theirs = await deliver(other.id);
    await expectError(
      await call("PUT", "/notifications/inbox/abc/read-status", { token: user.token, body: { is_read: true } }),
      400,
      Messages.validation,
    );
    const missing = await expectError(
      await call("PUT", `/notifications/inbox/${theirs.id}/read-status`, { token: user.token, body: {} }),
      400,
      Messages.validation,
    );
    expect(missing.validations?.[0]?.field).toBe("is_read");
    await expectError(await call("PUT", `/notifications/inbox/${theirs.id}/read-status`, { token: user.token, body: { is_read: "yes" } }), 400);
    await expectError(await call("PUT", `/notifications/inbox/${theirs.id}/read-status`, { token: user.token, body: { is_read: true } }), 404);
    await expectError(
      await call("PUT", `/notifications/inbox/${crypto.randomUUID()}/read-status`, { token: user.token, body: { is_read: true } }),
      404,
    );
    // The other user's notification is untouched.
    expect((await list(other.token)).notifications[0]?.read_at).toBeNull();
  });
});

describe("a member cannot reach another user's inbox", () => {
  it("lists, marks and reads only its own", async () => {
    const a = await createUser();
    const b = await createUser();
    await deliver(b.id);
    expect((await list(a.token)).notifications).toHaveLength(0);
    await call("PUT", "/notifications/inbox/mark-all-as-read", { token: a.token });
    expect((await list(b.token)).unread_count).toBe(1);
  });
});

describe("delivery entry point", () => {
  it("is idempotent on the notification id", async () => {
    const user = await createUser();
    const n = await deliver(user.id);
    const again = await inbox(user.id).deliver({ ...n, title: "changed" }, LIMITS);
    expect(again).toEqual({ stored: false, unreadCount: 1 });
    const body = await list(user.token);
    expect(body.notifications).toHaveLength(1);
    expect(body.notifications[0]?.title).toBe(n.title);
  });

  it("falls back to an icon by template group", async () => {
    const user = await createUser();
    const groups: [string, string][] = [
      ["User Events", FALLBACK_ICONS.account],
      ["Security Events", FALLBACK_ICONS.account],
      ["Workspace Events", FALLBACK_ICONS.workspace],
      ["Template Events", FALLBACK_ICONS.template],
      ["Custom Events", FALLBACK_ICONS.other],
    ];
    for (const [templateGroup] of groups) await deliver(user.id, { templateGroup });
    const icons = (await list(user.token)).notifications.map((n) => n.icon).reverse();
    expect(icons).toEqual(groups.map(([, icon]) => icon));
  });

  it("keeps unread_count equal to the unread rows under concurrent deliveries, toggles and mark-all", async () => {
    const user = await createUser();
    const stub = inbox(user.id);
    const base = await Promise.all(Array.from({ length: 10 }, () => deliver(user.id)));
    const ops: Promise<unknown>[] = [];
    for (let i = 0; i < 40; i++) {
      const target = base[i % base.length];
      if (i % 7 === 0) {
        ops.push(call("PUT", "/notifications/inbox/mark-all-as-read", { token: user.token }).then((r) => expect(r.status).toBe(204)));
      } else if (i % 3 === 0 && target) ops.push(stub.setReadStatus(target.id, i % 2 === 0));
      else ops.push(deliver(user.id));
      if (i % 5 === 0 && target) ops.push(deliver(user.id, { ...target })); // duplicate delivery
    }
    await Promise.all(ops);
    const { rows, unread, counter } = await runInDurableObject(stub, (_: UserInbox, state) => {
      const total = state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM inbox_notifications").one().n;
      const unreadRows = state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM inbox_notifications WHERE read_at IS NULL").one().n;
      const value = state.storage.sql.exec<{ value: number }>("SELECT value FROM inbox_counters WHERE name = 'unread'").one().value;
      return { rows: total, unread: unreadRows, counter: value };
    });
    const deliveries = 10 + Array.from({ length: 40 }, (_, i) => i).filter((i) => !(i % 7 === 0) && !(i % 3 === 0)).length;
    expect(rows).toBe(deliveries);
    expect(counter).toBe(unread);
    expect((await list(user.token)).unread_count).toBe(unread);
  });
});
