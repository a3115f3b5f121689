import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { BROADCAST_DEAD_LETTER_QUEUE, BROADCAST_QUEUE, broadcastHousekeeping, deliverStep, resolveStep } from "../../src/broadcasts/fanout";
import { BroadcastMessages } from "../../src/broadcasts/messages";
import { handleBroadcastQueue } from "../../src/broadcasts/queue";
import type { BroadcastQueueMessage, Env } from "../../src/env";
import type { UserInbox } from "../../src/inbox/user-inbox";
import { TEMPLATE_IDS } from "../../src/notifications/templates";
import { call, createUser, expectError, json, owner, type TestUser } from "../helpers";
import { inbox } from "../inbox/inbox-helpers";
import { activeCount, broadcast, completed, itemsOf, logRows, progress, uniqueTitle } from "./broadcast-helpers";

// docs/broadcasts.md: audience, exactly-once fan-out, progress, Idempotency-Key.

async function suspend(user: TestUser) {
  expect((await call("PUT", `/users/${user.id}/status/suspend`, { token: (await owner()).token })).status).toBe(200);
}

async function remove(user: TestUser) {
  expect((await call("DELETE", `/users/${user.id}`, { token: (await owner()).token })).status).toBe(200);
}

async function broadcastRows(): Promise<number> {
  return (await env.DB.prepare("SELECT count(*) AS n FROM broadcasts").first<{ n: number }>())?.n ?? 0;
}

/** Broadcast items in a user's inbox object (its per-template count), for users who cannot sign in to list them. */
async function broadcastItems(userId: string): Promise<number> {
  const counts = await inbox(userId).counts();
  return counts.by_template.find((t) => t.template_id === TEMPLATE_IDS.broadcast)?.total ?? 0;
}

/** Each of `users` holds exactly `n` items titled `title`. */
async function expectItems(users: TestUser[], title: string, n: number) {
  for (const user of users) expect((await itemsOf(user.token, title)).length, `${user.username}`).toBe(n);
}

describe('audience (docs/broadcasts.md, "Audience": active users only)', () => {
  it("roles: holders of the role get one item each; suspended, deleted and other users none", async () => {
    const auditor = await createUser({ roles: ["auditor"] });
    const suspended = await createUser({ roles: ["auditor"] });
    const deleted = await createUser({ roles: ["auditor"] });
    const member = await createUser();
    await suspend(suspended);
    await remove(deleted);
    const title = uniqueTitle();
    const expected = await activeCount("is_system = 0 AND EXISTS (SELECT 1 FROM json_each(roles) WHERE value = 'auditor')");
    const created = await broadcast({ audience: { roles: ["auditor"] }, content: { title } });
    expect(created.recipients).toBe(expected);
    const done = await completed(created.id);
    expect(done).toMatchObject({ recipients: expected, delivered: expected, failed: 0, pending: 0 });
    await expectItems([auditor], title, 1);
    await expectItems([member], title, 0);
    // Read straight from the objects: a suspended user cannot sign in to look.
    for (const user of [suspended, deleted]) expect(await broadcastItems(user.id), user.username).toBe(0);
  });

  it("member in roles means every user; system users are not in it", async () => {
    const service = await createUser({ service: true });
    const someone = await createUser();
    const title = uniqueTitle();
    const expected = await activeCount("is_system = 0");
    const created = await broadcast({ audience: { roles: ["member"] }, content: { title } });
    expect(created.recipients).toBe(expected);
    await completed(created.id);
    await expectItems([someone], title, 1);
    expect(await broadcastItems(service.id)).toBe(0);
  });

  it("all: every active person, the owner included", async () => {
    const title = uniqueTitle();
    const expected = await activeCount("is_system = 0");
    const created = await broadcast({ audience: { all: true }, content: { title } });
    expect(created.recipients).toBe(expected);
    const done = await completed(created.id);
    expect(done).toMatchObject({ recipients: expected, delivered: expected, pending: 0 });
    expect((await itemsOf((await owner()).token, title)).length).toBe(1);
  });

  it("organization_id: its active members only", async () => {
    const [inOrg, suspendedInOrg, outside] = [await createUser(), await createUser(), await createUser()];
    const orgId = crypto.randomUUID();
    const now = new Date().toISOString();
    await env.DB.batch([
      env.DB.prepare("INSERT INTO organizations (id, name, display_name, is_default, created_at, updated_at) VALUES (?, ?, 'Team', 0, ?, ?)").bind(
        orgId,
        `team-${orgId}`,
        now,
        now,
      ),
      ...[inOrg, suspendedInOrg].map((u) =>
        env.DB.prepare("INSERT INTO organization_members (user_id, organization_id, roles, created_at, updated_at) VALUES (?, ?, '[]', ?, ?)").bind(
          u.id,
          orgId,
          now,
          now,
        ),
      ),
    ]);
    await suspend(suspendedInOrg);
    const title = uniqueTitle();
    const created = await broadcast({ audience: { organization_id: orgId }, content: { title } });
    expect(created.recipients).toBe(1);
    expect(await completed(created.id)).toMatchObject({ recipients: 1, delivered: 1 });
    await expectItems([inOrg], title, 1);
    await expectItems([outside], title, 0);
  });

  it("user_ids: listed active users once each (a repeated id too); suspended and deleted ones are not recipients", async () => {
    const [a, b, suspended, deleted] = [await createUser(), await createUser(), await createUser(), await createUser()];
    const service = await createUser({ service: true });
    await suspend(suspended);
    await remove(deleted);
    const title = uniqueTitle();
    const created = await broadcast({ audience: { user_ids: [a.id, b.id, a.id, suspended.id, deleted.id, service.id] }, content: { title } });
    // A system user listed by id is a recipient: whoever lists it means it.
    expect(created.recipients).toBe(3);
    expect(await completed(created.id)).toMatchObject({ recipients: 3, delivered: 3, failed: 0, pending: 0 });
    await expectItems([a, b], title, 1);
    expect(await broadcastItems(service.id)).toBe(1);
  });

  it("an unknown organization or user id is a 400 naming the field, and nothing is stored or sent", async () => {
    const known = await createUser();
    const before = await broadcastRows();
    const token = (await owner()).token;
    const unknownId = crypto.randomUUID();
    const org = await call("POST", "/notifications/broadcasts", {
      token,
      body: { audience: { organization_id: unknownId }, content: { title: "x" } },
    });
    const orgBody = await expectError(org, 400);
    expect(orgBody.validations).toEqual([{ field: "audience.organization_id", detail: BroadcastMessages.unknownOrganization }]);
    const users = await call("POST", "/notifications/broadcasts", {
      token,
      body: { audience: { user_ids: [known.id, unknownId] }, content: { title: "x" } },
    });
    expect((await expectError(users, 400)).validations).toEqual([{ field: "audience.user_ids.1", detail: BroadcastMessages.unknownUser }]);
    expect(await broadcastRows()).toBe(before);
    expect(await broadcastItems(known.id)).toBe(0);
  });

  it("a user created after the broadcast is not in it", async () => {
    const title = uniqueTitle();
    const created = await broadcast({ audience: { all: true }, content: { title } });
    const late = await createUser();
    const done = await completed(created.id);
    expect(done.recipients).toBe(created.recipients);
    await expectItems([late], title, 0);
  });
});

describe('permission (docs/broadcasts.md, "The endpoints": owners and user admins)', () => {
  it("a user admin may send and read; an auditor and a member get 403 and nothing is sent", async () => {
    const admin = await createUser({ roles: ["user-admin"] });
    const created = await broadcast({ audience: { user_ids: [admin.id] } }, { token: admin.token });
    expect((await call("GET", `/notifications/broadcasts/${created.id}`, { token: admin.token })).status).toBe(200);
    const before = await broadcastRows();
    for (const user of [await createUser({ roles: ["auditor"] }), await createUser()]) {
      await expectError(
        await call("POST", "/notifications/broadcasts", { token: user.token, body: { audience: { all: true }, content: { title: "no" } } }),
        403,
      );
      await expectError(await call("GET", `/notifications/broadcasts/${created.id}`, { token: user.token }), 403);
    }
    expect(await broadcastRows()).toBe(before);
  });

  it("an unknown broadcast is a 404", async () => {
    await expectError(await call("GET", `/notifications/broadcasts/${crypto.randomUUID()}`, { token: (await owner()).token }), 404);
  });
});

describe('Idempotency-Key (docs/broadcasts.md, "Idempotency-Key")', () => {
  it("the same key from the same caller answers the first 202 again and sends nothing more", async () => {
    const user = await createUser();
    const key = crypto.randomUUID();
    const title = uniqueTitle();
    const first = await broadcast({ audience: { user_ids: [user.id] }, content: { title } }, { key });
    const before = await broadcastRows();
    const again = await broadcast({ audience: { all: true }, content: { title: "something else" } }, { key });
    expect(again).toEqual(first);
    expect(await broadcastRows()).toBe(before);
    await completed(first.id);
    await expectItems([user], title, 1);
  });

  it("concurrent requests with one key: one broadcast, every answer the same", async () => {
    const user = await createUser();
    const key = crypto.randomUUID();
    const before = await broadcastRows();
    const token = (await owner()).token;
    const body = { audience: { user_ids: [user.id] }, content: { title: uniqueTitle() } };
    const answers = await Promise.all(
      Array.from({ length: 6 }, () => call("POST", "/notifications/broadcasts", { token, body, headers: { "Idempotency-Key": key } })),
    );
    const bodies = await Promise.all(answers.map((r) => json<{ id: string }>(r)));
    expect(answers.map((r) => r.status)).toEqual(Array(6).fill(202));
    expect(new Set(bodies.map((b) => b.id)).size).toBe(1);
    expect(await broadcastRows()).toBe(before + 1);
  });

  it("another caller's key, or the same key after 24 hours, starts a new broadcast", async () => {
    const user = await createUser();
    const admin = await createUser({ roles: ["user-admin"] });
    const key = crypto.randomUUID();
    const audience = { user_ids: [user.id] };
    const mine = await broadcast({ audience }, { key });
    const theirs = await broadcast({ audience }, { key, token: admin.token });
    expect(theirs.id).not.toBe(mine.id);
    const dayAgo = new Date(Date.now() - 25 * 3600_000).toISOString();
    await env.DB.prepare("UPDATE broadcast_idempotency_keys SET created_at = ? WHERE key = ? AND created_by = ?")
      .bind(dayAgo, key, (await owner()).id)
      .run();
    const later = await broadcast({ audience }, { key });
    expect(later.id).not.toBe(mine.id);
    // The cron forgets keys past the window.
    await broadcastHousekeeping(env);
    const left = await env.DB.prepare("SELECT count(*) AS n FROM broadcast_idempotency_keys WHERE key = ?").bind(key).first<{ n: number }>();
    expect(left?.n).toBe(2);
  });
});

/** A namespace whose objects fail `deliver` for the users in `failing`: a consumer dying part-way through a batch. */
function failingFor(failing: Set<string>): DurableObjectNamespace<UserInbox> {
  const real = env.USER_INBOX;
  const names = new Map<string, string>();
  return new Proxy(real, {
    get(target, prop) {
      if (prop === "idFromName") {
        return (name: string) => {
          const id = target.idFromName(name);
          names.set(id.toString(), name);
          return id;
        };
      }
      if (prop === "get") {
        return (id: DurableObjectId) => {
          const stub = target.get(id);
          if (!failing.has(names.get(id.toString()) ?? "")) return stub;
          return new Proxy(stub, {
            get(s, p) {
              if (p === "deliver") return () => Promise.reject(new Error("consumer died"));
              return Reflect.get(s, p);
            },
          });
        };
      }
      return Reflect.get(target, prop);
    },
  });
}

/**
 * A broadcast stored as the POST stores it, but with no step on the queue: the test drives its fan-out by hand.
 * `resolved`: its one shard already planned the users (only delivery is left); otherwise the shard is at its start,
 * last moved `movedAt`.
 */
async function storedBroadcast(users: TestUser[], title: string, options: { resolved: boolean; movedAt?: string }): Promise<string> {
  const id = crypto.randomUUID();
  const now = new Date().toISOString();
  const ids = users.map((u) => u.id).sort();
  await env.DB.batch([
    env.DB.prepare(
      "INSERT INTO broadcasts (id, created_by, created_at, audience, title, message, targets, email_when_unread_after_ms, recipients) VALUES (?, ?, ?, ?, ?, '', '[]', 0, ?)",
    ).bind(id, (await owner()).id, now, JSON.stringify({ user_ids: ids }), title, ids.length),
    env.DB.prepare("INSERT INTO broadcast_shards (broadcast_id, shard, cursor, planned, done, updated_at) VALUES (?, 0, ?, ?, ?, ?)").bind(
      id,
      options.resolved ? (ids.at(-1) ?? "") : "",
      options.resolved ? ids.length : 0,
      options.resolved ? 1 : 0,
      options.movedAt ?? now,
    ),
  ]);
  return id;
}

describe('exactly once under redelivery and consumer failure (docs/broadcasts.md, "Exactly once")', () => {
  it("a delivery message handled twice, and twice in one batch, stores one item per recipient and counts each once", async () => {
    const users = [await createUser(), await createUser(), await createUser()];
    const title = uniqueTitle();
    const id = await storedBroadcast(users, title, { resolved: true });
    const step = { deliver: id, batch: "0:first", userIds: users.map((u) => u.id) };
    await deliverStep(env, step);
    await deliverStep(env, step);
    const batch = createMessageBatch<BroadcastQueueMessage>(BROADCAST_QUEUE, [
      { id: "a", timestamp: new Date(), attempts: 2, body: step },
      { id: "b", timestamp: new Date(), attempts: 2, body: step },
    ]);
    await handleBroadcastQueue(batch, env);
    expect((await getQueueResult(batch, createExecutionContext())).explicitAcks.sort()).toEqual(["a", "b"]);
    await expectItems(users, title, 1);
    const done = await progress(id);
    expect(done).toMatchObject({ recipients: 3, delivered: 3, failed: 0, pending: 0 });
    expect(done.completed_at).not.toBeNull();
    const rows = await logRows(users.map((u) => u.id));
    expect(rows.filter((r) => r.notification_id !== "").length).toBe(3);
    expect(new Set(rows.map((r) => r.id)).size).toBe(3);
  });

  it("a consumer that dies part-way is retried; the retry stores the rest once, and the progress converges", async () => {
    const users = [await createUser(), await createUser(), await createUser(), await createUser()];
    const title = uniqueTitle();
    const id = await storedBroadcast(users, title, { resolved: true });
    const step = { deliver: id, batch: "0:first", userIds: users.map((u) => u.id) };
    const broken: Env = { ...env, USER_INBOX: failingFor(new Set([users[1]?.id ?? "", users[3]?.id ?? ""])) };
    const batch = createMessageBatch<BroadcastQueueMessage>(BROADCAST_QUEUE, [{ id: "m", timestamp: new Date(), attempts: 1, body: step }]);
    await handleBroadcastQueue(batch, broken);
    expect((await getQueueResult(batch, createExecutionContext())).retryMessages.map((m) => m.msgId)).toEqual(["m"]);
    expect(await progress(id)).toMatchObject({ recipients: 4, delivered: 2, failed: 0, pending: 2, completed_at: null });
    await expectItems(
      [users[0], users[2]].filter((u) => u !== undefined),
      title,
      1,
    );

    const redelivered = createMessageBatch<BroadcastQueueMessage>(BROADCAST_QUEUE, [{ id: "m", timestamp: new Date(), attempts: 2, body: step }]);
    await handleBroadcastQueue(redelivered, env);
    expect((await getQueueResult(redelivered, createExecutionContext())).explicitAcks).toEqual(["m"]);
    await expectItems(users, title, 1);
    const done = await progress(id);
    expect(done).toMatchObject({ recipients: 4, delivered: 4, failed: 0, pending: 0 });
    expect(done.completed_at).not.toBeNull();
  });

  it("one consumer batch spanning broadcasts: each message is acked or retried on its own", async () => {
    const [a, b, c] = [await createUser(), await createUser(), await createUser()];
    const [firstTitle, secondTitle] = [uniqueTitle(), uniqueTitle()];
    const first = await storedBroadcast([a, b], firstTitle, { resolved: true });
    const second = await storedBroadcast([c], secondTitle, { resolved: true });
    const batch = createMessageBatch<BroadcastQueueMessage>(BROADCAST_QUEUE, [
      { id: "x", timestamp: new Date(), attempts: 1, body: { deliver: first, batch: "0:first", userIds: [a.id, b.id] } },
      { id: "y", timestamp: new Date(), attempts: 1, body: { deliver: second, batch: "0:first", userIds: [c.id] } },
    ]);
    await handleBroadcastQueue(batch, { ...env, USER_INBOX: failingFor(new Set([b.id])) });
    const result = await getQueueResult(batch, createExecutionContext());
    expect(result.explicitAcks).toEqual(["y"]);
    expect(result.retryMessages.map((m) => m.msgId)).toEqual(["x"]);
    expect(await progress(first)).toMatchObject({ recipients: 2, delivered: 1, pending: 1, completed_at: null });
    const done = await progress(second);
    expect(done).toMatchObject({ recipients: 1, delivered: 1, pending: 0 });
    expect(done.completed_at).not.toBeNull();
    await expectItems([a], firstTitle, 1);
    await expectItems([c], secondTitle, 1);
    expect((await logRows([a.id, b.id, c.id])).length).toBe(3);
  });

  it("while the notifier is paused a delivery message is put back, not retried: acked, nothing delivered, nothing counted", async () => {
    const users = [await createUser()];
    const title = uniqueTitle();
    const id = await storedBroadcast(users, title, { resolved: true });
    const admin = await owner();
    expect((await call("PUT", "/notifications/settings", { token: admin.token, body: { notifier_paused: true } })).status).toBe(200);
    try {
      const batch = createMessageBatch<BroadcastQueueMessage>(BROADCAST_QUEUE, [
        { id: "p", timestamp: new Date(), attempts: 1, body: { deliver: id, batch: "0:first", userIds: users.map((u) => u.id) } },
      ]);
      await handleBroadcastQueue(batch, env);
      const result = await getQueueResult(batch, createExecutionContext());
      expect(result.explicitAcks).toEqual(["p"]);
      expect(result.retryMessages).toEqual([]);
      expect(await progress(id)).toMatchObject({ delivered: 0, pending: 1, completed_at: null });
      await expectItems(users, title, 0);
    } finally {
      expect((await call("PUT", "/notifications/settings", { token: admin.token, body: { notifier_paused: false } })).status).toBe(200);
    }
  });

  it("D1 failing during a batch: nothing is acked, every message is retried, nothing is counted", async () => {
    const users = [await createUser(), await createUser()];
    const title = uniqueTitle();
    const id = await storedBroadcast(users, title, { resolved: true });
    const down = new Proxy(env.DB, {
      get(target, prop) {
        if (prop === "batch") return () => Promise.reject(new Error("D1 is unavailable"));
        const value = Reflect.get(target, prop);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const batch = createMessageBatch<BroadcastQueueMessage>(BROADCAST_QUEUE, [
      { id: "a", timestamp: new Date(), attempts: 1, body: { deliver: id, batch: "0:a", userIds: [users[0]?.id ?? ""] } },
      { id: "b", timestamp: new Date(), attempts: 1, body: { deliver: id, batch: "0:b", userIds: [users[1]?.id ?? ""] } },
    ]);
    await handleBroadcastQueue(batch, { ...env, DB: down });
    const result = await getQueueResult(batch, createExecutionContext());
    expect(result.explicitAcks).toEqual([]);
    expect(result.retryMessages.map((m) => m.msgId).sort()).toEqual(["a", "b"]);
    expect(await progress(id)).toMatchObject({ delivered: 0, pending: 2, completed_at: null });
    await expectItems(users, title, 0);
  });

  it("what fails on every retry is dead-lettered and counted as failed, so the broadcast still completes", async () => {
    const users = [await createUser(), await createUser()];
    const title = uniqueTitle();
    const id = await storedBroadcast(users, title, { resolved: true });
    const step = { deliver: id, batch: "0:first", userIds: users.map((u) => u.id) };
    await expect(deliverStep({ ...env, USER_INBOX: failingFor(new Set([users[1]?.id ?? ""])) }, step)).rejects.toThrow(/1 of 2/);
    expect(await progress(id)).toMatchObject({ delivered: 1, failed: 0, pending: 1, completed_at: null });
    const dead = createMessageBatch<BroadcastQueueMessage>(BROADCAST_DEAD_LETTER_QUEUE, [
      { id: "d", timestamp: new Date(), attempts: 4, body: step },
    ]);
    await handleBroadcastQueue(dead, env);
    expect((await getQueueResult(dead, createExecutionContext())).ackAll).toBe(true);
    const after = await progress(id);
    expect(after).toMatchObject({ recipients: 2, delivered: 1, failed: 1, pending: 0 });
    expect(after.completed_at).not.toBeNull();
  });

  it("a resolution step delivered twice at once, and again later, plans nothing twice", async () => {
    const users = [await createUser(), await createUser()];
    const title = uniqueTitle();
    const id = await storedBroadcast(users, title, { resolved: false });
    const step = { resolve: id, shard: 0, cursor: "" };
    // Both read the same page; the compare-and-set on the cursor lets one of them move it.
    await Promise.all([resolveStep(env, step), resolveStep(env, step)]);
    await resolveStep(env, step);
    const shard = await env.DB.prepare("SELECT planned, done FROM broadcast_shards WHERE broadcast_id = ?").bind(id).first();
    expect(shard).toEqual({ planned: 2, done: 1 });
    // The delivery messages it sent run on the real local queue.
    expect(await completed(id)).toMatchObject({ recipients: 2, delivered: 2, pending: 0 });
    await expectItems(users, title, 1);
  });

  it("a chain that broke between steps is restarted by the cron from its stored cursor", async () => {
    const users = [await createUser(), await createUser()];
    const title = uniqueTitle();
    const id = await storedBroadcast(users, title, { resolved: false, movedAt: new Date(Date.now() - 5 * 60_000).toISOString() });
    await broadcastHousekeeping(env);
    expect(await completed(id)).toMatchObject({ recipients: 2, delivered: 2, pending: 0 });
    await expectItems(users, title, 1);
  });
});

describe("progress and copies", () => {
  it("e-mail copies follow each recipient's preference for the Broadcast template, one log row each", async () => {
    const [wants, optedOut] = [await createUser(), await createUser()];
    const off = await call("PUT", `/users/${optedOut.id}/notifications/preferences`, {
      token: optedOut.token,
      body: { template_disabled_map: { [TEMPLATE_IDS.broadcast]: true } },
    });
    expect(off.status).toBe(200);
    const title = uniqueTitle();
    const created = await broadcast({ audience: { user_ids: [wants.id, optedOut.id] }, content: { title } });
    await completed(created.id);
    // The inbox copy reaches both: the preference governs the e-mail copy (docs/broadcasts.md, "The fan-out").
    await expectItems([wants, optedOut], title, 1);
    const rows = await logRows([wants.id, optedOut.id]);
    const byUser = new Map(rows.filter((r) => r.notification_id && r.method === "smtp").map((r) => [r.user_id, r]));
    expect(byUser.get(optedOut.id)?.status).toBe("inhibited");
    expect(["pending", "leased", "sent"]).toContain(byUser.get(wants.id)?.status);
  });
});
