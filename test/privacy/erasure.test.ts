import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { deleteAccount, erasedUsername } from "../../src/auth/account-changes";
import { deliverStep } from "../../src/broadcasts/fanout";
import { database } from "../../src/db/client";
import type { UserInbox } from "../../src/inbox/user-inbox";
import { dispatchMessage } from "../../src/notifications/dispatch";
import { TEMPLATE_IDS } from "../../src/notifications/templates";
import { AUDIT_PERSONAL_KEYS } from "../../src/privacy/catalogue";
import { ERASURE_STEPS, type ErasureStep, finishErasures, runErasure, SETTLE_AFTER_MS } from "../../src/privacy/erasure";
import { quiesce, sleep } from "../fixtures/d1-state";
import { call, createUser, json, owner, type TestUser } from "../helpers";
import { deliver, inbox, watch } from "../inbox/inbox-helpers";
import { emails } from "../peers";
import { type FullUser, fullUser, settledMessages } from "./privacy-helpers";

// docs/privacy.md, "Erasure": deleting a user erases everything Herald holds about them — their inbox object's storage,
// the message log, every record of theirs — and leaves the account row only what other rows refer to it by, and the
// audit log only actions and ids. The steps run in a fixed order, each safe to run again, so an erasure stopped after
// any step is finished by the cron.

const INTERNAL = (name: string) => name.startsWith("_cf_") || name.startsWith("sqlite_") || name === "__drizzle_migrations";
const AFTER_SETTLE = () => Date.now() + SETTLE_AFTER_MS + 60_000;

/** Every D1 table row holding one of `needles` (compared without regard to case), as `table: needle`. */
async function d1Hits(needles: readonly string[]): Promise<string[]> {
  const tables = await env.DB.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all<{ name: string }>();
  const hits: string[] = [];
  for (const { name: table } of tables.results) {
    if (INTERNAL(table)) continue;
    const rows = await env.DB.prepare(`SELECT * FROM "${table}"`).all();
    const lowered = rows.results.map((row) => JSON.stringify(row).toLowerCase());
    for (const needle of needles) {
      const found = lowered.filter((row) => row.includes(needle.toLowerCase()));
      if (found.length > 0) hits.push(`${table}: ${needle} (${found[0]})`);
    }
  }
  return hits;
}

interface Stored {
  /** Every row of every table, the schema's own bookkeeping aside, by table. */
  rows: Record<string, unknown[]>;
  alarm: number | null;
  text: string;
}

/** What the user's inbox object stores, and its alarm. */
function objectStorage(userId: string): Promise<Stored> {
  return runInDurableObject(inbox(userId), async (_: UserInbox, state) => {
    const tables = state.storage.sql
      .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
      .toArray()
      .map((r) => r.name)
      .filter((name) => !INTERNAL(name));
    const rows: Record<string, unknown[]> = {};
    for (const table of tables) rows[table] = state.storage.sql.exec(`SELECT * FROM ${table}`).toArray();
    return { rows, alarm: await state.storage.getAlarm(), text: JSON.stringify(rows).toLowerCase() };
  });
}

/**
 * What an inbox that was never used stores: its schema, and the count of its items at 0 (drizzle/inbox's migrations
 * lay both down). An erased inbox must store no more than that.
 */
const neverUsed = () => objectStorage(crypto.randomUUID());

async function expectEmptyInbox(userId: string): Promise<Stored> {
  const stored = await objectStorage(userId);
  const fresh = await neverUsed();
  expect(stored.rows).toEqual(fresh.rows);
  expect(Object.values(stored.rows).flat()).toEqual([{ name: "total", value: 0 }]);
  expect(stored.alarm).toBeNull();
  return stored;
}

/** The account change of `DELETE /users/{user}` and its batch, without the request around it (which would go on). */
async function deleteWithoutRequest(userId: string): Promise<void> {
  const db = database(env.DB);
  const [first, ...rest] = deleteAccount(db, userId).statements;
  if (first) await db.batch([first, ...rest]);
}

const erasureRow = (userId: string) =>
  env.DB.prepare("SELECT step, failures FROM user_erasures WHERE user_id = ?").bind(userId).first<{ step: ErasureStep; failures: number }>();

describe('docs/privacy.md, "Erasure": a user with every kind of data, deleted', () => {
  let user: FullUser;
  let identity: string[];

  beforeAll(async () => {
    user = await fullUser();
    identity = [user.email, user.username, user.name];
    // Before: the search finds them, so a search that finds nothing afterwards means something.
    expect((await d1Hits(identity)).length).toBeGreaterThan(0);
    expect((await objectStorage(user.id)).text).toContain(user.titles[0]?.toLowerCase());

    const live = await watch("?sync=true", { "Service-Session-Token": user.token });
    const admin = await owner();
    const res = await call("DELETE", `/users/${user.id}`, { token: admin.token });
    expect(res.status).toBe(200);
    const closed = await live.closed;
    expect(closed.code).toBe(4401);
    // The request ran the steps it could; the last one waits until nothing can still be on its way to the inbox.
    await quiesce(3);
    for (let tries = 0; (await erasureRow(user.id))?.step !== "settle"; tries++) {
      if (tries > 400) throw new Error("the erasure did not reach its last step");
      await sleep(50);
    }
    expect(await runErasure(env, user.id, { now: AFTER_SETTLE() })).toBe("finished");
  }, 120_000);

  it("D1 holds their e-mail, username and name nowhere, nor any title of their inbox", async () => {
    expect(await d1Hits(identity)).toEqual([]);
    expect(await d1Hits(user.titles)).toEqual([]);
  });

  it("their inbox object holds no row and no alarm: nothing but what an inbox never used holds", async () => {
    const stored = await expectEmptyInbox(user.id);
    for (const needle of [...identity, ...user.titles]) expect(stored.text).not.toContain(needle.toLowerCase());
  });

  it("the account row keeps its id, that it is deleted, and its dates; the user is gone from every endpoint", async () => {
    const row = await env.DB.prepare("SELECT * FROM users WHERE id = ?").bind(user.id).first<Record<string, unknown>>();
    expect(row).toMatchObject({
      id: user.id,
      deleted: 1,
      email: "",
      username: erasedUsername(user.id),
      name: "",
      hashed_password: null,
      search_name: "",
      search_email: "",
      roles: "[]",
    });
    const admin = await owner();
    expect((await call("GET", `/users/${user.id}`, { token: admin.token })).status).toBe(404);
    expect((await call("GET", "/users/me", { token: user.token })).status).toBe(401);
    expect((await call("POST", "/users/login", { body: { email: user.email, password: user.password } })).status).toBe(401);
    expect(await erasureRow(user.id)).toBeNull();
  });

  it("the audit log keeps every action and id about them, never a name, an e-mail or their address", async () => {
    const rows = await env.DB.prepare(
      "SELECT user_id, action, resource_id, diff, ip, user_agent FROM audit_logs WHERE user_id = ?1 OR resource_id = ?1 OR json_extract(diff, '$.owner') = ?1",
    )
      .bind(user.id)
      .all<{ user_id: string | null; action: string; resource_id: string; diff: string; ip: string; user_agent: string }>();
    const actions = rows.results.map((r) => r.action);
    for (const action of ["create", "update_roles", "login", "enable_totp", "export", "delete"].filter((a) => a !== "export"))
      expect(actions).toContain(action);
    for (const row of rows.results) {
      const diff = JSON.parse(row.diff) as Record<string, unknown>;
      for (const key of AUDIT_PERSONAL_KEYS) expect(diff, `${row.action}: ${key}`).not.toHaveProperty(key);
      if (row.user_id === user.id) expect([row.ip, row.user_agent]).toEqual(["", ""]);
    }
    // The log reads them by the placeholder name, never the old one.
    const admin = await owner();
    const page = await json<{ audit_logs: { user: { username: string } | null; description: string }[] }>(
      await call("GET", `/audit?q=resource_id:${user.id}&limit=100`, { token: admin.token }),
    );
    expect(page.audit_logs.length).toBeGreaterThan(0);
    expect(JSON.stringify(page)).not.toContain(user.username);
    expect(JSON.stringify(page)).not.toContain(user.email);
  });

  it("their e-mail and username can make a new account, which starts empty", async () => {
    const admin = await owner();
    const res = await call("POST", "/users", {
      token: admin.token,
      body: { email: user.email, username: user.username, name: user.name, password: user.password },
    });
    expect(res.status, await res.clone().text()).toBe(201);
    const { id } = await json<{ id: string }>(res);
    expect(id).not.toBe(user.id);
    const counts = await inbox(id).counts();
    expect(counts.total).toBe(0);
  });
});

/** A user with something in each place erasure reaches: inbox items, message-log rows, audit entries, preferences. */
async function someData(): Promise<TestUser & { title: string }> {
  const user = await createUser();
  const title = `Erase me ${crypto.randomUUID()}`;
  expect((await call("POST", "/notifications/custom", { token: user.token, body: { content: { title, message: "…" } } })).status).toBe(204);
  const preferences = await call("PUT", "/users/me/notifications/preferences", {
    token: user.token,
    body: { template_disabled_map: { [TEMPLATE_IDS.userCreated]: true } },
  });
  expect(preferences.status).toBe(200);
  await settledMessages(user.id);
  return { ...user, title };
}

async function expectErased(user: TestUser & { title: string }): Promise<void> {
  expect(await erasureRow(user.id)).toBeNull();
  expect(await d1Hits([user.email, user.username, user.title])).toEqual([]);
  await expectEmptyInbox(user.id);
  const left = await env.DB.prepare(
    "SELECT (SELECT count(*) FROM notification_messages WHERE user_id = ?1) + (SELECT count(*) FROM notification_preferences WHERE user_id = ?1) + (SELECT count(*) FROM audit_logs WHERE user_id = ?1 AND (ip <> '' OR user_agent <> '')) AS n",
  )
    .bind(user.id)
    .first<{ n: number }>();
  expect(left?.n).toBe(0);
}

describe('docs/privacy.md, "Erasure": stopped after any step, finished by the cron', () => {
  it("the request dies right after its batch: the cron runs every step", async () => {
    const user = await someData();
    await deleteWithoutRequest(user.id);
    expect(await erasureRow(user.id)).toEqual({ step: "inbox", failures: 0 });
    // The first run: the row was touched a moment ago, by the batch, so the cron waits a quiet minute first.
    await finishErasures(env, Date.now());
    expect((await erasureRow(user.id))?.step).toBe("inbox");
    // Then every step up to the last, which waits until nothing can still be on its way; then that one.
    await finishErasures(env, Date.now() + 2 * 60_000);
    expect((await erasureRow(user.id))?.step).toBe("settle");
    await finishErasures(env, AFTER_SETTLE());
    await expectErased(user);
  });

  for (const crashAfter of ERASURE_STEPS) {
    it(`a crash once the ${crashAfter} step is done, before the next is recorded`, async () => {
      const user = await someData();
      await deleteWithoutRequest(user.id);
      const crash = new Error(`crash after ${crashAfter}`);
      await expect(
        runErasure(env, user.id, {
          now: AFTER_SETTLE(),
          stepDone: (step) => {
            if (step === crashAfter) throw crash;
          },
        }),
      ).rejects.toBe(crash);
      // The row still names the step that was done: the cron runs it again, then the rest.
      expect(await erasureRow(user.id)).toEqual({ step: crashAfter, failures: 1 });
      await finishErasures(env, AFTER_SETTLE());
      await expectErased(user);
    });
  }

  it("an account deleted before erasure existed is erased too: the migration records an erasure for it", async () => {
    const user = await someData();
    // Deleted as Herald deleted accounts before: the flag set, the rest left as it was.
    await env.DB.prepare("UPDATE users SET deleted = 1 WHERE id = ?").bind(user.id).run();
    const migration = env.TEST_MIGRATIONS.find((m) => m.name.startsWith("0015_privacy_erasure"));
    const backfill = migration?.queries.find((q) => q.includes("INSERT INTO `user_erasures`"));
    expect(backfill).toBeDefined();
    await env.DB.prepare(backfill ?? "").run();
    await finishErasures(env, AFTER_SETTLE());
    await expectErased(user);
    expect(await env.DB.prepare("SELECT email, name FROM users WHERE id = ?").bind(user.id).first()).toEqual({ email: "", name: "" });
  });
});

describe('docs/privacy.md, "Erasure": what was on its way delivers nothing afterwards', () => {
  it("a broadcast's delivery planned before the deletion: no item, no copy, and the progress still completes", async () => {
    const [user, other] = await Promise.all([someData(), createUser()]);
    const admin = await owner();
    const sent = await call("POST", "/notifications/broadcasts", {
      token: admin.token,
      body: { audience: { user_ids: [other.id] }, content: { title: `Late ${crypto.randomUUID()}` } },
    });
    expect(sent.status).toBe(202);
    const { id } = await json<{ id: string }>(sent);
    await deleteWithoutRequest(user.id);
    await runErasure(env, user.id, { now: AFTER_SETTLE() });
    // The planned delivery message naming the deleted user arrives now.
    await deliverStep(env, { deliver: id, batch: `late:${user.id}`, userIds: [user.id] });
    expect((await inbox(user.id).counts()).total).toBe(0);
    const copies = await env.DB.prepare("SELECT count(*) AS n FROM notification_messages WHERE user_id = ?").bind(user.id).first<{ n: number }>();
    expect(copies?.n).toBe(0);
    const progress = await env.DB.prepare("SELECT delivered, failed FROM broadcast_batches WHERE broadcast_id = ? AND batch = ?")
      .bind(id, `late:${user.id}`)
      .first();
    expect(progress).toEqual({ delivered: 1, failed: 0 });
  });

  it("a digest window open at the deletion ends with nothing: the window went with the inbox, the held copy with the log", async () => {
    const user = await createUser();
    const schedule = await call("PUT", "/users/me/notifications/schedule", {
      token: user.token,
      body: { timezone: "UTC", quiet_hours: [], digest: "1h" },
    });
    expect(schedule.status).toBe(200);
    const title = `Held ${crypto.randomUUID()}`;
    expect((await call("POST", "/notifications/custom", { token: user.token, body: { content: { title, message: "…" } } })).status).toBe(204);
    await settledMessages(user.id);
    const held = await runInDurableObject(inbox(user.id), (_: UserInbox, state) =>
      state.storage.sql.exec("SELECT count(*) AS n FROM digest_windows").one(),
    );
    expect(held.n).toBe(1);
    await deleteWithoutRequest(user.id);
    await runErasure(env, user.id, { now: AFTER_SETTLE() });
    // The window's end comes: nothing is decided, nothing handed to the log, nothing sent.
    expect(await inbox(user.id).endDigests(Date.now() + 2 * 3_600_000)).toEqual([]);
    const rows = await env.DB.prepare("SELECT count(*) AS n FROM notification_messages WHERE user_id = ?").bind(user.id).first<{ n: number }>();
    expect(rows?.n).toBe(0);
    expect((await emails()).filter((m) => m.to.includes(user.email))).toEqual([]);
  });

  it("a copy whose send begins after the deletion is dropped unsent, and an item that lands in the inbox meanwhile goes at the last step", async () => {
    const user = await createUser();
    await deleteWithoutRequest(user.id);
    // Written by a producer that read the account just before it was deleted.
    const messageId = crypto.randomUUID();
    const now = new Date().toISOString();
    await env.DB.prepare(
      "INSERT INTO notification_messages (id, notification_id, template_id, user_id, method, status, payload, created_by, created_at, updated_at) VALUES (?, ?, ?, ?, 'smtp', 'pending', '{}', ?, ?, ?)",
    )
      .bind(messageId, crypto.randomUUID(), TEMPLATE_IDS.custom, user.id, user.id, now, now)
      .run();
    expect(await dispatchMessage(env, messageId)).toBe("skipped");
    expect(await env.DB.prepare("SELECT id FROM notification_messages WHERE id = ?").bind(messageId).first()).toBeNull();
    // Every step but the last; then a delivery that was on its way lands; the last step, once due, erases it.
    expect(await runErasure(env, user.id, { now: Date.now() })).toBe("waiting");
    await deliver(user.id, { title: "On its way" });
    expect((await inbox(user.id).counts()).total).toBe(1);
    expect(await runErasure(env, user.id, { now: AFTER_SETTLE() })).toBe("finished");
    await expectEmptyInbox(user.id);
  });
});
