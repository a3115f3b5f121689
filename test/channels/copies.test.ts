import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ChannelMessages } from "../../src/channels/messages";
import { switchedOffReason } from "../../src/channels/model";
import type { MessageRow } from "../../src/db/schema";
import { uuidv7 } from "../../src/lib/crypto";
import { enqueueNotification } from "../../src/notifications/enqueue";
import { MANDATORY_TEMPLATE_IDS, TEMPLATE_IDS } from "../../src/notifications/templates";
import { ScheduleMessages } from "../../src/schedule/messages";
import { call, createUser, expectError, json, owner, type TestUser } from "../helpers";
import { waitFor } from "../peers";

// docs/channels.md: one copy per push subscription and per verified target, each governed by the user's channel
// switches; templates turned off, and the passcode, reach no browser or target; quiet hours hold these copies too.

const NOW = () => new Date().toISOString();

/** Stores a push subscription and a target for the user the way their endpoints do (only the columns that matter). */
async function reach(user: TestUser, { verified = true }: { verified?: boolean } = {}) {
  const push = [uuidv7(), uuidv7()];
  for (const id of push) {
    await env.DB.prepare("INSERT INTO push_subscriptions (id, user_id, name, endpoint, p256dh, auth, created_at) VALUES (?, ?, ?, ?, 'k', 'a', ?)")
      .bind(id, user.id, `Browser ${id.slice(-4)}`, `https://fcm.googleapis.com/fcm/send/${id}`, NOW())
      .run();
  }
  const target = uuidv7();
  const unverified = uuidv7();
  for (const [id, at] of [
    [target, verified ? NOW() : null],
    [unverified, null],
  ] as const) {
    await env.DB.prepare(
      "INSERT INTO notification_targets (id, user_id, kind, name, url_sealed, url_origin, verified_at, created_at) VALUES (?, ?, 'slack', 'Team', 'sealed', 'https://hooks.slack.com', ?, ?)",
    )
      .bind(id, user.id, at, NOW())
      .run();
  }
  return { push, target, unverified };
}

/** Quiet hours (UTC) that began an hour ago and end in an hour, to the minute; returns the end. */
async function quietNow(user: TestUser): Promise<number> {
  const now = Date.now();
  const clock = (ms: number) => new Date(ms).toISOString().slice(11, 16);
  const end = Math.floor((now + 3_600_000) / 60_000) * 60_000;
  const res = await call("PUT", "/users/me/notifications/schedule", {
    token: user.token,
    body: { timezone: "UTC", quiet_hours: [{ start: clock(now - 3_600_000), end: clock(end) }], digest: "off" },
  });
  expect(res.status).toBe(200);
  return end;
}

function enqueue(user: TestUser, templateId: string = TEMPLATE_IDS.test): Promise<MessageRow[]> {
  return enqueueNotification(env, { waitUntil: () => undefined }, { userId: user.id, templateId, createdBy: "test", labels: {} });
}

const copies = (rows: MessageRow[]) =>
  rows
    .filter((r) => r.method === "push" || r.method === "target")
    .map((r) => ({ method: r.method, destination: r.destination, status: r.status, statusReason: r.statusReason }));

describe('docs/channels.md, "One copy per destination"', () => {
  it("a notification gets a copy per push subscription and per verified target, and none for an unverified one", async () => {
    const user = await createUser();
    const { push, target } = await reach(user);
    const rows = await enqueue(user);
    expect(rows.map((r) => r.method).sort()).toEqual(["inbox", "push", "push", "smtp", "target"]);
    expect(copies(rows)).toEqual(
      expect.arrayContaining([
        { method: "push", destination: push[0], status: "pending", statusReason: null },
        { method: "push", destination: push[1], status: "pending", statusReason: null },
        { method: "target", destination: target, status: "pending", statusReason: null },
      ]),
    );
    // All copies of one notification share its id: read-aware e-mail and quiet hours ask the inbox about that item.
    expect(new Set(rows.map((r) => r.notificationId)).size).toBe(1);
  });

  it("the passcode never goes to a browser or a target", async () => {
    const user = await createUser();
    await reach(user);
    const rows = await enqueueNotification(
      env,
      { waitUntil: () => undefined },
      { userId: user.id, templateId: TEMPLATE_IDS.oneTimePasscode, createdBy: "system", secretLabels: { code: "123456" } },
    );
    expect(copies(rows)).toEqual([]);
  });

  it("a template the user turned off sends nothing anywhere", async () => {
    const user = await createUser();
    await reach(user);
    const put = await call("PUT", "/users/me/notifications/preferences", {
      token: user.token,
      body: { template_disabled_map: { [TEMPLATE_IDS.test]: true } },
    });
    expect(put.status).toBe(200);
    const rows = await enqueue(user);
    expect(copies(rows)).toEqual([]);
    expect(rows.every((r) => r.status === "inhibited")).toBe(true);
  });

  it("quiet hours hold push and target copies as they hold e-mail", async () => {
    const user = await createUser();
    await reach(user);
    const end = await quietNow(user);
    const rows = await enqueue(user);
    for (const row of rows.filter((r) => r.method !== "inbox")) {
      expect(row, row.method).toMatchObject({
        status: "pending",
        statusReason: ScheduleMessages.heldQuiet,
        nextRetryAfter: new Date(end).toISOString(),
      });
    }
  });

  it("quiet hours hold a broadcast's e-mail, push and target copies too", async () => {
    const admin = await owner();
    const user = await createUser();
    await reach(user);
    const end = await quietNow(user);
    const res = await call("POST", "/notifications/broadcasts", {
      token: admin.token,
      body: { audience: { user_ids: [user.id] }, content: { title: "Held for the night", message: "Hello" } },
    });
    expect(res.status).toBe(202);
    const rows = await waitFor(async () => {
      const { results } = await env.DB.prepare(
        "SELECT method, status, status_reason, next_retry_after FROM notification_messages WHERE user_id = ? AND method IN ('smtp', 'push', 'target')",
      )
        .bind(user.id)
        .all<{ method: string; status: string; status_reason: string; next_retry_after: string }>();
      return results.length >= 4 ? results : undefined;
    });
    for (const row of rows) {
      expect(row, row.method).toMatchObject({
        status: "pending",
        status_reason: ScheduleMessages.heldQuiet,
        next_retry_after: new Date(end).toISOString(),
      });
    }
  });

  it("a broadcast reaches each subscription and verified target once", async () => {
    const admin = await owner();
    const user = await createUser();
    const { push, target } = await reach(user);
    const res = await call("POST", "/notifications/broadcasts", {
      token: admin.token,
      body: { audience: { user_ids: [user.id] }, content: { title: "To every channel", message: "Hello" } },
    });
    expect(res.status).toBe(202);
    const rows = await waitFor(async () => {
      const { results } = await env.DB.prepare(
        "SELECT method, destination FROM notification_messages WHERE user_id = ? AND method IN ('push', 'target')",
      )
        .bind(user.id)
        .all<{ method: string; destination: string }>();
      return results.length >= 3 ? results : undefined;
    });
    expect(rows.map((r) => r.destination).sort()).toEqual([...push, target].sort());
  });
});

describe('docs/channels.md, "Channel preferences"', () => {
  it("a switched-off channel's copies are inhibited with the reason; the others still go", async () => {
    const user = await createUser();
    const { target } = await reach(user);
    const put = await call("PUT", "/users/me/notifications/channels", {
      token: user.token,
      body: [
        { template_id: TEMPLATE_IDS.test, channel: "push", enabled: false },
        { template_id: TEMPLATE_IDS.test, channel: "email", enabled: false },
      ],
    });
    expect(put.status).toBe(200);
    const rows = await enqueue(user);
    expect(rows.find((r) => r.method === "smtp")).toMatchObject({ status: "inhibited", statusReason: switchedOffReason("email") });
    expect(rows.filter((r) => r.method === "push").map((r) => r.status)).toEqual(["inhibited", "inhibited"]);
    expect(rows.find((r) => r.method === "target")).toMatchObject({ destination: target, status: "pending" });
    expect(rows.find((r) => r.method === "inbox")?.status).not.toBe("inhibited");
  });

  it("mandatory templates ignore the switches, cannot be switched off, and never go to the user's targets", async () => {
    const user = await createUser();
    await reach(user);
    await call("PUT", "/users/me/notifications/channels", {
      token: user.token,
      body: [{ template_id: TEMPLATE_IDS.test, channel: "push", enabled: false }],
    });
    const refused = await call("PUT", "/users/me/notifications/channels", {
      token: user.token,
      body: [{ template_id: TEMPLATE_IDS.passwordChanged, channel: "push", enabled: false }],
    });
    const error = await expectError(refused, 400);
    expect(error.validations).toEqual([{ field: "0.enabled", detail: expect.stringContaining("mandatory") }]);
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
    // Both browsers, locked on; no target: a security notice's "This wasn't me" is for the account holder alone.
    expect(copies(rows).map((c) => [c.method, c.status])).toEqual([
      ["push", "pending"],
      ["push", "pending"],
    ]);
  });

  it("GET lists every template × channel, e-mail, push and each target; PUT answers the same list", async () => {
    const user = await createUser();
    const { target, unverified } = await reach(user);
    const list = await json<{ template_id: string; channel: string; enabled: boolean }[]>(
      await call("GET", `/users/${user.id}/notifications/channels`, { token: user.token }),
    );
    const channels = new Set(list.map((e) => e.channel));
    expect(channels).toEqual(new Set(["email", "push", `target:${target}`, `target:${unverified}`]));
    expect(list.every((e) => e.enabled)).toBe(true);
    // Each template on each channel it can reach: the passcode by e-mail only, a security notice on no target.
    const all = [
      ...(await json<{ id: string }[]>(await call("GET", "/notifications/templates/system", { token: user.token }))),
      ...(await json<{ id: string }[]>(await call("GET", "/notifications/templates/custom", { token: user.token }))),
    ];
    const reachable = (id: string) => (id === TEMPLATE_IDS.oneTimePasscode ? 1 : MANDATORY_TEMPLATE_IDS.includes(id) ? 2 : 4);
    expect(list.length).toBe(all.reduce((n, t) => n + reachable(t.id), 0));
    expect(list.filter((e) => e.template_id === TEMPLATE_IDS.oneTimePasscode).map((e) => e.channel)).toEqual(["email"]);
    expect(list.filter((e) => e.template_id === TEMPLATE_IDS.passwordChanged).map((e) => e.channel)).toEqual(["email", "push"]);

    const put = await json<typeof list>(
      await call("PUT", `/users/${user.id}/notifications/channels`, {
        token: user.token,
        body: [{ template_id: TEMPLATE_IDS.test, channel: `target:${target.toUpperCase()}`, enabled: false }],
      }),
    );
    expect(put.length).toBe(list.length);
    expect(put.find((e) => e.template_id === TEMPLATE_IDS.test && e.channel === `target:${target}`)?.enabled).toBe(false);
    expect(put.filter((e) => !e.enabled)).toHaveLength(1);
  });

  it("every bad entry is reported at once and nothing changes", async () => {
    const user = await createUser();
    const other = await createUser();
    const { target: theirs } = await reach(other);
    const res = await call("PUT", "/users/me/notifications/channels", {
      token: user.token,
      body: [
        { template_id: uuidv7(), channel: "push", enabled: false },
        { template_id: TEMPLATE_IDS.test, channel: `target:${theirs}`, enabled: false },
        { template_id: TEMPLATE_IDS.test, channel: "email", enabled: false },
        { template_id: TEMPLATE_IDS.test, channel: "email", enabled: true },
      ],
    });
    const error = await expectError(res, 400);
    expect(error.validations).toEqual([
      { field: "0.template_id", detail: ChannelMessages.unknownTemplate },
      { field: "1.channel", detail: ChannelMessages.unknownTarget },
      { field: "3", detail: ChannelMessages.givenTwice },
    ]);
    const { results } = await env.DB.prepare("SELECT * FROM channel_preferences WHERE user_id = ?").bind(user.id).all();
    expect(results).toEqual([]);
  });

  it("an owner may read and change another user's switches; a user-admin may not; a member cannot even see the user", async () => {
    const admin = await owner();
    const user = await createUser();
    const stranger = await createUser();
    const userAdmin = await createUser({ roles: ["user-admin"] });
    const body = [{ template_id: TEMPLATE_IDS.test, channel: "push", enabled: false }];
    expect((await call("PUT", `/users/${user.id}/notifications/channels`, { token: admin.token, body })).status).toBe(200);
    const path = `/users/${user.id}/notifications/channels`;
    expect((await expectError(await call("GET", path, { token: userAdmin.token }), 403)).detail).toBe(ChannelMessages.forbidden("read"));
    expect((await expectError(await call("PUT", path, { token: userAdmin.token, body }), 403)).detail).toBe(ChannelMessages.forbidden("update"));
    await expectError(await call("GET", path, { token: stranger.token }), 404);
    await expectError(await call("PUT", path, { token: stranger.token, body }), 404);
  });
});
