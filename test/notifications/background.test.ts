import { createMessageBatch } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { NotificationQueueMessage } from "../../src/env";
import { DEAD_LETTER_QUEUE, handleQueue, handleScheduled } from "../../src/notifications/background";
import { call, createUser } from "../helpers";
import { list } from "../inbox/inbox-helpers";
import { waitFor } from "../peers";

interface Row {
  id: string;
  method: string;
  status: string;
  status_reason: string | null;
}

async function inboxRowOf(userId: string): Promise<Row> {
  return waitFor(
    async () =>
      (await env.DB.prepare("SELECT * FROM notification_messages WHERE user_id = ? AND method = 'inbox' AND status = 'sent'")
        .bind(userId)
        .first<Row>()) ?? undefined,
  );
}

describe('cron: re-drive and purge (docs/api.md, "Message states, retries, webhooks and SMTP")', () => {
  it("re-drives a message whose lease expired (its worker died mid-send) without duplicating it", async () => {
    const user = await createUser();
    await call("POST", "/notifications/custom", { token: user.token, body: { content: { title: "once only" } } });
    const row = await inboxRowOf(user.id);
    // Pretend the sender died after delivering but before recording it.
    const past = new Date(Date.now() - 5 * 60_000).toISOString();
    await env.DB.prepare("UPDATE notification_messages SET status = 'leased', leased_until = ?, updated_at = ? WHERE id = ?")
      .bind(past, past, row.id)
      .run();
    await handleScheduled(env);
    const after = await waitFor(async () => {
      const r = await env.DB.prepare("SELECT * FROM notification_messages WHERE id = ?").bind(row.id).first<Row>();
      return r?.status === "sent" ? r : undefined;
    });
    expect(after.status).toBe("sent");
    expect((await list(user.token)).notifications.filter((n) => n.title === "once only")).toHaveLength(1);
  });

  it("re-drives every retry that is due, even one due a moment ago (docs/email.md)", async () => {
    const user = await createUser();
    await call("POST", "/notifications/custom", { token: user.token, body: { content: { title: "due now" } } });
    const row = await inboxRowOf(user.id);
    const justNow = new Date(Date.now() - 1_000).toISOString();
    await env.DB.prepare("UPDATE notification_messages SET status = 'temporary_failure', next_retry_after = ?, sent_at = NULL WHERE id = ?")
      .bind(justNow, row.id)
      .run();
    await handleScheduled(env);
    const after = await env.DB.prepare("SELECT * FROM notification_messages WHERE id = ?").bind(row.id).first<Row>();
    expect(after?.status).toBe("sent");
    expect((await list(user.token)).notifications.filter((n) => n.title === "due now")).toHaveLength(1);
  });

  it("purges finished messages after 7 days and keeps younger ones", async () => {
    const user = await createUser();
    await call("POST", "/notifications/custom", { token: user.token, body: { content: { title: "old news" } } });
    const row = await inboxRowOf(user.id);
    const days = (n: number) => new Date(Date.now() - n * 86_400_000).toISOString();
    await env.DB.prepare("UPDATE notification_messages SET updated_at = ? WHERE id = ?").bind(days(8), row.id).run();
    await call("POST", "/notifications/custom", { token: user.token, body: { content: { title: "recent" } } });
    await handleScheduled(env);
    expect(await env.DB.prepare("SELECT id FROM notification_messages WHERE id = ?").bind(row.id).first()).toBeNull();
    const remaining = await env.DB.prepare("SELECT count(*) AS n FROM notification_messages WHERE user_id = ?").bind(user.id).first<{ n: number }>();
    expect(remaining?.n).toBeGreaterThanOrEqual(2);
  });
});

describe("dead-letter queue", () => {
  it("records dead-lettered messages as permanent failures with the reason, leaving sent ones alone", async () => {
    const user = await createUser();
    await call("POST", "/notifications/custom", { token: user.token, body: { content: { title: "dead letter" } } });
    const sent = await inboxRowOf(user.id);
    const stuck = await env.DB.prepare("SELECT * FROM notification_messages WHERE user_id = ? AND method = 'smtp'").bind(user.id).first<Row>();
    await env.DB.prepare("UPDATE notification_messages SET status = 'temporary_failure' WHERE id = ?").bind(stuck?.id).run();
    const batch = createMessageBatch<NotificationQueueMessage>(DEAD_LETTER_QUEUE, [
      { id: "m1", timestamp: new Date(), attempts: 4, body: { messageId: stuck?.id ?? "" } },
      { id: "m2", timestamp: new Date(), attempts: 4, body: { messageId: sent.id } },
    ]);
    await handleQueue(batch, env);
    const dead = await env.DB.prepare("SELECT * FROM notification_messages WHERE id = ?").bind(stuck?.id).first<Row>();
    expect(dead?.status).toBe("permanent_failure");
    expect(dead?.status_reason).toMatch(/dead-lettered/);
    expect((await env.DB.prepare("SELECT status FROM notification_messages WHERE id = ?").bind(sent.id).first<Row>())?.status).toBe("sent");
  });
});
