import { eq } from "drizzle-orm";
import { parseDuration } from "../config/duration";
import type { Database } from "../db/client";
import { notificationSchedules } from "../db/schema";
import { DEFAULT_SCHEDULE, type DigestSetting, type Schedule, WEEKDAYS, type Weekday } from "./model";
import { DAILY_DIGEST, minutesOf, type ScheduleBody, type ScheduleJson } from "./schemas";
import { canonicalZone } from "./zone";

export type ScheduleRow = typeof notificationSchedules.$inferSelect;

/** The query the enqueue batches with its other reads (src/notifications/enqueue.ts): one row or none. */
export function scheduleQuery(db: Database, userId: string) {
  return db.select().from(notificationSchedules).where(eq(notificationSchedules.userId, userId));
}

function digestOf(text: string): DigestSetting {
  if (text === "off") return { kind: "off" };
  const daily = DAILY_DIGEST.exec(text);
  if (daily) return { kind: "daily", minutes: minutesOf(daily[1] ?? "") };
  const ms = parseDuration(text);
  return ms === undefined ? { kind: "off" } : { kind: "every", ms };
}

/** The stored row as the code uses it; no row is the default schedule. */
export function scheduleOf(row: ScheduleRow | undefined): Schedule {
  if (!row) return DEFAULT_SCHEDULE;
  return {
    timezone: row.timezone,
    quietHours: row.quietHours.map((r) => ({
      days: r.days.filter((d): d is Weekday => (WEEKDAYS as readonly string[]).includes(d)),
      start: minutesOf(r.start),
      end: minutesOf(r.end),
    })),
    digest: digestOf(row.digest),
  };
}

/** The row a validated body is stored as: the zone in its canonical spelling, days in week order. */
export function rowOf(userId: string, body: ScheduleBody, updatedAt: string): ScheduleRow {
  const order = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];
  return {
    userId,
    timezone: canonicalZone(body.timezone) ?? "UTC",
    quietHours: body.quiet_hours.map((r) => ({ days: [...r.days].sort((a, b) => order.indexOf(a) - order.indexOf(b)), start: r.start, end: r.end })),
    digest: body.digest.trim(),
    updatedAt,
  };
}

export function scheduleJson(row: ScheduleRow | undefined): ScheduleJson {
  if (!row) return { timezone: DEFAULT_SCHEDULE.timezone, quiet_hours: [], digest: "off", updated_at: null };
  return {
    timezone: row.timezone,
    quiet_hours: row.quietHours.map((r) => ({
      days: r.days.filter((d): d is Weekday => (WEEKDAYS as readonly string[]).includes(d)),
      start: r.start,
      end: r.end,
    })),
    digest: row.digest,
    updated_at: row.updatedAt,
  };
}
