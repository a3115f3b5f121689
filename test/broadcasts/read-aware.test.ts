import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { handleScheduled } from "../../src/notifications/background";
import { dispatchMessage, READ_BEFORE_DUE } from "../../src/notifications/dispatch";
import { NotificationsMessages } from "../../src/notifications/messages";
import { TEMPLATE_IDS } from "../../src/notifications/templates";
import { call, createUser, expectError, json, owner, type TestUser } from "../helpers";
import { inbox, setArchived, setRead } from "../inbox/inbox-helpers";
import { emails } from "../peers";
import { broadcast, completed, itemsOf, logRows, uniqueTitle } from "./broadcast-helpers";

// docs/broadcasts.md, "Read-aware e-mail": the e-mail copy waits, and at its due time goes out only if
// the inbox copy is still unread and not archived; otherwise it is recorded as skipped. Never both, never twice.

const past = () => new Date(Date.now() - 1000).toISOString();

/** Makes the users' read-aware e-mails due now, as the delayed queue message or the cron would find them. */
async function makeDue(ids: string[]) {
  await env.DB.prepare("UPDATE notification_messages SET next_retry_after = ? WHERE id IN (SELECT value FROM json_each(?))")
    .bind(past(), JSON.stringify(ids))
    .run();
}

async function statusOf(id: string) {
  return env.DB.prepare("SELECT status, status_reason, sent_at FROM notification_messages WHERE id = ?")
    .bind(id)
    .first<{ status: string; status_reason: string | null; sent_at: string | null }>();
}

async function mailsTo(user: TestUser) {
  return (await emails()).filter((m) => m.rcptTo.includes(user.email));
}

/** A broadcast with read-aware e-mail to `users`, fanned out; returns each user's inbox item id and e-mail row id. */
async function readAwareBroadcast(users: TestUser[], wait = "15m") {
  const title = uniqueTitle();
  const created = await broadcast({
    audience: { user_ids: users.map((u) => u.id) },
    content: { title, message: "Please read" },
    email_when_unread_after: wait,
  });
  await completed(created.id);
  const rows = await logRows(users.map((u) => u.id));
  const byUser = new Map<string, { item: string; email: string }>();
  for (const user of users) {
    const row = rows.find((r) => r.user_id === user.id && r.method === "smtp" && r.notification_id !== "");
    const [item] = await itemsOf(user.token, title);
    if (!row || !item) throw new Error(`no e-mail row or inbox item for ${user.username}`);
    expect(row).toMatchObject({ status: "pending", send_if_unread: 1 });
    expect(item.id).toBe(row.notification_id);
    byUser.set(user.id, { item: item.id, email: row.id });
  }
  return { title, byUser, rows };
}

describe('read-aware e-mail of a broadcast (docs/broadcasts.md, "Read-aware e-mail")', () => {
  it("waits for its time: neither the cron nor an early queue message sends it before it is due", async () => {
    const user = await createUser();
    const { byUser, rows } = await readAwareBroadcast([user]);
    const row = rows[0];
    // Due in 15 minutes (from the delivery), give or take the test's own run time.
    const dueIn = Date.parse(row?.next_retry_after ?? "") - Date.now();
    expect(dueIn).toBeGreaterThan(14 * 60_000);
    expect(dueIn).toBeLessThanOrEqual(15 * 60_000);
    // Old enough to look like a straggler to the cron: it is still not due.
    await env.DB.prepare("UPDATE notification_messages SET created_at = ? WHERE id = ?")
      .bind(new Date(Date.now() - 10 * 60_000).toISOString(), byUser.get(user.id)?.email)
      .run();
    await handleScheduled(env);
    expect(await dispatchMessage(env, byUser.get(user.id)?.email ?? "")).toBe("not_taken");
    expect((await statusOf(byUser.get(user.id)?.email ?? ""))?.status).toBe("pending");
    expect(await mailsTo(user)).toEqual([]);
  });

  it("read or archived before it is due → skipped with the reason, nothing sent; unread → sent once", async () => {
    const [reader, archiver, ignorer] = [await createUser(), await createUser(), await createUser()];
    const { byUser } = await readAwareBroadcast([reader, archiver, ignorer]);
    const of = (u: TestUser) => byUser.get(u.id) ?? { item: "", email: "" };
    expect((await setRead(reader.token, of(reader).item, true)).status).toBe(200);
    expect((await setArchived(archiver.token, of(archiver).item, true)).status).toBe(200);
    await makeDue([reader, archiver, ignorer].map((u) => of(u).email));

    expect(await dispatchMessage(env, of(reader).email)).toBe("skipped");
    expect(await dispatchMessage(env, of(archiver).email)).toBe("skipped");
    expect(await dispatchMessage(env, of(ignorer).email)).toBe("sent");
    for (const u of [reader, archiver])
      expect(await statusOf(of(u).email)).toEqual({ status: "skipped", status_reason: READ_BEFORE_DUE, sent_at: null });
    expect((await statusOf(of(ignorer).email))?.status).toBe("sent");

    // Asked again (a redelivered queue message, the cron), nothing changes and nothing more is sent.
    for (const u of [reader, archiver, ignorer]) expect(await dispatchMessage(env, of(u).email)).toBe("not_taken");
    expect(await mailsTo(reader)).toEqual([]);
    expect(await mailsTo(archiver)).toEqual([]);
    expect((await mailsTo(ignorer)).length).toBe(1);
  });

  it("the answer sticks: a read after the e-mail was decided does not turn a sent e-mail into a skipped one", async () => {
    const user = await createUser();
    const { byUser } = await readAwareBroadcast([user]);
    const { item, email } = byUser.get(user.id) ?? { item: "", email: "" };
    const userInbox = inbox(user.id);
    expect(await userInbox.emailDecision(item)).toEqual({ send: true });
    expect((await setRead(user.token, item, true)).status).toBe(200);
    // The send that follows (say, a retry after an SMTP failure) gets the first answer.
    expect(await userInbox.emailDecision(item)).toEqual({ send: true });
    await makeDue([email]);
    expect(await dispatchMessage(env, email)).toBe("sent");
    expect((await mailsTo(user)).length).toBe(1);
  });

  it("a read racing the due time: each e-mail ends sent or skipped, agreeing with the object, and is never sent twice", async () => {
    const users = await Promise.all(Array.from({ length: 12 }, () => createUser()));
    const { byUser } = await readAwareBroadcast(users);
    await makeDue(users.map((u) => byUser.get(u.id)?.email ?? ""));
    // Every e-mail is dispatched twice at once (a redelivered queue message) while its user reads, in varying order.
    await Promise.all(
      users.map(async (user, i) => {
        const { item, email } = byUser.get(user.id) ?? { item: "", email: "" };
        const read = () => setRead(user.token, item, true);
        const send = () => dispatchMessage(env, email);
        if (i % 3 === 0) await Promise.all([read(), send(), send()]);
        else if (i % 3 === 1) await Promise.all([send(), read(), send()]);
        else await Promise.all([send(), send(), read()]);
      }),
    );
    for (const user of users) {
      const { item, email } = byUser.get(user.id) ?? { item: "", email: "" };
      const row = await statusOf(email);
      const decided = await inbox(user.id).emailDecision(item);
      const mails = await mailsTo(user);
      if (decided.send) {
        expect(row?.status, user.username).toBe("sent");
        expect(mails.length, user.username).toBe(1);
      } else {
        expect(row, user.username).toEqual({ status: "skipped", status_reason: READ_BEFORE_DUE, sent_at: null });
        expect(mails, user.username).toEqual([]);
      }
    }
  });

  it("without email_when_unread_after the e-mail goes out at once", async () => {
    const user = await createUser();
    const title = uniqueTitle();
    const created = await broadcast({ audience: { user_ids: [user.id] }, content: { title } });
    await completed(created.id);
    const [row] = (await logRows([user.id])).filter((r) => r.method === "smtp");
    expect(row?.send_if_unread).toBe(0);
    expect(row?.next_retry_after).toBeNull();
  });
});

describe('read-aware e-mail as a system template setting (docs/broadcasts.md, "Read-aware e-mail")', () => {
  const settingsOf = (id: string) => `/notifications/templates/${id}/settings`;

  it("owners set it on a system template; its e-mail then waits and is skipped once the inbox copy is read", async () => {
    const admin = await owner();
    const put = await call("PUT", settingsOf(TEMPLATE_IDS.test), { token: admin.token, body: { email_when_unread_after: "1h30m" } });
    expect(put.status).toBe(200);
    try {
      expect(await json(put)).toEqual({ id: TEMPLATE_IDS.test, email_when_unread_after: "1h30m" });
      const member = await createUser();
      expect(await json(await call("GET", settingsOf(TEMPLATE_IDS.test), { token: member.token }))).toEqual({
        id: TEMPLATE_IDS.test,
        email_when_unread_after: "1h30m",
      });
      // The test notification goes to the owner: its inbox copy now, its e-mail in 90 minutes.
      const before = await env.DB.prepare("SELECT count(*) AS n FROM notification_messages WHERE template_id = ? AND method = 'smtp'")
        .bind(TEMPLATE_IDS.test)
        .first<{ n: number }>();
      expect((await call("POST", "/notifications/test", { token: admin.token })).status).toBe(200);
      const row = await env.DB.prepare(
        "SELECT id, notification_id, send_if_unread, next_retry_after, status FROM notification_messages WHERE template_id = ? AND method = 'smtp' ORDER BY created_at DESC, id DESC LIMIT 1",
      )
        .bind(TEMPLATE_IDS.test)
        .first<{ id: string; notification_id: string; send_if_unread: number; next_retry_after: string; status: string }>();
      const after = await env.DB.prepare("SELECT count(*) AS n FROM notification_messages WHERE template_id = ? AND method = 'smtp'")
        .bind(TEMPLATE_IDS.test)
        .first<{ n: number }>();
      expect(after?.n).toBe((before?.n ?? 0) + 1);
      expect(row).toMatchObject({ send_if_unread: 1, status: "pending" });
      const dueIn = Date.parse(row?.next_retry_after ?? "") - Date.now();
      expect(dueIn).toBeGreaterThan(89 * 60_000);
      expect(dueIn).toBeLessThanOrEqual(90 * 60_000);
      expect((await setRead(admin.token, row?.notification_id ?? "", true)).status).toBe(200);
      await makeDue([row?.id ?? ""]);
      expect(await dispatchMessage(env, row?.id ?? "")).toBe("skipped");
      expect((await statusOf(row?.id ?? ""))?.status_reason).toBe(READ_BEFORE_DUE);
    } finally {
      expect((await call("PUT", settingsOf(TEMPLATE_IDS.test), { token: admin.token, body: { email_when_unread_after: "" } })).status).toBe(200);
    }
    expect(await json(await call("GET", settingsOf(TEMPLATE_IDS.test), { token: admin.token }))).toEqual({
      id: TEMPLATE_IDS.test,
      email_when_unread_after: "",
    });
  });

  it("refuses custom and never-in-the-inbox templates, bad durations, non-owners and unknown templates, changing nothing", async () => {
    const admin = await owner();
    const put = (id: string, body: unknown, token = admin.token) => call("PUT", settingsOf(id), { token, body });
    await expectError(await put(TEMPLATE_IDS.custom, { email_when_unread_after: "15m" }), 400, NotificationsMessages.readAwareSystemOnly);
    await expectError(await put(TEMPLATE_IDS.broadcast, { email_when_unread_after: "15m" }), 400, NotificationsMessages.readAwareSystemOnly);
    await expectError(
      await put(TEMPLATE_IDS.oneTimePasscode, { email_when_unread_after: "15m" }),
      400,
      NotificationsMessages.readAwareNeedsInbox("One-Time Passcode"),
    );
    for (const bad of ["25h", "soon", "-5m", 15, null]) {
      const body = await expectError(await put(TEMPLATE_IDS.test, { email_when_unread_after: bad }), 400);
      expect(body.validations?.[0]?.field).toBe("email_when_unread_after");
    }
    const userAdmin = await createUser({ roles: ["user-admin"] });
    await expectError(await put(TEMPLATE_IDS.test, { email_when_unread_after: "15m" }, userAdmin.token), 403);
    await expectError(await put(crypto.randomUUID(), { email_when_unread_after: "15m" }), 404);
    const stored = await env.DB.prepare("SELECT count(*) AS n FROM notification_templates WHERE email_when_unread_after_ms <> 0").first<{
      n: number;
    }>();
    expect(stored?.n).toBe(0);
  });
});
