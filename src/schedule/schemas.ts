import * as z from "zod";
import { parseDuration } from "../config/duration";
import { described, exemplified, named } from "../openapi/registry";
import { ScheduleMessages } from "./messages";
import { WEEKDAYS } from "./model";
import { canonicalZone } from "./zone";

/** At most one range a day (docs/schedule.md, "The schedule"). */
const QUIET_RANGES_MAX = 7;
/** Digest windows: from a minute to a day (docs/schedule.md, "Digests"). */
const DIGEST_MIN_MS = 60_000;
const DIGEST_MAX_MS = 24 * 60 * 60 * 1000;

const CLOCK = /^([01]\d|2[0-3]):([0-5]\d)$/;
export const DAILY_DIGEST = /^daily@(([01]\d|2[0-3]):([0-5]\d))$/;

/** "07:30" → 450; the text has passed `clockTime`. */
export function minutesOf(text: string): number {
  const match = CLOCK.exec(text);
  return match ? Number(match[1]) * 60 + Number(match[2]) : 0;
}

const clockTime = described(
  'A wall-clock time in the schedule\'s time zone, `"HH:MM"` on the 24-hour clock (`"00:00"`–`"23:59"`).',
  z.string().max(5, ScheduleMessages.badTime).regex(CLOCK, ScheduleMessages.badTime),
);

const weekday = z.enum(WEEKDAYS, { error: ScheduleMessages.badDay });

const quietRange = named(
  "QuietHoursRange",
  z.strictObject({
    days: described(
      "The days on which the range starts; every day when left out.",
      z
        .array(weekday)
        .min(1, ScheduleMessages.noDays)
        .max(7, ScheduleMessages.noDays)
        .refine((days) => new Set(days).size === days.length, ScheduleMessages.dayTwice)
        .default([...WEEKDAYS]),
    ),
    start: clockTime,
    end: described(
      "When the range ends; an end at or before the start is on the next day (an end equal to the start makes the range 24 hours).",
      clockTime,
    ),
  }),
  "A quiet range: from `start` on each of `days` to the next `end`.",
);

/** `"off"`, a duration from `"1m"` to `"24h"`, or `"daily@HH:MM"`. */
function digestIsValid(text: string): boolean {
  if (text !== text.trim()) return false;
  if (text === "off" || DAILY_DIGEST.test(text)) return true;
  const ms = parseDuration(text);
  return ms !== undefined && ms >= DIGEST_MIN_MS && ms <= DIGEST_MAX_MS && !/^\d+$/.test(text.trim());
}

const digest = described(
  '`"off"`; a window length from `"1m"` to `"24h"` (e.g. `"1h"`, `"90m"`); or `"daily@HH:MM"` for a window ending at that local time each day.',
  exemplified(["off"], z.string().max(32, ScheduleMessages.badDigest).refine(digestIsValid, ScheduleMessages.badDigest)),
);

const timezone = described(
  'An IANA time-zone name, e.g. `"Europe/Berlin"` (matched without regard to case and answered in its canonical spelling).',
  exemplified(
    ["Europe/Berlin"],
    z
      .string()
      .max(64, ScheduleMessages.unknownZone)
      .refine((name) => canonicalZone(name) !== undefined, ScheduleMessages.unknownZone),
  ),
);

/** `PUT /users/{user}/notifications/schedule`: the whole schedule, every field given (`[]` and `"off"` turn a part off). */
export const scheduleBody = named(
  "NotificationScheduleRequest",
  z.strictObject({
    timezone,
    quiet_hours: z.array(quietRange).max(QUIET_RANGES_MAX, ScheduleMessages.tooManyRanges),
    digest,
  }),
  "A user's schedule for external copies: the time zone, quiet hours and digest (docs/schedule.md).",
);

export type ScheduleBody = z.infer<typeof scheduleBody>;

export const ScheduleResponse = named(
  "NotificationSchedule",
  z.strictObject({
    timezone: z.string(),
    quiet_hours: z.array(z.strictObject({ days: z.array(z.enum(WEEKDAYS)), start: z.string(), end: z.string() })),
    digest: z.string(),
    updated_at: described("When the schedule was last changed; null while the user has never set one.", z.iso.datetime().nullable()),
  }),
  "A user's schedule for external copies (docs/schedule.md).",
);

export type ScheduleJson = z.infer<typeof ScheduleResponse>;
