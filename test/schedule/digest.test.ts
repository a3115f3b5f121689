import { createExecutionContext, createMessageBatch, evictDurableObject, getQueueResult, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { NotificationQueueMessage } from "../../src/env";
import { userInbox } from "../../src/inbox/address";
import { handleQueue, handleScheduled } from "../../src/notifications/background";
import { dispatchMessage } from "../../src/notifications/dispatch";
import { enqueueNotification } from "../../src/notifications/enqueue";
import { DIGEST_TEMPLATE_ID, TEMPLATE_IDS } from "../../src/notifications/templates";
import { ScheduleMessages } from "../../src/schedule/messages";
import { digestWindowEnd } from "../../src/schedule/model";
import { call, createUser, type TestUser } from "../helpers";
import { fromNow, listAll, setArchived, setRead, snooze } from "../inbox/inbox-helpers";
import { emails } from "../peers";

// docs/schedule.md, "Digests" and "Exactly once": with a digest on, non-mandatory e-mail copies are held in a window
// the user's inbox object keeps; when it ends, the object decides once which copies are still unread, and one e-mail
// lists them. The window's end is driven with the test's clock (`endDigests(now)`, as the alarm runs it; the alarm's
// own time is checked against the window), and the dispatcher's `now` likewise.

const DAY = 24 * 60 * 60 * 1000;

interface Row {
  id: string;
  notification_id: string;
  template_id: string;
  method: string;
  status: string;
  status_reason: string | null;
  next_retry_after: string | null;
}

async function rowsOf(userId: string): Promise<Row[]> {
  const { results } = await env.DB.prepare(
    "SELECT id, notification_id, template_id, method, status, status_reason, next_retry_after FROM notification_messages WHERE user_id = ? ORDER BY created_at, id",
  )
    .bind(userId)
    .all<Row>();
  return results;
}

async function digestUser(digest: string, timezone = "UTC"): Promise<TestUser> {
  const user = await createUser();
  const res = await call("PUT", "/users/me/notifications/schedule", { token: user.token, body: { timezone, quiet_hours: [], digest } });
  expect(res.status).toBe(200);
  return user;
}

/** Enqueues a notification for `user` and waits for its inbox copy; returns the inbox id and the e-mail row. */
async function notify(user: TestUser, title: string, templateId: string = TEMPLATE_IDS.custom): Promise<{ item: string; email: Row }> {
  const background: Promise<unknown>[] = [];
  const rows = await enqueueNotification(
    env,
    { waitUntil: (p) => background.push(p) },
    {
      userId: user.id,
      templateId,
      labels: { custom_title: title, custom_message: `About ${title}`, time: "now", device: "Firefox on Linux", location: "Unknown" },
      createdBy: "system",
    },
  );
  await Promise.all(background);
  const email = (await rowsOf(user.id)).find((r) => r.method === "smtp" && r.notification_id === rows[0]?.notificationId);
  if (!email) throw new Error("no e-mail row");
  return { item: email.notification_id, email };
}

/** The end of the window a held row waits for (its re-drive time is a day after it). */
const windowEndOf = (row: Row) => Date.parse(row.next_retry_after ?? "") - DAY;
const alarmOf = (user: TestUser) => runInDurableObject(userInbox(env, user.id), (_instance, state) => state.storage.getAlarm());
const mailsTo = async (user: TestUser) => (await emails()).filter((m) => m.rcptTo.includes(user.email));
const statusOf = async (user: TestUser, id: string) => (await rowsOf(user.id)).find((r) => r.id === id);

describe('digests (docs/schedule.md, "Digests")', () => {
  it("a 1-minute window: one e-mail listing what is still unread, newest first; read, archived and snoozed items left out", async () => {
    const user = await digestUser("1m");
    const titles = ["Alpha build", "Beta build", "Gamma build", "Delta build", "Epsilon build"];
    const sent: { item: string; email: Row }[] = [];
    for (const title of titles) sent.push(await notify(user, title));
    const [read, archived, snoozed] = sent;
    for (const { email } of sent) expect(email).toMatchObject({ status: "pending", status_reason: ScheduleMessages.heldDigest });
    const end = windowEndOf(sent[0]?.email as Row);
    // One window: every copy waits for the same end, a minute after the first; the object's alarm is set for it.
    expect(new Set(sent.map((s) => windowEndOf(s.email))).size).toBe(1);
    expect(await alarmOf(user)).toBe(end);
    // The inbox copies arrived at once.
    expect((await listAll(user.token)).notifications).toHaveLength(5);

    expect((await setRead(user.token, read?.item ?? "", true)).status).toBe(200);
    expect((await setArchived(user.token, archived?.item ?? "", true)).status).toBe(200);
    expect((await snooze(user.token, snoozed?.item ?? "", fromNow(DAY))).status).toBe(200);

    const inbox = userInbox(env, user.id);
    expect(await inbox.endDigests(end - 1)).toEqual([]);
    const [handed] = await inbox.endDigests(end);
    const digestId = handed?.[0] ?? "";
    expect(handed).toEqual([digestId]);
    for (const left of [read, archived, snoozed])
      expect(await statusOf(user, left?.email.id ?? "")).toMatchObject({ status: "skipped", status_reason: ScheduleMessages.leftOutOfDigest });
    expect(await statusOf(user, digestId)).toMatchObject({ template_id: DIGEST_TEMPLATE_ID, method: "smtp", status: "pending" });

    expect(await dispatchMessage(env, digestId, end)).toBe("sent");
    const mails = await mailsTo(user);
    expect(mails.map((m) => m.subject)).toEqual(["Your digest: 2 unread notifications"]);
    const text = mails[0]?.text ?? "";
    expect(text.indexOf("Epsilon build")).toBeGreaterThan(-1);
    expect(text.indexOf("Epsilon build")).toBeLessThan(text.indexOf("Delta build"));
    for (const gone of ["Alpha", "Beta", "Gamma"]) expect(text).not.toContain(gone);
    expect(text).toContain(`Open your inbox: ${(env.ACCESS_URL ?? "").replace(/\/$/, "")}/#/inbox`);
    expect(mails[0]?.html).toContain("Delta build");
    for (const listed of sent.slice(3))
      expect(await statusOf(user, listed.email.id)).toMatchObject({ status: "sent", status_reason: ScheduleMessages.inDigest(digestId) });
    // The window is over: the next copy opens a new one.
    const next = await notify(user, "Zeta build");
    expect(windowEndOf(next.email)).toBeGreaterThan(end);
  });

  it("a window with nothing unread sends nothing", async () => {
    const user = await digestUser("1m");
    const a = await notify(user, "Read one");
    const b = await notify(user, "Read two");
    for (const { item } of [a, b]) expect((await setRead(user.token, item, true)).status).toBe(200);
    expect(await userInbox(env, user.id).endDigests(windowEndOf(a.email))).toEqual([[]]);
    for (const { email } of [a, b]) expect((await statusOf(user, email.id))?.status).toBe("skipped");
    expect((await rowsOf(user.id)).filter((r) => r.template_id === DIGEST_TEMPLATE_ID)).toEqual([]);
    expect(await mailsTo(user)).toEqual([]);
  });

  it("a mandatory template during a window goes out at once; the window's digest does not name it", async () => {
    const user = await digestUser("1h");
    const held = await notify(user, "Ordinary news");
    const notice = await notify(user, "", TEMPLATE_IDS.passwordChanged);
    expect(notice.email).toMatchObject({ status: "pending", status_reason: null, next_retry_after: null });
    expect(await dispatchMessage(env, notice.email.id)).toBe("sent");
    const [handed] = await userInbox(env, user.id).endDigests(windowEndOf(held.email));
    expect(await dispatchMessage(env, handed?.[0] ?? "", windowEndOf(held.email))).toBe("sent");
    const subjects = (await mailsTo(user)).map((m) => m.subject);
    expect(subjects).toHaveLength(2);
    expect(subjects).toContain("Your digest: 1 unread notification");
  });

  it("1-hour and daily windows end when the schedule says, on the user's clock", async () => {
    const hourly = await digestUser("1h");
    const first = await notify(hourly, "First of the hour");
    const created = Date.parse(
      (await env.DB.prepare("SELECT created_at FROM notification_messages WHERE id = ?").bind(first.email.id).first<{ created_at: string }>())
        ?.created_at ?? "",
    );
    expect(windowEndOf(first.email)).toBe(created + 60 * 60 * 1000);
    const second = await notify(hourly, "Second of the hour");
    expect(windowEndOf(second.email)).toBe(windowEndOf(first.email));

    const daily = await digestUser("daily@07:30", "Europe/Berlin");
    const morning = await notify(daily, "For the morning");
    const at = Date.parse(
      (await env.DB.prepare("SELECT created_at FROM notification_messages WHERE id = ?").bind(morning.email.id).first<{ created_at: string }>())
        ?.created_at ?? "",
    );
    const expected = digestWindowEnd({ timezone: "Europe/Berlin", digest: { kind: "daily", minutes: 7 * 60 + 30 } }, at);
    expect(windowEndOf(morning.email)).toBe(expected);
    expect(new Date(expected ?? 0).toLocaleTimeString("en-GB", { timeZone: "Europe/Berlin", hour: "2-digit", minute: "2-digit" })).toBe("07:30");
    expect(await alarmOf(daily)).toBe(expected);
  });

  it('more than 50 unread: the first 50 are named, then "and N more"; every copy is sent in the digest', async () => {
    const user = await digestUser("1m");
    const sent: { item: string; email: Row }[] = [];
    for (let i = 1; i <= 52; i++) sent.push(await notify(user, `Item number ${i}`));
    const end = windowEndOf(sent[0]?.email as Row);
    const [handed] = await userInbox(env, user.id).endDigests(end);
    expect(await dispatchMessage(env, handed?.[0] ?? "", end)).toBe("sent");
    const [mail] = await mailsTo(user);
    expect(mail?.subject).toBe("Your digest: 52 unread notifications");
    expect(mail?.text).toContain("Item number 52");
    expect(mail?.text).toContain("Item number 3 ");
    expect(mail?.text).not.toContain("Item number 2 ");
    expect(mail?.text).toContain("and 2 more");
    const rows = await rowsOf(user.id);
    for (const { email } of sent) expect(rows.find((r) => r.id === email.id)?.status).toBe("sent");
  });
});

describe('exactly once (docs/schedule.md, "Exactly once")', () => {
  it("the window's end delivered twice, the object restarted mid-window, the queue redelivering the digest → one e-mail", async () => {
    const user = await digestUser("1m");
    const inbox = userInbox(env, user.id);
    const a = await notify(user, "Before the restart");
    // The object is evicted mid-window: the window, its entries and its alarm are in storage.
    await evictDurableObject(inbox);
    const b = await notify(user, "After the restart");
    const end = windowEndOf(a.email);
    expect(windowEndOf(b.email)).toBe(end);
    expect(await alarmOf(user)).toBe(end);

    const [first] = await inbox.endDigests(end);
    // The end again (a late alarm, a retried one): decided and handed off already, nothing happens.
    expect(await inbox.endDigests(end)).toEqual([]);
    expect(await inbox.endDigests(end + 60_000)).toEqual([]);
    const digestId = first?.[0] ?? "";
    expect((await rowsOf(user.id)).filter((r) => r.template_id === DIGEST_TEMPLATE_ID).map((r) => r.id)).toEqual([digestId]);

    // The queue hands the digest out twice in one batch, and the cron re-drives it: one send.
    const batch = createMessageBatch<NotificationQueueMessage>("herald-notifications", [
      { id: "q1", timestamp: new Date(), attempts: 1, body: { messageIds: [digestId] } },
      { id: "q2", timestamp: new Date(), attempts: 2, body: { messageIds: [digestId] } },
    ]);
    await handleQueue(batch, env);
    expect((await getQueueResult(batch, createExecutionContext())).explicitAcks.sort()).toEqual(["q1", "q2"]);
    await handleScheduled(env);
    expect(await dispatchMessage(env, digestId, end + DAY)).toBe("not_taken");
    const mails = await mailsTo(user);
    expect(mails).toHaveLength(1);
    expect(mails[0]?.text).toContain("Before the restart");
    expect(mails[0]?.text).toContain("After the restart");

    // A held copy re-driven on its own a day later finds the decision: sent in the digest, not sent again.
    await env.DB.prepare("UPDATE notification_messages SET status = 'pending', status_reason = ? WHERE id = ?")
      .bind(ScheduleMessages.heldDigest, a.email.id)
      .run();
    expect(await dispatchMessage(env, a.email.id, end + 2 * DAY)).toBe("sent");
    expect(await statusOf(user, a.email.id)).toMatchObject({ status: "sent", status_reason: ScheduleMessages.inDigest(digestId) });
    expect(await mailsTo(user)).toHaveLength(1);
  });

  it("the message log's own guard: a window handed off again (the object lost the mark) adds no second digest, nor a second e-mail", async () => {
    const user = await digestUser("1m");
    const inbox = userInbox(env, user.id);
    const a = await notify(user, "Handed off twice");
    const end = windowEndOf(a.email);
    const [first] = await inbox.endDigests(end);
    const digestId = first?.[0] ?? "";
    expect(await dispatchMessage(env, digestId, end)).toBe("sent");
    // As if the object had died after the D1 batch and before recording the hand-off: the window is due again, and
    // the object — its own guard gone — hands it off a second time. Only the message log's guard is left.
    await runInDurableObject(inbox, (_instance, state) => {
      state.storage.sql.exec("UPDATE digest_windows SET hand_off_at = ?", end);
    });
    const [again] = await inbox.endDigests(end + 1);
    expect(again).toEqual([digestId]);
    expect((await rowsOf(user.id)).filter((r) => r.template_id === DIGEST_TEMPLATE_ID).map((r) => [r.id, r.status])).toEqual([[digestId, "sent"]]);
    expect(await dispatchMessage(env, digestId, end + 2)).toBe("not_taken");
    expect(await mailsTo(user)).toHaveLength(1);
  });
});
