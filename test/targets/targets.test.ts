import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { MfaMessages } from "../../src/auth/mfa/messages";
import { Messages } from "../../src/http/errors";
import { TargetMessages } from "../../src/targets/messages";
import { TARGETS_MAX_PER_USER } from "../../src/targets/schemas";
import { call, createUser, json, owner } from "../helpers";
import { addTarget, type CreatedTarget, standInPath, standInUrl } from "./stand-ins";

// Adding, listing and removing a user's own targets (docs/targets.md; docs/api.md, "Notification targets").

const add = (token: string, kind = "slack", name = "Target") =>
  call("POST", "/users/me/notification-targets", { token, body: { kind, url: standInUrl(standInPath("slack")), name } });
const list = async (token: string) => json<CreatedTarget[]>(await call("GET", "/users/me/notification-targets", { token }));

describe("docs/targets.md", () => {
  it("the list shows each target's origin, never its URL or secret, newest first", async () => {
    const user = await createUser();
    const first = await addTarget(user.token, "webhook", "Mine");
    const second = await addTarget(user.token, "discord", "Team");
    const res = await call("GET", "/users/me/notification-targets", { token: user.token });
    expect(res.status).toBe(200);
    const text = await res.clone().text();
    for (const { path, target } of [first, second]) {
      expect(text).not.toContain(path);
      expect(text).not.toContain(target.secret ?? "no secret");
    }
    expect((await json<CreatedTarget[]>(res)).map((t) => [t.name, t.url_origin, t.verified])).toEqual([
      ["Team", env.TARGETS_URL, false],
      ["Mine", env.TARGETS_URL, false],
    ]);
  });

  it(`a user holds at most ${TARGETS_MAX_PER_USER} targets, even when the last places are asked for at once`, async () => {
    const user = await createUser();
    // All but two places taken (straight into D1: through the API, adding is limited to 10 a minute).
    for (let i = 0; i < TARGETS_MAX_PER_USER - 2; i++) {
      await env.DB.prepare(
        "INSERT INTO notification_targets (id, user_id, kind, name, url_sealed, url_origin, created_at) VALUES (?, ?, 'slack', 'Held', 'x.y', ?, ?)",
      )
        .bind(crypto.randomUUID(), user.id, env.TARGETS_URL, new Date().toISOString())
        .run();
    }
    // Two places left and three requests at once: the insert counts, so exactly two get one.
    const racing = await Promise.all([add(user.token), add(user.token), add(user.token)]);
    expect(racing.map((r) => r.status).sort()).toEqual([201, 201, 400]);
    const refused = racing.find((r) => r.status === 400);
    expect(await json(refused as Response)).toEqual({
      message: TargetMessages.tooMany,
      detail: TargetMessages.tooManyDetail(TARGETS_MAX_PER_USER),
    });
    expect(await list(user.token)).toHaveLength(TARGETS_MAX_PER_USER);
    // The refused one left nothing behind: no audit entry, no verification message.
    const audited = await env.DB.prepare("SELECT count(*) AS n FROM audit_logs WHERE user_id = ? AND resource_type = 'notification_target'")
      .bind(user.id)
      .first<{ n: number }>();
    expect(audited?.n).toBe(2);
    const messages = await env.DB.prepare("SELECT count(*) AS n FROM notification_messages WHERE user_id = ? AND method = 'target'")
      .bind(user.id)
      .first<{ n: number }>();
    expect(messages?.n).toBe(2);
  });

  it("removing a target: 204, audited, its channel switches go with it, and a second removal is a 404", async () => {
    const user = await createUser();
    const { target } = await addTarget(user.token, "teams");
    await env.DB.prepare("INSERT INTO channel_preferences (user_id, template_id, channel, enabled, updated_at) VALUES (?, ?, ?, 0, ?)")
      .bind(user.id, crypto.randomUUID(), `target:${target.id}`, new Date().toISOString())
      .run();
    expect((await call("DELETE", `/users/me/notification-targets/${target.id.toUpperCase()}`, { token: user.token })).status).toBe(204);
    expect(await list(user.token)).toEqual([]);
    const switches = await env.DB.prepare("SELECT count(*) AS n FROM channel_preferences WHERE user_id = ?").bind(user.id).first<{ n: number }>();
    expect(switches?.n).toBe(0);
    const audit = await env.DB.prepare("SELECT action, diff FROM audit_logs WHERE resource_id = ? ORDER BY time, rowid")
      .bind(target.id)
      .all<{ action: string; diff: string }>();
    expect(audit.results.map((r) => r.action)).toEqual(["create", "delete"]);
    // The audit log names the target, never its URL.
    expect(audit.results.map((r) => r.diff).join()).not.toContain("/teams/");
    const again = await call("DELETE", `/users/me/notification-targets/${target.id}`, { token: user.token });
    expect(again.status).toBe(404);
    expect((await json(again)).message).toBe(Messages.notFoundOrNoAccess);
  });

  it("another user's target is as unknown as one that never was", async () => {
    const [holder, other] = await Promise.all([createUser(), createUser()]);
    const { target } = await addTarget(holder.token, "slack");
    for (const [method, suffix, body] of [
      ["DELETE", "", undefined],
      ["POST", "/verify", { code: "123456" }],
    ] as const) {
      const res = await call(method, `/users/me/notification-targets/${target.id}${suffix}`, { token: other.token, body });
      expect(res.status).toBe(404);
    }
    expect(await list(holder.token)).toHaveLength(1);
  });

  it("only the user themself: an owner may not add, list or remove another user's targets", async () => {
    const admin = await owner();
    const user = await createUser();
    const { target } = await addTarget(user.token, "slack");
    for (const [method, path] of [
      ["GET", `/users/${user.id}/notification-targets`],
      ["DELETE", `/users/${user.id}/notification-targets/${target.id}`],
    ] as const) {
      const res = await call(method, path, { token: admin.token });
      expect(res.status).toBe(403);
      expect((await json(res)).detail).toBe(TargetMessages.onlySelf);
    }
  });

  it("adding a target with a session asks for a recent sign-in; an API token does not", async () => {
    const user = await createUser();
    const tokenRes = await call("POST", "/users/me/keys/tokens", {
      token: user.token,
      body: { token_name: "ci", scopes: ["notification_target:create"] },
    });
    expect(tokenRes.status).toBe(201);
    const apiToken = (await json<{ key: string }>(tokenRes)).key;
    // The session signed in two days ago, past STEP_UP_MAX_AGE.
    await env.DB.prepare("UPDATE api_keys SET auth_time = ? WHERE user_id = ?")
      .bind(new Date(Date.now() - 2 * 86_400_000).toISOString(), user.id)
      .run();
    const res = await add(user.token);
    expect(res.status).toBe(403);
    expect(await json(res)).toEqual({ message: MfaMessages.confirmItIsYou, detail: MfaMessages.stepUpRequired });
    expect(await list(user.token)).toEqual([]);
    const withToken = await add(apiToken);
    expect(withToken.status, await withToken.clone().text()).toBe(201);
  });

  it("a deleted account's targets are removed with it: their URLs are credentials", async () => {
    const admin = await owner();
    const user = await createUser();
    await addTarget(user.token, "webhook");
    expect((await call("DELETE", `/users/${user.id}`, { token: admin.token })).status).toBe(200);
    const left = await env.DB.prepare("SELECT count(*) AS n FROM notification_targets WHERE user_id = ?").bind(user.id).first<{ n: number }>();
    expect(left?.n).toBe(0);
  });
});
