import { describe, expect, it } from "vitest";
import { digestWindowEnd, type QuietRange, quietUntil, type Weekday } from "../../src/schedule/model";
import { canonicalZone } from "../../src/schedule/zone";

// docs/schedule.md, "Quiet hours" and "Time zones and DST": when an instant is inside a quiet range, and until when.
// Every instant is given (a controlled clock); the zone rules are the runtime's Intl.

const EVERY_DAY: Weekday[] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];
const hm = (text: string) => Number(text.slice(0, 2)) * 60 + Number(text.slice(3));
const range = (start: string, end: string, days: Weekday[] = EVERY_DAY): QuietRange => ({ days, start: hm(start), end: hm(end) });
const at = (iso: string) => Date.parse(iso);
const until = (timezone: string, ranges: QuietRange[], instant: string) => {
  const end = quietUntil({ timezone, quietHours: ranges }, at(instant));
  return end === undefined ? undefined : new Date(end).toISOString();
};

describe('quiet ranges (docs/schedule.md, "Quiet hours")', () => {
  const night = [range("22:00", "07:00")];

  it("inside a range: held until its end; outside: not held; the end itself is outside", () => {
    expect(until("UTC", [range("09:00", "17:00")], "2026-06-10T12:00:00Z")).toBe("2026-06-10T17:00:00.000Z");
    expect(until("UTC", [range("09:00", "17:00")], "2026-06-10T08:59:00Z")).toBeUndefined();
    expect(until("UTC", [range("09:00", "17:00")], "2026-06-10T09:00:00Z")).toBe("2026-06-10T17:00:00.000Z");
    expect(until("UTC", [range("09:00", "17:00")], "2026-06-10T17:00:00Z")).toBeUndefined();
  });

  it("a range crossing midnight holds on both sides of it", () => {
    expect(until("UTC", night, "2026-06-10T23:30:00Z")).toBe("2026-06-11T07:00:00.000Z");
    expect(until("UTC", night, "2026-06-11T03:00:00Z")).toBe("2026-06-11T07:00:00.000Z");
    expect(until("UTC", night, "2026-06-11T12:00:00Z")).toBeUndefined();
  });

  it("an end equal to the start is a whole day", () => {
    expect(until("UTC", [range("00:00", "00:00", ["sat"])], "2026-06-13T15:00:00Z")).toBe("2026-06-14T00:00:00.000Z");
    expect(until("UTC", [range("00:00", "00:00", ["sat"])], "2026-06-14T15:00:00Z")).toBeUndefined();
  });

  it("a given weekday only: the days name where a range starts, so Friday night reaches into Saturday", () => {
    const friday = [range("22:00", "07:00", ["fri"])];
    // 2026-06-12 is a Friday, 2026-06-13 a Saturday.
    expect(until("UTC", friday, "2026-06-12T23:00:00Z")).toBe("2026-06-13T07:00:00.000Z");
    expect(until("UTC", friday, "2026-06-13T03:00:00Z")).toBe("2026-06-13T07:00:00.000Z");
    expect(until("UTC", friday, "2026-06-12T03:00:00Z")).toBeUndefined();
    expect(until("UTC", friday, "2026-06-13T23:00:00Z")).toBeUndefined();
  });

  it("ranges that touch or overlap hold until the last of them ends", () => {
    expect(until("UTC", [range("22:00", "07:00"), range("07:00", "09:00")], "2026-06-10T23:00:00Z")).toBe("2026-06-11T09:00:00.000Z");
    expect(until("UTC", [range("06:00", "08:00"), range("22:00", "07:00")], "2026-06-10T23:00:00Z")).toBe("2026-06-11T08:00:00.000Z");
  });

  it("wall-clock times are the zone's: 22:00–07:00 in Berlin in summer is 20:00–05:00 UTC", () => {
    expect(until("Europe/Berlin", night, "2026-06-10T20:00:00Z")).toBe("2026-06-11T05:00:00.000Z");
    expect(until("Europe/Berlin", night, "2026-06-10T19:59:00Z")).toBeUndefined();
  });
});

describe('DST (docs/schedule.md, "Time zones and DST"): a time means the first moment the clock shows it, or passes it', () => {
  describe("Europe/Berlin, clocks forward on 2026-03-29 (02:00 CET → 03:00 CEST, at 01:00 UTC)", () => {
    it("a range starting in the missing hour starts when the clock jumps past it", () => {
      const r = [range("02:30", "06:00")];
      expect(until("Europe/Berlin", r, "2026-03-29T00:59:00Z")).toBeUndefined();
      expect(until("Europe/Berlin", r, "2026-03-29T01:00:00Z")).toBe("2026-03-29T04:00:00.000Z");
    });
    it("a range ending in the missing hour ends when the clock jumps past it", () => {
      const r = [range("22:00", "02:30")];
      expect(until("Europe/Berlin", r, "2026-03-29T00:45:00Z")).toBe("2026-03-29T01:00:00.000Z");
      expect(until("Europe/Berlin", r, "2026-03-29T01:00:00Z")).toBeUndefined();
    });
    it("a night across the change is an hour shorter: 23:00 CET to 07:00 CEST", () => {
      expect(until("Europe/Berlin", [range("23:00", "07:00")], "2026-03-28T22:00:00Z")).toBe("2026-03-29T05:00:00.000Z");
    });
  });

  describe("Europe/Berlin, clocks back on 2026-10-25 (03:00 CEST → 02:00 CET, at 01:00 UTC)", () => {
    it("a range starting in the repeated hour starts at its first occurrence", () => {
      const r = [range("02:30", "06:00")];
      expect(until("Europe/Berlin", r, "2026-10-25T00:29:00Z")).toBeUndefined();
      expect(until("Europe/Berlin", r, "2026-10-25T00:30:00Z")).toBe("2026-10-25T05:00:00.000Z");
    });
    it("a range ending in the repeated hour ends at its first occurrence, not the second", () => {
      const r = [range("22:00", "02:30")];
      expect(until("Europe/Berlin", r, "2026-10-25T00:00:00Z")).toBe("2026-10-25T00:30:00.000Z");
      expect(until("Europe/Berlin", r, "2026-10-25T01:30:00Z")).toBeUndefined();
    });
    it("a night across the change is an hour longer: 23:00 CEST to 07:00 CET", () => {
      expect(until("Europe/Berlin", [range("23:00", "07:00")], "2026-10-24T21:00:00Z")).toBe("2026-10-25T06:00:00.000Z");
    });
  });

  describe("America/New_York, clocks forward on 2026-03-08 (02:00 EST → 03:00 EDT, at 07:00 UTC)", () => {
    it("start and end in the missing hour fall on the jump", () => {
      expect(until("America/New_York", [range("02:30", "06:00")], "2026-03-08T06:59:00Z")).toBeUndefined();
      expect(until("America/New_York", [range("02:30", "06:00")], "2026-03-08T07:00:00Z")).toBe("2026-03-08T10:00:00.000Z");
      expect(until("America/New_York", [range("22:00", "02:30")], "2026-03-08T06:30:00Z")).toBe("2026-03-08T07:00:00.000Z");
    });
  });

  describe("America/New_York, clocks back on 2026-11-01 (02:00 EDT → 01:00 EST, at 06:00 UTC)", () => {
    it("start and end in the repeated hour are its first occurrence", () => {
      expect(until("America/New_York", [range("01:30", "06:00")], "2026-11-01T05:29:00Z")).toBeUndefined();
      expect(until("America/New_York", [range("01:30", "06:00")], "2026-11-01T05:30:00Z")).toBe("2026-11-01T11:00:00.000Z");
      expect(until("America/New_York", [range("22:00", "01:30")], "2026-11-01T05:00:00Z")).toBe("2026-11-01T05:30:00.000Z");
      expect(until("America/New_York", [range("22:00", "01:30")], "2026-11-01T06:30:00Z")).toBeUndefined();
    });
  });
});

describe('digest windows (docs/schedule.md, "Digests")', () => {
  it("a duration ends that long after the window opened", () => {
    expect(digestWindowEnd({ timezone: "UTC", digest: { kind: "every", ms: 60_000 } }, at("2026-06-10T12:00:30Z"))).toBe(at("2026-06-10T12:01:30Z"));
    expect(digestWindowEnd({ timezone: "UTC", digest: { kind: "off" } }, at("2026-06-10T12:00:00Z"))).toBeUndefined();
  });
  it("daily@HH:MM ends at the next local HH:MM, today's if still ahead, and follows DST", () => {
    const daily = (timezone: string, time: string, iso: string) =>
      new Date(digestWindowEnd({ timezone, digest: { kind: "daily", minutes: hm(time) } }, at(iso)) ?? 0).toISOString();
    expect(daily("Europe/Berlin", "08:00", "2026-06-10T05:00:00Z")).toBe("2026-06-10T06:00:00.000Z");
    expect(daily("Europe/Berlin", "08:00", "2026-06-10T06:00:00Z")).toBe("2026-06-11T06:00:00.000Z");
    expect(daily("Europe/Berlin", "08:00", "2026-03-28T12:00:00Z")).toBe("2026-03-29T06:00:00.000Z");
    // 02:30 does not occur in Berlin on 2026-03-29: the window ends when the clock jumps past it.
    expect(daily("Europe/Berlin", "02:30", "2026-03-28T12:00:00Z")).toBe("2026-03-29T01:00:00.000Z");
  });
});

describe("time-zone names", () => {
  it("the runtime's IANA names, in their canonical spelling; offsets and junk refused", () => {
    expect(canonicalZone("Europe/Berlin")).toBe("Europe/Berlin");
    expect(canonicalZone("america/new_york")).toBe("America/New_York");
    expect(canonicalZone("UTC")).toBe("UTC");
    for (const bad of ["Mars/Base", "+01:00", "", "Europe/Berlin\n", "../etc/passwd", "x".repeat(65)])
      expect(canonicalZone(bad), bad).toBeUndefined();
  });
});
