import * as fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseDuration } from "../../src/config/duration";

// parseDuration reads every *_DURATION / *_TTL / *_MAX_AGE variable (src/config/schema.ts): Go-style durations as
// Coder writes them, or a plain integer of seconds. It answers milliseconds, or undefined for anything else.

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

describe("parseDuration: what an operator writes", () => {
  it.each([
    ["24h", 24 * HOUR],
    ["30m", 30 * MINUTE],
    ["90m", 90 * MINUTE],
    ["45s", 45 * SECOND],
    ["500ms", 500],
    ["7d", 7 * DAY],
    ["720h", 720 * HOUR],
    ["1h30m", HOUR + 30 * MINUTE],
    ["1h30m15s250ms", HOUR + 30 * MINUTE + 15 * SECOND + 250],
    ["1d12h", DAY + 12 * HOUR],
    ["0s", 0],
    ["0", 0],
    ["60", 60 * SECOND],
    ["010m", 10 * MINUTE],
  ])("%s → %d ms", (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it("a plain integer is seconds, not milliseconds", () => {
    expect(parseDuration("5")).toBe(5 * SECOND);
    expect(parseDuration("3600")).toBe(HOUR);
  });

  it("fractions are allowed and rounded to whole milliseconds", () => {
    expect(parseDuration("1.5h")).toBe(90 * MINUTE);
    expect(parseDuration("0.5s")).toBe(500);
    expect(parseDuration("0.1h")).toBe(6 * MINUTE); // 0.1 × 3 600 000 is not exact in binary floating point
    expect(parseDuration("1.5ms")).toBe(2);
    expect(parseDuration("0.4ms")).toBe(0); // rounds to zero: the schema's `> 0` check then refuses it
  });

  it("surrounding whitespace (a stray space or newline in .dev.vars) is ignored", () => {
    expect(parseDuration(" 24h ")).toBe(24 * HOUR);
    expect(parseDuration("\t10m\n")).toBe(10 * MINUTE);
    expect(parseDuration(" 30 ")).toBe(30 * SECOND);
  });

  it("`ms` is milliseconds, never minutes followed by garbage", () => {
    expect(parseDuration("1ms")).toBe(1);
    expect(parseDuration("1m5s")).toBe(MINUTE + 5 * SECOND);
    expect(parseDuration("2m500ms")).toBe(2 * MINUTE + 500);
  });

  it("a repeated unit adds up, as in Go", () => {
    expect(parseDuration("1h1h")).toBe(2 * HOUR);
  });
});

describe("parseDuration: what is not a duration", () => {
  it.each([
    ["empty", ""],
    ["only spaces", "   "],
    ["words", "a day"],
    ["forever", "forever"],
    ["a unit without a number", "h"],
    ["a number with an unknown unit", "5y"],
    ["upper-case unit", "24H"],
    ["upper-case ms", "5MS"],
    ["a space between number and unit", "24 h"],
    ["a space between parts", "1h 30m"],
    ["a negative duration", "-1h"],
    ["a negative plain number", "-5"],
    ["an explicit plus sign", "+5m"],
    ["a leading decimal point", ".5h"],
    ["a trailing decimal point", "1.h"],
    ["a decimal plain number", "1.5"],
    ["scientific notation", "1e3"],
    ["hexadecimal", "0x10"],
    ["digit separators", "1_000"],
    ["Infinity", "Infinity"],
    ["NaN", "NaN"],
    ["trailing garbage", "24hx"],
    ["leading garbage", "x24h"],
    ["garbage between parts", "1h+30m"],
    ["a comma", "1h,30m"],
    ["non-ASCII digits", "١٢h"],
    ["full-width digits", "２４h"],
    ["a NUL inside", "24\u0000h"],
    ["a prototype name", "constructor"],
    ["__proto__", "__proto__"],
    ["a template", "{{7*7}}"],
  ])("%s (%j) → undefined", (_, text) => {
    expect(parseDuration(text)).toBeUndefined();
  });

  it("an absurdly long unit duration is refused rather than Infinity", () => {
    expect(parseDuration(`${"9".repeat(400)}h`)).toBeUndefined();
  });

  // A plain number too long to be a safe integer of milliseconds is no duration (config would take it as infinite).
  it("an absurdly long plain number is refused rather than Infinity", () => {
    expect(parseDuration("9".repeat(400))).toBeUndefined();
  });
});

describe("parseDuration: properties", () => {
  const units = { ms: 1, s: SECOND, m: MINUTE, h: HOUR, d: DAY } as const;
  const unit = fc.constantFrom(...(Object.keys(units) as (keyof typeof units)[]));

  it("round trip: any sum of integer parts in any units parses to the sum of their milliseconds", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 100_000 }), unit), { minLength: 1, maxLength: 5 }), (parts) => {
        const text = parts.map(([n, u]) => `${n}${u}`).join("");
        const expected = parts.reduce((sum, [n, u]) => sum + n * units[u], 0);
        expect(parseDuration(text)).toBe(expected);
      }),
    );
  });

  it("a plain count of seconds is that many seconds", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1_000_000_000 }), (n) => {
        expect(parseDuration(String(n))).toBe(n * SECOND);
      }),
    );
  });

  it("never throws, and answers either undefined or a finite, whole, non-negative number of milliseconds", () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.string({ unit: "binary", maxLength: 30 }), fc.stringMatching(/^[0-9.]{0,6}(ms|s|m|h|d|x)?[0-9.]{0,6}(ms|s|m|h|d)?$/)),
        (text) => {
          const ms = parseDuration(text);
          if (ms === undefined) return;
          expect(Number.isInteger(ms)).toBe(true);
          expect(ms).toBeGreaterThanOrEqual(0);
        },
      ),
      { numRuns: 500 },
    );
  });

  it("whitespace around a duration never changes its value", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10_000 }), unit, fc.constantFrom(" ", "\t", "\n", "\r\n", "\u00a0"), (n, u, ws) => {
        expect(parseDuration(`${ws}${n}${u}${ws}`)).toBe(parseDuration(`${n}${u}`));
      }),
    );
  });
});
