/**
 * Wall-clock time in an IANA time zone, through the runtime's `Intl` (workerd ships ICU's time-zone data): no offset
 * table of Herald's own, so DST rules are as current as the runtime (docs/schedule.md, "Time zones and DST").
 */

/** A local calendar date and a time of day in minutes since midnight. */
export interface WallClock {
  year: number;
  /** 1–12. */
  month: number;
  day: number;
  /** 0–1439. */
  minutes: number;
  /** 0 = Sunday … 6 = Saturday. */
  weekday: number;
}

const MINUTE_MS = 60_000;
const DAY_MS = 24 * 60 * MINUTE_MS;
/** No zone is further than 14 hours from UTC; a transition moves the clock by at most a few hours. */
const WIDEST_OFFSET_MS = 15 * 60 * MINUTE_MS;

/** Formatters are costly to build (ICU looks the zone up): one per zone per isolate, a few hundred zones at most. */
const formatters = new Map<string, Intl.DateTimeFormat>();
const FORMATTERS_KEPT = 500;

function formatter(zone: string): Intl.DateTimeFormat {
  let format = formatters.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
    });
    if (formatters.size >= FORMATTERS_KEPT) formatters.clear();
    formatters.set(zone, format);
  }
  return format;
}

/**
 * The canonical name of an IANA zone (`europe/berlin` → `Europe/Berlin`), or undefined when the runtime does not know
 * it. Offsets such as `+01:00` are refused: they have no DST, and a person means a place.
 */
export function canonicalZone(name: string): string | undefined {
  if (!/^[A-Za-z][A-Za-z0-9_+\-/]{0,63}$/.test(name)) return undefined;
  try {
    return new Intl.DateTimeFormat("en-US", { timeZone: name }).resolvedOptions().timeZone;
  } catch {
    return undefined;
  }
}

/** The wall clock in `zone` at instant `at` (epoch ms), to the minute. */
export function wallClockAt(at: number, zone: string): WallClock {
  const parts = formatter(zone).formatToParts(at);
  const field = (type: Intl.DateTimeFormatPartTypes) => Number(parts.find((p) => p.type === type)?.value ?? 0);
  const [year, month, day] = [field("year"), field("month"), field("day")];
  return { year, month, day, minutes: field("hour") * 60 + field("minute"), weekday: new Date(Date.UTC(year, month - 1, day)).getUTCDay() };
}

/** The zone's offset from UTC at `at`, in ms, to the minute. */
function offsetAt(at: number, zone: string): number {
  const w = wallClockAt(at, zone);
  const floored = at - (((at % MINUTE_MS) + MINUTE_MS) % MINUTE_MS);
  return Date.UTC(w.year, w.month - 1, w.day) + w.minutes * MINUTE_MS - floored;
}

/** The same calendar date moved by `days` (month and year lengths from the UTC calendar). */
export function addDays(date: Pick<WallClock, "year" | "month" | "day">, days: number): Pick<WallClock, "year" | "month" | "day" | "weekday"> {
  const d = new Date(Date.UTC(date.year, date.month - 1, date.day) + days * DAY_MS);
  return { year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate(), weekday: d.getUTCDay() };
}

/**
 * The instant the clock in `zone` shows `minutes` on `date` (docs/schedule.md, "Time zones and DST"): when the time
 * occurs twice (the repeated hour when clocks go back), the first time; when it never occurs (the hour skipped when
 * clocks go forward), the moment the clock jumps past it. In both cases: the first instant at which the clock reads
 * that time or later.
 */
export function instantOf(date: Pick<WallClock, "year" | "month" | "day">, minutes: number, zone: string): number {
  const local = Date.UTC(date.year, date.month - 1, date.day) + minutes * MINUTE_MS;
  const before = offsetAt(local - WIDEST_OFFSET_MS, zone);
  const after = offsetAt(local + WIDEST_OFFSET_MS, zone);
  const candidates = [...new Set([before, after])]
    .map((offset) => local - offset)
    .filter((at) => offsetAt(at, zone) === local - at)
    .sort((a, b) => a - b);
  const first = candidates[0];
  if (first !== undefined) return first;
  // A gap: the clock jumps from before the time to after it. The jump lies between the two readings; find the first
  // minute on the later offset.
  let low = local - before;
  let high = local - after;
  if (low > high) [low, high] = [high, low];
  while (high - low > MINUTE_MS) {
    const mid = low + Math.floor((high - low) / 2 / MINUTE_MS) * MINUTE_MS;
    if (offsetAt(mid, zone) === after) high = mid;
    else low = mid;
  }
  return high;
}
