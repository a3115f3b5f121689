import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ScheduleMessages } from "../../src/schedule/messages";
import { call, createUser, expectError, json, owner } from "../helpers";

// docs/schedule.md, "The schedule": GET / PUT /users/{user}/notifications/schedule.

const SCHEDULE = "/notifications/schedule";

async function auditRows(userId: string) {
  const { results } = await env.DB.prepare(
    "SELECT action, resource_type, diff FROM audit_logs WHERE resource_id = ? AND resource_type = 'notification_schedule'",
  )
    .bind(userId)
    .all<{ action: string; resource_type: string; diff: string }>();
  return results;
}

async function storedRow(userId: string) {
  return env.DB.prepare("SELECT * FROM notification_schedules WHERE user_id = ?").bind(userId).first();
}

describe('the schedule endpoint (docs/schedule.md, "The schedule")', () => {
  it("answers the defaults until the user sets one", async () => {
    const user = await createUser();
    const res = await call("GET", `/users/me${SCHEDULE}`, { token: user.token });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ timezone: "UTC", quiet_hours: [], digest: "off", updated_at: null });
  });

  it("stores a whole schedule, the zone in its canonical spelling and days in week order, audited", async () => {
    const user = await createUser();
    const body = {
      timezone: "europe/berlin",
      quiet_hours: [
        { days: ["sun", "mon", "tue"], start: "22:00", end: "07:00" },
        { start: "12:00", end: "13:00" },
      ],
      digest: "daily@08:30",
    };
    const res = await call("PUT", `/users/${user.id}${SCHEDULE}`, { token: user.token, body });
    expect(res.status).toBe(200);
    const stored = await json<Record<string, unknown>>(res);
    expect(stored).toMatchObject({
      timezone: "Europe/Berlin",
      quiet_hours: [
        { days: ["mon", "tue", "sun"], start: "22:00", end: "07:00" },
        { days: ["mon", "tue", "wed", "thu", "fri", "sat", "sun"], start: "12:00", end: "13:00" },
      ],
      digest: "daily@08:30",
    });
    expect(await json(await call("GET", `/users/me${SCHEDULE}`, { token: user.token }))).toEqual(stored);
    const audits = await auditRows(user.id);
    expect(audits).toHaveLength(1);
    expect(JSON.parse(audits[0]?.diff ?? "{}")).toMatchObject({ timezone: "Europe/Berlin", digest: "daily@08:30" });

    // A PUT replaces the whole schedule.
    const cleared = await json(
      await call("PUT", `/users/me${SCHEDULE}`, { token: user.token, body: { timezone: "UTC", quiet_hours: [], digest: "off" } }),
    );
    expect(cleared).toMatchObject({ timezone: "UTC", quiet_hours: [], digest: "off" });
  });

  it("accepts every digest form: off, 1m to 24h, daily@HH:MM", async () => {
    const user = await createUser();
    for (const digest of ["off", "1m", "90m", "1h30m", "24h", "daily@00:00", "daily@23:59"]) {
      const res = await call("PUT", `/users/me${SCHEDULE}`, { token: user.token, body: { timezone: "UTC", quiet_hours: [], digest } });
      expect(res.status, digest).toBe(200);
      expect((await json<{ digest: string }>(res)).digest).toBe(digest);
    }
  });

  it("an owner reads and sets another user's schedule; another member gets 403", async () => {
    const [user, other] = [await createUser(), await createUser()];
    const admin = await owner();
    const set = await call("PUT", `/users/${user.id}${SCHEDULE}`, {
      token: admin.token,
      body: { timezone: "America/New_York", quiet_hours: [], digest: "off" },
    });
    expect(set.status).toBe(200);
    expect((await json<{ timezone: string }>(await call("GET", `/users/${user.id}${SCHEDULE}`, { token: admin.token }))).timezone).toBe(
      "America/New_York",
    );
    const refused = await call("PUT", `/users/${user.id}${SCHEDULE}`, {
      token: other.token,
      body: { timezone: "UTC", quiet_hours: [], digest: "off" },
    });
    expect(refused.status).toBeGreaterThanOrEqual(403);
    expect(refused.status).toBeLessThanOrEqual(404);
    expect((await storedRow(user.id))?.timezone).toBe("America/New_York");
  });
});

describe('bad input (docs/schedule.md, "The schedule"; docs/api.md, "Conventions")', () => {
  const cases: [string, unknown, string, string][] = [
    ["an unknown zone", { timezone: "Mars/Olympus_Mons" }, "timezone", ScheduleMessages.unknownZone],
    ["an offset for a zone", { timezone: "+01:00" }, "timezone", ScheduleMessages.unknownZone],
    ["25:00", { quiet_hours: [{ start: "25:00", end: "07:00" }] }, "quiet_hours.0.start", ScheduleMessages.badTime],
    ["7:00 without its zero", { quiet_hours: [{ start: "22:00", end: "7:00" }] }, "quiet_hours.0.end", ScheduleMessages.badTime],
    ["mon-fri for days", { quiet_hours: [{ days: "mon-fri", start: "22:00", end: "07:00" }] }, "quiet_hours.0.days", ""],
    ["an unknown day", { quiet_hours: [{ days: ["monday"], start: "22:00", end: "07:00" }] }, "quiet_hours.0.days.0", ScheduleMessages.badDay],
    ["a day twice", { quiet_hours: [{ days: ["mon", "mon"], start: "22:00", end: "07:00" }] }, "quiet_hours.0.days", ScheduleMessages.dayTwice],
    ["no days", { quiet_hours: [{ days: [], start: "22:00", end: "07:00" }] }, "quiet_hours.0.days", ScheduleMessages.noDays],
    ["8 ranges", { quiet_hours: Array.from({ length: 8 }, () => ({ start: "22:00", end: "07:00" })) }, "quiet_hours", ScheduleMessages.tooManyRanges],
    ['digest "0m"', { digest: "0m" }, "digest", ScheduleMessages.badDigest],
    ['digest "30s"', { digest: "30s" }, "digest", ScheduleMessages.badDigest],
    ['digest "25h"', { digest: "25h" }, "digest", ScheduleMessages.badDigest],
    ['digest "60" (seconds without a unit)', { digest: "60" }, "digest", ScheduleMessages.badDigest],
    ['digest "daily@24:00"', { digest: "daily@24:00" }, "digest", ScheduleMessages.badDigest],
    ["an unknown key", { timezone: "UTC", quiet: [] }, "quiet", ""],
  ];
  it.each(cases)("%s → 400 naming the field, nothing stored", async (_name, fields, field, detail) => {
    const user = await createUser();
    const body = { timezone: "UTC", quiet_hours: [], digest: "off", ...(fields as object) };
    const body400 = await expectError(await call("PUT", `/users/me${SCHEDULE}`, { token: user.token, body }), 400);
    const validation = body400.validations?.find((v) => v.field === field);
    expect(validation, JSON.stringify(body400.validations)).toBeDefined();
    if (detail) expect(validation?.detail).toBe(detail);
    expect(await storedRow(user.id)).toBeNull();
    expect(await auditRows(user.id)).toEqual([]);
  });
});
