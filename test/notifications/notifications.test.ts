import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { Messages } from "../../src/http/errors";
import { NotificationsMessages } from "../../src/notifications/messages";
import { TEMPLATE_IDS } from "../../src/notifications/templates";
import { call, createUser, expectError, fetchApp, json, owner } from "../helpers";
import { list } from "../inbox/inbox-helpers";

interface Template {
  id: string;
  name: string;
  title_template: string;
  body_template: string;
  actions: string;
  group: string;
  method: string;
  kind: string;
  enabled_by_default: boolean;
}

async function messages(userId: string) {
  const { results } = await env.DB.prepare("SELECT * FROM notification_messages WHERE user_id = ? ORDER BY created_at, id")
    .bind(userId)
    .all<{ template_id: string; method: string; status: string; status_reason: string | null }>();
  return results;
}

describe("N2 GET /notifications/dispatch-methods", () => {
  it("answers an array holding the available methods and the default", async () => {
    const user = await createUser();
    const res = await call("GET", "/notifications/dispatch-methods", { token: user.token });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual([{ available: ["smtp", "webhook"], default: "smtp" }]);
    await expectError(await call("GET", "/notifications/dispatch-methods"), 401);
  });
});

describe("N9 / N10 templates", () => {
  it("lists system templates by name with the catalogue's stable ids, actions as a JSON string", async () => {
    const user = await createUser();
    const system = await json<Template[]>(await call("GET", "/notifications/templates/system", { token: user.token }));
    expect(system.map((t) => t.name)).toEqual([...system.map((t) => t.name)].sort());
    expect(system).toHaveLength(20);
    const ids = system.map((t) => t.id);
    const customIds: string[] = [TEMPLATE_IDS.custom, TEMPLATE_IDS.broadcast];
    for (const id of Object.values(TEMPLATE_IDS).filter((id) => !customIds.includes(id))) expect(ids).toContain(id);
    const test = system.find((t) => t.id === TEMPLATE_IDS.test);
    expect(test).toMatchObject({ name: "Test Notification", group: "Notification Events", method: "", kind: "system", enabled_by_default: true });
    expect(Array.isArray(JSON.parse(test?.actions ?? "null"))).toBe(true);
    const custom = await json<Template[]>(await call("GET", "/notifications/templates/custom", { token: user.token }));
    // By name: the Broadcast template (docs/broadcasts.md) and N1's.
    expect(custom.map((t) => [t.id, t.kind, t.group])).toEqual([
      [TEMPLATE_IDS.broadcast, "custom", "Custom Events"],
      [TEMPLATE_IDS.custom, "custom", "Custom Events"],
    ]);
  });
});

describe('N1 POST /notifications/custom (docs/api.md, "Notifications")', () => {
  it("sends the custom template to the caller's inbox; 204", async () => {
    const user = await createUser();
    const res = await call("POST", "/notifications/custom", { token: user.token, body: { content: { title: "Deploy *done*", message: "" } } });
    expect(res.status).toBe(204);
    const inbox = await (async () => {
      for (let i = 0; i < 100; i++) {
        const body = await list(user.token);
        if (body.notifications.length > 0) return body;
        await new Promise((r) => setTimeout(r, 20));
      }
      return list(user.token);
    })();
    expect(inbox.notifications[0]).toMatchObject({ template_id: TEMPLATE_IDS.custom, title: "Deploy *done*", user_id: user.id });
    const rows = await messages(user.id);
    expect(rows.map((r) => r.method).sort()).toEqual(["inbox", "smtp"]);
  });

  it("rejects empty, whitespace-only and over-long content with 400 Invalid request body", async () => {
    const user = await createUser();
    for (const content of [
      { title: "", message: "" },
      { title: "  ", message: "\n\t" },
      {},
      { title: "x".repeat(121) },
      { message: "x".repeat(2001) },
    ]) {
      const body = await expectError(
        await call("POST", "/notifications/custom", { token: user.token, body: { content } }),
        400,
        NotificationsMessages.invalidCustomBody,
      );
      expect(body.detail).toBeTruthy();
    }
    await expectError(await call("POST", "/notifications/custom", { token: user.token, body: {} }), 400, NotificationsMessages.invalidCustomBody);
    expect(await messages(user.id)).toEqual([]);
    expect(
      (await call("POST", "/notifications/custom", { token: user.token, body: { content: { title: "x".repeat(120), message: "y".repeat(2000) } } }))
        .status,
    ).toBe(204);
  });

  it("forbids system users with the documented detail", async () => {
    const svc = await createUser({ service: true });
    const body = await expectError(
      await call("POST", "/notifications/custom", { token: svc.token, body: { content: { title: "hi" } } }),
      403,
      NotificationsMessages.systemUserForbidden,
    );
    expect(body.detail).toBe(NotificationsMessages.systemUserCustom);
    await expectError(await call("POST", "/notifications/custom", { body: { content: { title: "hi" } } }), 401);
  });
});

describe("N11 POST /notifications/test", () => {
  it("is owner only and answers 200 with no body", async () => {
    const admin = await owner();
    const member = await createUser();
    await expectError(await call("POST", "/notifications/test", { token: member.token }), 403);
    const res = await call("POST", "/notifications/test", { token: admin.token });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("");
    const rows = await messages(admin.id);
    expect(rows.some((r) => r.template_id === TEMPLATE_IDS.test)).toBe(true);
  });
});

describe("N12 / N13 preferences", () => {
  it("the user sets and reads its own; upserts only the given entries", async () => {
    const user = await createUser();
    expect(await json(await call("GET", "/users/me/notifications/preferences", { token: user.token }))).toEqual([]);
    const res = await call("PUT", "/users/me/notifications/preferences", {
      token: user.token,
      body: { template_disabled_map: { [TEMPLATE_IDS.test]: true } },
    });
    expect(res.status).toBe(200);
    const prefs = await json<{ id: string; disabled: boolean; updated_at: string }[]>(res);
    expect(prefs).toEqual([{ id: TEMPLATE_IDS.test, disabled: true, updated_at: expect.any(String) }]);
    const both = await json<{ id: string; disabled: boolean }[]>(
      await call("PUT", "/users/me/notifications/preferences", {
        token: user.token,
        body: { template_disabled_map: { [TEMPLATE_IDS.custom]: false } },
      }),
    );
    expect(both.map((p) => [p.id, p.disabled]).sort()).toEqual(
      [
        [TEMPLATE_IDS.custom, false],
        [TEMPLATE_IDS.test, true],
      ].sort(),
    );
  });

  it("unknown template ids → 400 with one validation per key, nothing changed", async () => {
    const user = await createUser();
    const bad = [crypto.randomUUID(), "not-a-template"];
    const body = await expectError(
      await call("PUT", "/users/me/notifications/preferences", {
        token: user.token,
        body: { template_disabled_map: { [bad[0] ?? ""]: true, [bad[1] ?? ""]: false, [TEMPLATE_IDS.test]: true } },
      }),
      400,
      Messages.validation,
    );
    expect(body.validations?.map((v) => v.field).sort()).toEqual(bad.map((k) => `template_disabled_map.${k}`).sort());
    expect(await json(await call("GET", "/users/me/notifications/preferences", { token: user.token }))).toEqual([]);
  });

  it("mandatory templates cannot be disabled", async () => {
    const user = await createUser();
    for (const id of [TEMPLATE_IDS.oneTimePasscode, TEMPLATE_IDS.passwordChanged, TEMPLATE_IDS.loginMethodChanged]) {
      const body = await expectError(
        await call("PUT", "/users/me/notifications/preferences", { token: user.token, body: { template_disabled_map: { [id]: true } } }),
        400,
      );
      expect(body.validations?.[0]?.field).toBe(`template_disabled_map.${id}`);
    }
  });

  it("an owner may manage anyone's; a user-admin sees the user but gets 403; a member gets 404", async () => {
    const admin = await owner();
    const target = await createUser();
    const userAdmin = await createUser({ roles: ["user-admin"] });
    const member = await createUser();
    expect(
      (
        await call("PUT", `/users/${target.id}/notifications/preferences`, {
          token: admin.token,
          body: { template_disabled_map: { [TEMPLATE_IDS.test]: true } },
        })
      ).status,
    ).toBe(200);
    await expectError(await call("GET", `/users/${target.id}/notifications/preferences`, { token: userAdmin.token }), 403);
    await expectError(await call("GET", `/users/${target.id}/notifications/preferences`, { token: member.token }), 404);
    await expectError(
      await call("PUT", `/users/${target.id}/notifications/preferences`, { token: member.token, body: { template_disabled_map: {} } }),
      404,
    );
  });
});

describe('enqueue rules (docs/api.md, "Enqueue rules" and "Account events")', () => {
  it("a disabled template is inhibited for every method and never reaches the inbox", async () => {
    const user = await createUser();
    await call("PUT", "/users/me/notifications/preferences", { token: user.token, body: { template_disabled_map: { [TEMPLATE_IDS.custom]: true } } });
    expect((await call("POST", "/notifications/custom", { token: user.token, body: { content: { title: "muted" } } })).status).toBe(204);
    const rows = await messages(user.id);
    expect(rows.map((r) => [r.method, r.status]).sort()).toEqual([
      ["inbox", "inhibited"],
      ["smtp", "inhibited"],
    ]);
    expect(rows[0]?.status_reason).toMatch(/preference/);
    await new Promise((r) => setTimeout(r, 100));
    expect((await list(user.token)).notifications).toEqual([]);
  });

  it("account events notify owners and user-admins (not the actor) and the account itself", async () => {
    const admin = await owner();
    const userAdmin = await createUser({ roles: ["user-admin"] });
    const res = await call("POST", "/users", {
      token: admin.token,
      body: {
        email: `evt-${crypto.randomUUID().slice(0, 6)}@herald.test`,
        username: `evt-${crypto.randomUUID().slice(0, 6)}`,
        password: "a-fine-long-passphrase-9",
      },
    });
    const created = await json<{ id: string; username: string }>(res);
    await call("PUT", `/users/${created.id}/status/suspend`, { token: admin.token });
    const forAdmin = async () => (await messages(userAdmin.id)).map((r) => r.template_id);
    for (let i = 0; i < 100 && !(await forAdmin()).includes(TEMPLATE_IDS.userSuspended); i++) await new Promise((r) => setTimeout(r, 20));
    expect(await forAdmin()).toEqual(expect.arrayContaining([TEMPLATE_IDS.userCreated, TEMPLATE_IDS.userSuspended]));
    const own = async () => (await messages(created.id)).map((r) => r.template_id);
    for (let i = 0; i < 100 && !(await own()).includes(TEMPLATE_IDS.yourAccountSuspended); i++) await new Promise((r) => setTimeout(r, 20));
    expect(await own()).toContain(TEMPLATE_IDS.yourAccountSuspended);
    const actorRows = await env.DB.prepare("SELECT count(*) AS n FROM notification_messages WHERE user_id = ? AND created_by = ? AND template_id = ?")
      .bind(admin.id, admin.id, TEMPLATE_IDS.userSuspended)
      .first<{ n: number }>();
    expect(actorRows?.n).toBe(0);
  });
});

describe("GET /notifications/messages (admin view)", () => {
  it("owners filter deliveries by status, method, user and template; others get 403", async () => {
    const admin = await owner();
    const user = await createUser();
    await call("POST", "/notifications/custom", { token: user.token, body: { content: { title: "watch me" } } });
    const res = await call("GET", `/notifications/messages?user_id=${user.id}&method=inbox&template_id=${TEMPLATE_IDS.custom}`, {
      token: admin.token,
    });
    expect(res.status).toBe(200);
    const body = await json<{ messages: { method: string; user_id: string; attempts: number; status_reason: string }[]; count: number }>(res);
    expect(body.count).toBe(1);
    expect(body.messages[0]).toMatchObject({ method: "inbox", user_id: user.id });
    await expectError(await call("GET", "/notifications/messages", { token: user.token }), 403);
    await expectError(await call("GET", "/notifications/messages?status=lost", { token: admin.token }), 400);
  });
});

describe("no SMTP configured", () => {
  it("records the e-mail copy as a permanent failure at once instead of queueing it", async () => {
    const { createExecutionContext, waitOnExecutionContext } = await import("cloudflare:test");
    const user = await createUser();
    const ctx = createExecutionContext();
    const res = await fetchApp(
      new Request("http://localhost/api/v2/notifications/custom", {
        method: "POST",
        headers: { "Service-Session-Token": user.token, "Content-Type": "application/json" },
        body: JSON.stringify({ content: { title: "no smarthost" } }),
      }),
      { ...env, EMAIL_SMARTHOST: "" },
      ctx,
    );
    await waitOnExecutionContext(ctx);
    expect(res.status).toBe(204);
    const smtp = (await messages(user.id)).find((r) => r.method === "smtp");
    expect(smtp).toMatchObject({ status: "permanent_failure", status_reason: "e-mail delivery is not configured (EMAIL_SMARTHOST)" });
  });
});
