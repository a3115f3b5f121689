import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ErrorBodyLimits } from "../../src/http/errors";
import { TEMPLATE_IDS } from "../../src/notifications/templates";
import { call, createUser, json, owner } from "../helpers";
import { deliver, list } from "../inbox/inbox-helpers";

// No input size that validation accepts may reach a database limit (D1 and Durable Object SQLite bind at most 100
// parameters per statement): each list is tried at its maximum, and must answer like any other request.

/** Inserts `n` users straight into D1 (faster than the API for volume); returns their ids. */
async function insertUsers(n: number): Promise<string[]> {
  const now = new Date().toISOString();
  const ids = Array.from({ length: n }, () => crypto.randomUUID());
  await env.DB.batch(
    ids.map((id) =>
      env.DB.prepare(
        "INSERT INTO users (id, email, username, name, login_type, status, roles, is_system, deleted, created_at, updated_at) VALUES (?, ?, ?, '', 'password', 'active', '[]', 0, 0, ?, ?)",
      ).bind(id, `bulk-${id}@herald.test`, `bulk-${id}`, now, now),
    ),
  );
  return ids;
}

describe("lists at their maximum never reach a database limit", () => {
  it("POST /authcheck: 100 checks naming 100 distinct users", async () => {
    const admin = await owner();
    const ids = await insertUsers(100);
    const checks = Object.fromEntries(ids.map((id, i) => [`c${i}`, { action: "read", object: { resource_type: "user", resource_id: id } }]));
    const res = await call("POST", "/authcheck", { token: admin.token, body: { checks } });
    expect(res.status, await res.clone().text()).toBe(200);
    expect(Object.values(await json<Record<string, boolean>>(res))).toEqual(ids.map(() => true));
  });

  it("POST /authcheck: 100 checks naming 100 of the caller's inbox notifications", async () => {
    const user = await createUser();
    const ids: string[] = [];
    for (let i = 0; i < 100; i++) ids.push((await deliver(user.id)).id);
    const checks = Object.fromEntries(
      ids.map((id, i) => [`n${i}`, { action: "read", object: { resource_type: "inbox_notification", resource_id: id } }]),
    );
    const res = await call("POST", "/authcheck", { token: user.token, body: { checks } });
    expect(res.status, await res.clone().text()).toBe(200);
    expect(Object.values(await json<Record<string, boolean>>(res)).every(Boolean)).toBe(true);
  });

  it("PUT preferences: 200 keys (the maximum) are all checked — a 400 counting every unknown one, never a 500", async () => {
    const user = await createUser();
    const known = [TEMPLATE_IDS.test, TEMPLATE_IDS.custom, TEMPLATE_IDS.userCreated];
    const unknown = Array.from({ length: 200 - known.length }, () => crypto.randomUUID());
    const map = Object.fromEntries([...known, ...unknown].map((id) => [id, true]));
    const res = await call("PUT", `/users/${user.id}/notifications/preferences`, { token: user.token, body: { template_disabled_map: map } });
    expect(res.status, await res.clone().text()).toBe(400);
    // Ten are listed, and the detail counts them all (docs/api.md, "Unknown keys and long validation lists").
    const body = await json<{ detail: string; validations: { field: string }[] }>(res);
    const unknownFields = new Set(unknown.map((id) => `template_disabled_map.${id}`));
    expect(body.validations).toHaveLength(ErrorBodyLimits.validations);
    for (const v of body.validations) expect(unknownFields.has(v.field), v.field).toBe(true);
    expect(body.detail).toBe(`${ErrorBodyLimits.validations} of ${unknown.length} validations are listed.`);
    const ok = await call("PUT", `/users/${user.id}/notifications/preferences`, {
      token: user.token,
      body: { template_disabled_map: Object.fromEntries(known.map((id) => [id, true])) },
    });
    expect(ok.status).toBe(200);
  });

  it("GET /users?limit=100: a full page with its organizations", async () => {
    const admin = await owner();
    await insertUsers(100);
    const res = await call("GET", "/users?limit=100", { token: admin.token });
    expect(res.status, await res.clone().text()).toBe(200);
    expect((await json<{ users: unknown[] }>(res)).users).toHaveLength(100);
  });

  it("GET /notifications/inbox: 16 targets, 16 templates and a cursor", async () => {
    const user = await createUser();
    const targets = Array.from({ length: 16 }, () => crypto.randomUUID());
    const templates = [TEMPLATE_IDS.test, ...Array.from({ length: 15 }, () => crypto.randomUUID())];
    const older = await deliver(user.id, { targets, templateId: TEMPLATE_IDS.test });
    const newer = await deliver(user.id, { targets, templateId: TEMPLATE_IDS.test });
    const page = await list(user.token, `?targets=${targets.join(",")}&templates=${templates.join(",")}&starting_before=${newer.id}`);
    expect(page.notifications.map((n) => n.id)).toEqual([older.id]);
  });
});
