import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { Messages } from "../../src/http/errors";
import { NotificationsMessages } from "../../src/notifications/messages";
import { TEMPLATE_IDS } from "../../src/notifications/templates";
import { call, createUser, expectError, json, owner } from "../helpers";

const TEST = TEMPLATE_IDS.test;
const methodOf = async (token: string, id: string) => {
  const templates = await json<{ id: string; method: string }[]>(await call("GET", "/notifications/templates/system", { token }));
  return templates.find((t) => t.id === id)?.method;
};

describe('PUT /notifications/templates/{id}/method (docs/api.md, "Notifications")', () => {
  it("sets the template's method (200), answers 304 when unchanged, audits the change, and deliveries follow it", async () => {
    const { token } = await owner();
    const set = await call("PUT", `/notifications/templates/${TEST}/method`, { token, body: { method: "webhook" } });
    expect(set.status).toBe(200);
    expect(await json(set)).toEqual({ message: NotificationsMessages.templateMethodUpdated });
    expect(await methodOf(token, TEST)).toBe("webhook");
    expect((await call("PUT", `/notifications/templates/${TEST}/method`, { token, body: { method: "webhook" } })).status).toBe(304);

    const audit = await env.DB.prepare("SELECT action, diff FROM audit_logs WHERE resource_id = ? AND resource_type = 'notification_template'")
      .bind(TEST)
      .all<{ action: string; diff: string }>();
    expect(audit.results.map((r) => [r.action, JSON.parse(r.diff)])).toEqual([["update", { method: { old: "", new: "webhook" } }]]);

    // The test notification now goes by webhook, whatever the deployment's default.
    expect((await call("POST", "/notifications/test", { token })).status).toBe(200);
    const log = await json<{ messages: { method: string }[] }>(await call("GET", `/notifications/messages?template_id=${TEST}`, { token }));
    expect(log.messages.map((m) => m.method).sort()).toEqual(["inbox", "webhook"]);

    // "" goes back to the deployment's default.
    expect((await call("PUT", `/notifications/templates/${TEST}/method`, { token, body: { method: "" } })).status).toBe(200);
    expect(await methodOf(token, TEST)).toBe("");
  });

  it("refuses an unknown method with 400 on method, an unknown template with 404, and anyone but an owner with 403", async () => {
    const { token } = await owner();
    const bad = await expectError(
      await call("PUT", `/notifications/templates/${TEST}/method`, { token, body: { method: "inbox" } }),
      400,
      NotificationsMessages.invalidTemplateMethod,
    );
    expect(bad.validations?.map((v) => v.field)).toEqual(["method"]);
    await expectError(await call("PUT", `/notifications/templates/${TEST}/method`, { token, body: {} }), 400);
    await expectError(
      await call("PUT", "/notifications/templates/00000000-0000-4000-8000-000000000000/method", { token, body: { method: "smtp" } }),
      404,
      Messages.notFoundOrNoAccess,
    );
    for (const roles of [[], ["user-admin"], ["auditor"]]) {
      const user = await createUser({ roles });
      await expectError(await call("PUT", `/notifications/templates/${TEST}/method`, { token: user.token, body: { method: "smtp" } }), 403);
    }
    expect(await methodOf(token, TEST)).toBe("");
  });
});
