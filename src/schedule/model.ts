import { addDays, instantOf, type WallClock, wallClockAt } from "./zone";

/** Days as the schedule names them, in `Date.getUTCDay()` order. */
export const WEEKDAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"] as const;
export type Weekday = (typeof WEEKDAYS)[number];

/** One quiet range: on each of `days`, from `start` to `end` (minutes since local midnight); an end at or before the start is the next day's. */
export interface QuietRange {
  days: Weekday[];
  start: number;
  end: number;
}

/** `off`, a window of a fixed length, or a window that ends at the next local HH:MM (docs/schedule.md, "Digests"). */
export type DigestSetting = { kind: "off" } | { kind: "every"; ms: number } | { kind: "daily"; minutes: number };

/** A user's schedule as the code uses it (the stored and JSON forms are in src/schedule/store.ts and schemas.ts). */
export interface Schedule {
  timezone: string;
  quietHours: QuietRange[];
  digest: DigestSetting;
}

export const DEFAULT_SCHEDULE: Schedule = { timezone: "UTC", quietHours: [], digest: { kind: "off" } };

/** How many ranges may follow one another before the search for the end of quiet hours stops: a week of them. */
const CHAIN_LIMIT = 16;

/** The instants a range covers when it starts on local `date`: [start, end). */
function occurrence(range: QuietRange, date: Pick<WallClock, "year" | "month" | "day">, zone: string): [number, number] {
  const start = instantOf(date, range.start, zone);
  const end = instantOf(range.end <= range.start ? addDays(date, 1) : date, range.end, zone);
  return [start, end];
}

/**
 * The latest end among the ranges that cover instant `at`, or undefined when `at` is outside every range. A range that
 * crosses midnight may have started on the previous local day, so that day's ranges are looked at too.
 */
function coveringEnd(ranges: readonly QuietRange[], at: number, zone: string): number | undefined {
  const today = wallClockAt(at, zone);
  let end: number | undefined;
  for (const offset of [-1, 0]) {
    const date = addDays(today, offset);
    const day = WEEKDAYS[date.weekday];
    for (const range of ranges) {
      if (day === undefined || !range.days.includes(day)) continue;
      const [from, to] = occurrence(range, date, zone);
      if (from <= at && at < to && (end === undefined || to > end)) end = to;
    }
  }
  return end;
}

/**
 * When quiet hours that cover `at` end (docs/schedule.md, "Quiet hours"), or undefined when `at` is not inside one.
 * Ranges that touch or overlap are one quiet period: the hold lasts until the clock leaves all of them.
 */
export function quietUntil(schedule: Pick<Schedule, "timezone" | "quietHours">, at: number): number | undefined {
  if (schedule.quietHours.length === 0) return undefined;
  let end = coveringEnd(schedule.quietHours, at, schedule.timezone);
  if (end === undefined) return undefined;
  for (let i = 0; i < CHAIN_LIMIT; i++) {
    const next = coveringEnd(schedule.quietHours, end, schedule.timezone);
    if (next === undefined || next <= end) break;
    end = next;
  }
  return end;
}

/** When a digest window opened at `at` ends (docs/schedule.md, "Digests"): after its length, or at the next local HH:MM. */
export function digestWindowEnd(schedule: Pick<Schedule, "timezone" | "digest">, at: number): number | undefined {
  const { digest, timezone } = schedule;
  if (digest.kind === "off") return undefined;
  if (digest.kind === "every") return at + digest.ms;
  const today = wallClockAt(at, timezone);
  const todays = instantOf(today, digest.minutes, timezone);
  return todays > at ? todays : instantOf(addDays(today, 1), digest.minutes, timezone);
}
