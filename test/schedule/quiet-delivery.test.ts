import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { dispatchMessage } from "../../src/notifications/dispatch";
import { enqueueNotification } from "../../src/notifications/enqueue";
import { TEMPLATE_IDS } from "../../src/notifications/templates";
import { ScheduleMessages } from "../../src/schedule/messages";
import { call, createUser, json, owner, type TestUser } from "../helpers";
import { listAll, setArchived, setRead } from "../inbox/inbox-helpers";
import { emails, waitFor } from "../peers";

// docs/schedule.md, "Quiet hours": the e-mail copy of a non-mandatory template that falls due inside a quiet range waits
// (pending, the reason, next_retry_after at the end of the range) and goes out then unless its inbox copy was read or
// archived meanwhile; the inbox copy arrives at once; mandatory templates are never held. The dispatcher's clock is
// the test's: it sends "at the end of the range" without waiting for it.

const HOUR = 3_600_000;
const clock = (ms: number) => new Date(ms).toISOString().slice(11, 16);

interface Row {
  id: string;
  method: string;
  status: string;
  status_reason: string | null;
  next_retry_after: string | null;
  send_if_unread: number;
  notification_id: string;
}

async function rowsOf(userId: string): Promise<Row[]> {
  const { results } = await env.DB.prepare(
    "SELECT id, method, status, status_reason, next_retry_after, send_if_unread, notification_id FROM notification_messages WHERE user_id = ? ORDER BY created_at, id",
  )
    .bind(userId)
    .all<Row>();
  return results;
}

/** A user whose quiet hours (UTC) started an hour ago and end in an hour, to the minute; returns the end. */
async function quietUser(): Promise<{ user: TestUser; end: number }> {
  const user = await createUser();
  const now = Date.now();
  const start = now - HOUR;
  const end = Math.floor((now + HOUR) / 60_000) * 60_000;
  const res = await call("PUT", "/users/me/notifications/schedule", {
    token: user.token,
    body: { timezone: "UTC", quiet_hours: [{ start: clock(start), end: clock(end) }], digest: "off" },
  });
  expect(res.status).toBe(200);
  return { user, end };
}

async function sendCustom(user: TestUser, title: string): Promise<{ email: Row; inboxItem: string }> {
  expect((await call("POST", "/notifications/custom", { token: user.token, body: { content: { title, message: "Body" } } })).status).toBe(204);
  const item = await waitFor(async () => (await listAll(user.token)).notifications.find((n) => n.title === title));
  const email = (await rowsOf(user.id)).find((r) => r.method === "smtp" && r.notification_id === item.id);
  if (!email) throw new Error("no e-mail row");
  return { email, inboxItem: item.id };
}

const mailsTo = async (user: TestUser) => (await emails()).filter((m) => m.rcptTo.includes(user.email));

describe('quiet hours (docs/schedule.md, "Quiet hours")', () => {
  it("holds the e-mail to the end of the range, visible in the log; the inbox copy arrives at once; sent at the end", async () => {
    const { user, end } = await quietUser();
    const { email, inboxItem } = await sendCustom(user, "Held until morning");
    expect(email).toMatchObject({
      status: "pending",
      status_reason: ScheduleMessages.heldQuiet,
      next_retry_after: new Date(end).toISOString(),
      send_if_unread: 1,
    });
    expect((await rowsOf(user.id)).find((r) => r.method === "inbox" && r.notification_id === inboxItem)?.status).toBe("sent");
    // The message log shows it held, with the reason and until when.
    const log = await json<{ messages: { id: string; status: string; status_reason: string; next_retry_after: string | null }[] }>(
      await call("GET", `/notifications/messages?user_id=${user.id}&method=smtp`, { token: (await owner()).token }),
    );
    expect(log.messages.find((m) => m.id === email.id)).toMatchObject({
      status: "pending",
      status_reason: ScheduleMessages.heldQuiet,
      next_retry_after: new Date(end).toISOString(),
    });
    expect(await dispatchMessage(env, email.id)).toBe("not_taken");
    expect(await dispatchMessage(env, email.id, end - 60_000)).toBe("not_taken");
    expect(await mailsTo(user)).toEqual([]);
    expect(await dispatchMessage(env, email.id, end)).toBe("sent");
    expect((await mailsTo(user)).map((m) => m.subject)).toEqual(["Held until morning"]);
  });

  it("read or archived during quiet hours → skipped with the reason, no e-mail", async () => {
    const { user, end } = await quietUser();
    const read = await sendCustom(user, "Read at night");
    const archived = await sendCustom(user, "Archived at night");
    expect((await setRead(user.token, read.inboxItem, true)).status).toBe(200);
    expect((await setArchived(user.token, archived.inboxItem, true)).status).toBe(200);
    for (const { email } of [read, archived]) {
      expect(await dispatchMessage(env, email.id, end)).toBe("skipped");
      expect((await rowsOf(user.id)).find((r) => r.id === email.id)).toMatchObject({
        status: "skipped",
        status_reason: ScheduleMessages.readDuringQuiet,
      });
    }
    expect(await mailsTo(user)).toEqual([]);
  });

  it("a mandatory template (a security notice) is never held", async () => {
    const { user } = await quietUser();
    const rows = await enqueueNotification(
      env,
      { waitUntil: () => undefined },
      {
        userId: user.id,
        templateId: TEMPLATE_IDS.passwordChanged,
        labels: { time: "now", device: "Firefox on Linux", location: "Unknown" },
        createdBy: "system",
      },
    );
    const email = rows.find((r) => r.method === "smtp");
    expect(email).toMatchObject({ status: "pending", statusReason: null, nextRetryAfter: null, sendIfUnread: false });
  });

  it("outside quiet hours nothing is held", async () => {
    const user = await createUser();
    const now = Date.now();
    await call("PUT", "/users/me/notifications/schedule", {
      token: user.token,
      body: { timezone: "UTC", quiet_hours: [{ start: clock(now + 2 * HOUR), end: clock(now + 3 * HOUR) }], digest: "off" },
    });
    const rows = await enqueueNotification(
      env,
      { waitUntil: () => undefined },
      { userId: user.id, templateId: TEMPLATE_IDS.test, createdBy: "system" },
    );
    expect(rows.find((r) => r.method === "smtp")).toMatchObject({ status: "pending", statusReason: null, nextRetryAfter: null });
  });
});
