/**
 * The bounds of every error body (docs/api.md, "Unknown keys and long validation lists"): whatever an
 * `ApiError` carries, its body has at most ten validations, cut strings ending in "…", and at most 8 KiB of JSON; the
 * unknown keys of an object are one validation quoting at most five of them.
 */
import * as fc from "fast-check";
import { describe, expect, it } from "vitest";
import * as z from "zod";
import { ApiError, ErrorBodyLimits } from "../../src/http/errors";
import { toValidations } from "../../src/http/validate";

const bytes = (value: unknown) => new TextEncoder().encode(JSON.stringify(value)).byteLength;

/** Strings whose JSON form is as large as can be per character: controls, quotes, lone surrogates, astral emoji. */
const heavyText = fc.string({
  unit: fc.constantFrom("\u0000", '"', "\\", "\ud800", "😀", "é", "語", "a"),
  maxLength: 5_000,
});

describe("an error body is at most 8 KiB, whatever it carries", () => {
  it("property: any message, detail and validations", () => {
    fc.assert(
      fc.property(
        heavyText,
        fc.option(heavyText, { nil: undefined }),
        fc.array(fc.record({ field: heavyText, detail: heavyText }), { maxLength: 40 }),
        (message, detail, validations) => {
          const body = new ApiError(400, message || "x", { detail, validations }).body();
          expect(bytes(body)).toBeLessThanOrEqual(ErrorBodyLimits.bodyBytes);
          expect(body.validations?.length ?? 0).toBe(Math.min(validations.length, ErrorBodyLimits.validations));
          if (validations.length > ErrorBodyLimits.validations) expect(body.detail).toContain(`of ${validations.length} validations are listed.`);
        },
      ),
      { numRuns: 200 },
    );
  });

  it("strings within their limits are answered as they are, longer ones are cut and end in …", () => {
    const short = { field: "content.title", detail: "title must be at most 120 characters" };
    expect(new ApiError(400, "Validation failed.", { validations: [short] }).body()).toEqual({ message: "Validation failed.", validations: [short] });
    const long = new ApiError(400, "m", { validations: [{ field: "f".repeat(1_000), detail: "d".repeat(1_000) }] }).body();
    expect(long.validations?.[0]?.field).toBe(`${"f".repeat(ErrorBodyLimits.field - 3)}…`);
    expect(long.validations?.[0]?.detail).toBe(`${"d".repeat(ErrorBodyLimits.validationDetail - 3)}…`);
  });

  it("60,000 validations: ten are listed and the detail says how many there were", () => {
    const validations = Array.from({ length: 60_000 }, (_, i) => ({ field: `template_disabled_map.${i}`, detail: "Invalid input" }));
    const body = new ApiError(400, "Validation failed.", { validations }).body();
    expect(body.validations).toHaveLength(10);
    expect(body.detail).toBe("10 of 60000 validations are listed.");
  });
});

describe("the unknown keys of an object are one validation", () => {
  const strict = z.strictObject({ a: z.string().optional(), nested: z.strictObject({ b: z.boolean() }).optional() });

  it("one unknown key reads as it always has", () => {
    const result = strict.safeParse({ bogus: 1 });
    expect(result.success).toBe(false);
    if (!result.success) expect(toValidations(result.error)).toEqual([{ field: "bogus", detail: 'Unrecognized key: "bogus"' }]);
  });

  it("60,000 unknown keys: the first named, five quoted, the rest counted; nested ones by their path", () => {
    const keys = Object.fromEntries(Array.from({ length: 60_000 }, (_, i) => [`k${i}`, 0]));
    const top = strict.safeParse(keys);
    const nested = strict.safeParse({ nested: { b: true, ...keys } });
    if (top.success || nested.success) throw new Error("unknown keys were accepted");
    const detail = 'Unrecognized keys: "k0", "k1", "k2", "k3", "k4" and 59995 more';
    expect(toValidations(top.error)).toEqual([{ field: "k0", detail }]);
    expect(toValidations(nested.error)).toEqual([{ field: "nested.k0", detail }]);
  });

  it("long keys are quoted cut to 40 characters", () => {
    const result = strict.safeParse({ ["x".repeat(100_000)]: 1 });
    if (result.success) throw new Error("an unknown key was accepted");
    const [validation] = toValidations(result.error);
    expect(validation).toEqual({ field: `${"x".repeat(40)}…`, detail: `Unrecognized key: "${"x".repeat(40)}…"` });
  });
});
