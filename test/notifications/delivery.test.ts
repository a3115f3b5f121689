import { createMessageBatch } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { AuthMessages } from "../../src/auth/messages";
import { database } from "../../src/db/client";
import type { NotificationQueueMessage } from "../../src/env";
import { Messages } from "../../src/http/errors";
import { handleQueue } from "../../src/notifications/background";
import { standardWebhookSignature } from "../../src/notifications/channels/webhook";
import { writePaused } from "../../src/notifications/settings";
import { TEMPLATE_IDS } from "../../src/notifications/templates";
import { call, createUser, expectError, json, owner } from "../helpers";
import { list } from "../inbox/inbox-helpers";
import { emails, scriptWebhook, startSmtp, stopSmtp, waitFor, webhooks } from "../peers";

// Everything here asserts on the shared SMTP and webhook peers, so this one file drives every delivery fault:
// its tests run in order, and no other file stops the SMTP server or scripts webhook answers.

interface MessageRow {
  id: string;
  method: string;
  status: string;
  status_reason: string | null;
  attempts: number;
}

async function rowsOf(userId: string, method?: string): Promise<MessageRow[]> {
  const { results } = await env.DB.prepare(
    `SELECT * FROM notification_messages WHERE user_id = ?${method ? " AND method = ?" : ""} ORDER BY created_at, id`,
  )
    .bind(...(method ? [userId, method] : [userId]))
    .all<MessageRow>();
  return results;
}

async function settled(userId: string, method: string, status: string, count = 1): Promise<MessageRow[]> {
  return waitFor(async () => {
    const rows = (await rowsOf(userId, method)).filter((r) => r.status === status);
    return rows.length >= count ? rows : undefined;
  }, 20_000);
}

const custom = (token: string, title: string, message = "") =>
  call("POST", "/notifications/custom", { token, body: { content: { title, message } } });

async function withCustomTemplateMethod<T>(method: string, run: () => Promise<T>): Promise<T> {
  await env.DB.prepare("UPDATE notification_templates SET method = ? WHERE id = ?").bind(method, TEMPLATE_IDS.custom).run();
  try {
    return await run();
  } finally {
    await env.DB.prepare("UPDATE notification_templates SET method = '' WHERE id = ?").bind(TEMPLATE_IDS.custom).run();
  }
}

describe("SMTP delivery", () => {
  it("sends multipart text + HTML to the recipient with the plaintext title as subject", async () => {
    const user = await createUser();
    expect((await custom(user.token, "Build **green**", "All [checks](https://ci.example.com/9) passed.")).status).toBe(204);
    const mail = await waitFor(async () => (await emails()).find((m) => m.rcptTo.includes(user.email)));
    expect(mail.subject).toBe("Build green");
    expect(mail.from).toBe("herald@herald.test");
    expect(mail.authUser).toBe("herald");
    expect(mail.text).toContain("All checks (https://ci.example.com/9) passed.");
    expect(mail.html).toContain('<a href="https://ci.example.com/9">checks</a>');
    await settled(user.id, "smtp", "sent");
  });

  it("SMTP down, then up: retried and delivered exactly once", async () => {
    const user = await createUser();
    await stopSmtp();
    try {
      expect((await custom(user.token, "while down")).status).toBe(204);
      const [failed] = await settled(user.id, "smtp", "temporary_failure");
      expect(failed?.status_reason).toMatch(/smtp/);
    } finally {
      await startSmtp();
    }
    const [sent] = await settled(user.id, "smtp", "sent");
    expect(sent?.attempts).toBeGreaterThanOrEqual(2);
    await new Promise((r) => setTimeout(r, 300));
    expect((await emails()).filter((m) => m.rcptTo.includes(user.email))).toHaveLength(1);
  });
});

describe("webhook delivery", () => {
  it("POSTs the Coder-compatible body with X-Message-Id and a valid Standard Webhooks signature", async () => {
    const user = await createUser();
    await withCustomTemplateMethod("webhook", async () => {
      await custom(user.token, "Hook *title*", "Hook body");
      const [row] = await settled(user.id, "webhook", "sent");
      const call = (await webhooks()).find((w) => w.headers["x-message-id"] === row?.id);
      expect(call).toBeDefined();
      const body = call?.json as Record<string, unknown>;
      expect(body).toMatchObject({
        _version: "1.1",
        msg_id: row?.id,
        title: "Hook title",
        title_markdown: "Hook *title*",
        body: "Hook body",
        body_markdown: "Hook body",
      });
      expect(body.payload).toMatchObject({
        notification_template_id: TEMPLATE_IDS.custom,
        user_id: user.id,
        user_email: user.email,
        labels: { custom_title: "Hook *title*" },
      });
      const headers = call?.headers ?? {};
      expect(headers["webhook-id"]).toBe(row?.id);
      const expected = await standardWebhookSignature(
        env.NOTIFICATIONS_WEBHOOK_SECRET ?? "",
        row?.id ?? "",
        Number(headers["webhook-timestamp"]),
        call?.body ?? "",
      );
      expect(headers["webhook-signature"]).toBe(expected);
    });
  });

  it("500 then 200: retried, then sent", async () => {
    const user = await createUser();
    await withCustomTemplateMethod("webhook", async () => {
      await scriptWebhook([{ status: 500, body: "try later" }]);
      await custom(user.token, "flaky");
      const [row] = await settled(user.id, "webhook", "sent");
      expect(row?.attempts).toBe(2);
    });
  });

  it("400: a permanent failure with the reason", async () => {
    const user = await createUser();
    await withCustomTemplateMethod("webhook", async () => {
      await scriptWebhook([{ status: 400, body: "bad payload" }]);
      await custom(user.token, "refused");
      const [row] = await settled(user.id, "webhook", "permanent_failure");
      expect(row?.status_reason).toBe("webhook answered 400: bad payload");
      expect(row?.attempts).toBe(1);
    });
  });

  it("500 then 200: every attempt carries the same webhook-id and X-Message-Id (docs/email.md)", async () => {
    const user = await createUser();
    await withCustomTemplateMethod("webhook", async () => {
      await scriptWebhook([{ status: 503, body: "down" }]);
      await custom(user.token, "same id");
      const [row] = await settled(user.id, "webhook", "sent");
      const calls = (await webhooks()).filter((w) => w.headers["x-message-id"] === row?.id);
      expect(calls).toHaveLength(2);
      expect(new Set(calls.map((c) => c.headers["webhook-id"]))).toEqual(new Set([row?.id]));
    });
  });

  it("301: a permanent failure with its reason, and the redirect is never followed (the payload is not lost as a GET)", async () => {
    const user = await createUser();
    await withCustomTemplateMethod("webhook", async () => {
      await scriptWebhook([{ status: 301, location: `${env.PEER_URL}/webhook` }]);
      await custom(user.token, "moved");
      const [row] = await settled(user.id, "webhook", "permanent_failure");
      expect(row?.status_reason).toBe(
        `webhook answered 301 (a redirect to ${env.PEER_URL}/webhook); redirects are not followed, set NOTIFICATIONS_WEBHOOK_URL to the final URL`,
      );
      const calls = (await webhooks()).filter((w) => w.headers["x-message-id"] === row?.id || w.method === "GET");
      expect(calls.map((c) => c.method)).toEqual(["POST"]);
    });
  });

  it("a receiver that hangs on one delivery delays only that one: a queue batch is delivered concurrently", async () => {
    const user = await createUser();
    const db = database(env.DB);
    await withCustomTemplateMethod("webhook", async () => {
      // Enqueued while paused so that only the batch below sends them, both in one batch, as the queue would.
      await writePaused(db, true);
      await custom(user.token, "first");
      await custom(user.token, "second");
      await writePaused(db, false);
      const ids = (await rowsOf(user.id, "webhook")).map((r) => r.id);
      expect(ids).toHaveLength(2);
      // Whichever request reaches the receiver first hangs for 8 s; the other is answered at once.
      await scriptWebhook([{ status: 200, body: "slow", delayMs: 8_000 }]);
      const batch = createMessageBatch<NotificationQueueMessage>(
        "herald-notifications",
        ids.map((id, i) => ({ id: `m${i}`, timestamp: new Date(), attempts: 1, body: { messageId: id } })),
      );
      const handled = handleQueue(batch, env);
      const rows = await waitFor(async () => {
        const all = await rowsOf(user.id, "webhook");
        return all.some((r) => r.status === "sent") ? all : undefined;
      }, 6_000);
      expect(rows.map((r) => r.status).sort()).toEqual(["leased", "sent"]);
      await handled;
      expect((await rowsOf(user.id, "webhook")).map((r) => r.status)).toEqual(["sent", "sent"]);
    });
  }, 20_000);
});

describe("N7 / N8 settings (here: pausing affects every delivery)", () => {
  it("reads for everyone, writes for owners only, 304 when unchanged, audited", async () => {
    const admin = await owner();
    const member = await createUser();
    expect(await json(await call("GET", "/notifications/settings", { token: member.token }))).toEqual({ notifier_paused: false });
    await expectError(await call("PUT", "/notifications/settings", { token: member.token, body: { notifier_paused: true } }), 403);
    await expectError(await call("PUT", "/notifications/settings", { token: admin.token, body: {} }), 400, Messages.validation);
    await expectError(await call("PUT", "/notifications/settings", { token: admin.token, body: { notifier_paused: "yes" } }), 400);
    const unchanged = await call("PUT", "/notifications/settings", { token: admin.token, body: { notifier_paused: false } });
    expect(unchanged.status).toBe(304);
    expect(await unchanged.text()).toBe("");
    const paused = await call("PUT", "/notifications/settings", { token: admin.token, body: { notifier_paused: true } });
    expect(paused.status).toBe(200);
    expect(await json(paused)).toEqual({ notifier_paused: true });
    expect(await json(await call("GET", "/notifications/settings", { token: member.token }))).toEqual({ notifier_paused: true });
    expect((await call("PUT", "/notifications/settings", { token: admin.token, body: { notifier_paused: false } })).status).toBe(200);
    const audit = await env.DB.prepare("SELECT count(*) AS n FROM audit_logs WHERE resource_type = 'deployment_config'").first<{ n: number }>();
    expect(audit?.n).toBeGreaterThanOrEqual(2);
  });
});

describe('pause (docs/api.md, "Pausing")', () => {
  it("while paused nothing is dispatched (inbox included); on resume all 20 arrive once, in order", async () => {
    const admin = await owner();
    const user = await createUser();
    expect((await call("PUT", "/notifications/settings", { token: admin.token, body: { notifier_paused: true } })).status).toBe(200);
    try {
      for (let i = 0; i < 20; i++) expect((await custom(user.token, `paused ${i}`)).status).toBe(204);
      await new Promise((r) => setTimeout(r, 1500));
      expect((await list(user.token)).notifications).toEqual([]);
      expect((await emails()).filter((m) => m.rcptTo.includes(user.email))).toEqual([]);
      expect((await rowsOf(user.id)).every((r) => r.status === "pending")).toBe(true);
    } finally {
      expect((await call("PUT", "/notifications/settings", { token: admin.token, body: { notifier_paused: false } })).status).toBe(200);
    }
    await settled(user.id, "inbox", "sent", 20);
    await settled(user.id, "smtp", "sent", 20);
    const inbox = await list(user.token, "?limit=100");
    expect(inbox.notifications.map((n) => n.title)).toEqual(Array.from({ length: 20 }, (_, i) => `paused ${19 - i}`));
    const mails = (await emails()).filter((m) => m.rcptTo.includes(user.email));
    expect(mails.map((m) => m.subject).sort()).toEqual(Array.from({ length: 20 }, (_, i) => `paused ${i}`).sort());
  });
});

describe('A5 / A4 password reset by one-time passcode (docs/api.md, "Password reset by one-time passcode")', () => {
  const requestCode = (email: string) => call("POST", "/users/otp/request", { body: { email } });
  const change = (email: string, code: string, password: string) =>
    call("POST", "/users/otp/change-password", { body: { email, one_time_passcode: code, password } });

  async function codeFor(email: string, after = 0): Promise<string> {
    // The passcode e-mails only: the same address also receives security notices (a token made, a password changed).
    const mail = await waitFor(async () => (await emails()).filter((m) => m.rcptTo.includes(email) && m.subject === "Reset your password")[after]);
    const link = /https?:\/\/\S*reset-password\/change\?otp=([0-9a-f-]{36})(\S*)/.exec(mail.text);
    expect(link?.[0]).toMatch(/^http:\/\/localhost:8787\/reset-password\/change\?otp=/);
    // Only the code: the recipient's address is not in the link (docs/email.md).
    expect(link?.[2]).toBe("");
    expect(mail.text).not.toContain(encodeURIComponent(email));
    return link?.[1] ?? "";
  }

  it("A5 answers the same for unknown and known e-mails; the code is delivered only by e-mail and stored only as an HMAC", async () => {
    const user = await createUser();
    const unknown = await requestCode(`nobody-${crypto.randomUUID().slice(0, 6)}@herald.test`);
    const known = await requestCode(user.email);
    expect(unknown.status).toBe(204);
    expect(known.status).toBe(204);
    expect(await unknown.text()).toBe(await known.text());
    const code = await codeFor(user.email);
    const stored = await env.DB.prepare("SELECT code_hmac FROM one_time_passcodes WHERE user_id = ?").bind(user.id).first<{ code_hmac: string }>();
    expect(stored?.code_hmac).toMatch(/^[0-9a-f]{64}$/);
    const everything = JSON.stringify((await env.DB.prepare("SELECT * FROM notification_messages WHERE user_id = ?").bind(user.id).all()).results);
    expect(everything).not.toContain(code);
    expect((await list(user.token)).notifications).toEqual([]); // external only: never in the inbox
    await expectError(await call("POST", "/users/otp/request", { body: { email: "not-an-email" } }), 400);
  });

  it("the code works once; old sessions and tokens die; the Password changed notice is sent", async () => {
    const user = await createUser();
    const { key } = (await (await call("POST", "/users/me/keys/tokens", { token: user.token, body: { token_name: "ci" } })).json()) as {
      key: string;
    };
    await requestCode(user.email);
    const code = await codeFor(user.email);
    expect((await change(user.email, code, "a-whole-new-passphrase-31")).status).toBe(204);
    await expectError(await change(user.email, code, "another-new-passphrase-32"), 400, AuthMessages.incorrectPasscode);
    await expectError(await call("GET", "/users/me", { token: user.token }), 401);
    await expectError(await call("GET", "/users/me", { token: key }), 401);
    expect((await call("POST", "/users/login", { body: { email: user.email, password: "a-whole-new-passphrase-31" } })).status).toBe(201);
    const notice = await waitFor(async () =>
      (await emails()).find((m) => m.rcptTo.includes(user.email) && m.subject === "Your password was changed"),
    );
    expect(notice.text).toContain("was changed");
  });

  it("wrong, replaced and expired codes fail; weak and same-as-old passwords are refused", async () => {
    const user = await createUser();
    await requestCode(user.email);
    const first = await codeFor(user.email, 0);
    await requestCode(user.email);
    const second = await codeFor(user.email, 1);
    await expectError(await change(user.email, first, "replaced-code-passphrase-1"), 400, AuthMessages.incorrectPasscode);
    await expectError(await change(user.email, second, "short"), 400, AuthMessages.invalidPassword);
    await expectError(await change(user.email, second, user.password), 400, AuthMessages.samePassword);
    await expectError(
      await change(`ghost-${crypto.randomUUID().slice(0, 6)}@herald.test`, second, "ghostly-passphrase-42"),
      400,
      AuthMessages.incorrectPasscode,
    );
  });

  it("a code survives four wrong tries and is burned by the fifth", async () => {
    const survivor = await createUser();
    await requestCode(survivor.email);
    const kept = await codeFor(survivor.email);
    for (let i = 0; i < 4; i++) await expectError(await change(survivor.email, crypto.randomUUID(), "guessing-passphrase-77"), 400);
    expect((await change(survivor.email, kept, "survivor-passphrase-12")).status).toBe(204);

    const user = await createUser();
    await requestCode(user.email);
    const burned = await codeFor(user.email);
    for (let i = 0; i < 5; i++) await expectError(await change(user.email, crypto.randomUUID(), "guessing-passphrase-77"), 400);
    await expectError(await change(user.email, burned, "burned-code-passphrase-5"), 400, AuthMessages.incorrectPasscode);
    await requestCode(user.email);
    const fresh = await codeFor(user.email, 1);
    await env.DB.prepare("UPDATE one_time_passcodes SET expires_at = ? WHERE user_id = ?")
      .bind(new Date(Date.now() - 1000).toISOString(), user.id)
      .run();
    await expectError(await change(user.email, fresh, "expired-code-passphrase-9"), 400, AuthMessages.incorrectPasscode);
  });

  it("two concurrent uses of one code: exactly one succeeds", async () => {
    const user = await createUser();
    await requestCode(user.email);
    const code = await codeFor(user.email);
    const results = await Promise.all([change(user.email, code, "racing-passphrase-one-1"), change(user.email, code, "racing-passphrase-two-2")]);
    expect(results.map((r) => r.status).sort()).toEqual([204, 400]);
  });
});

describe("templates off by default (here: it edits a shared template)", () => {
  it("enabled_by_default false is inhibited until the user enables it", async () => {
    const user = await createUser();
    await env.DB.prepare("UPDATE notification_templates SET enabled_by_default = 0 WHERE id = ?").bind(TEMPLATE_IDS.custom).run();
    try {
      await call("POST", "/notifications/custom", { token: user.token, body: { content: { title: "off by default" } } });
      expect((await rowsOf(user.id)).every((r) => r.status === "inhibited")).toBe(true);
      await call("PUT", "/users/me/notifications/preferences", {
        token: user.token,
        body: { template_disabled_map: { [TEMPLATE_IDS.custom]: false } },
      });
      await call("POST", "/notifications/custom", { token: user.token, body: { content: { title: "now on" } } });
      const latest = (await rowsOf(user.id)).slice(-2);
      expect(latest.every((r) => r.status !== "inhibited")).toBe(true);
    } finally {
      await env.DB.prepare("UPDATE notification_templates SET enabled_by_default = 1 WHERE id = ?").bind(TEMPLATE_IDS.custom).run();
    }
  });
});
