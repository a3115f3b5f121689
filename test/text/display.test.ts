/**
 * The displayed-text rule (docs/api.md, "Displayed text"), on its own: which characters a single-line and a
 * multi-line field refuse, where the refusal says they are, and that text in any script, with emoji and combining
 * marks, passes. test/endpoints/displayed-text.test.ts checks every field that uses it.
 */
import * as fc from "fast-check";
import { describe, expect, it } from "vitest";
import * as z from "zod";
import { displayed, refusedCharacter } from "../../src/text/display";
import { ACCEPTED_UNITS, REFUSED_EVERYWHERE, REFUSED_IN_A_LINE } from "../fixtures/display-text";

const acceptedText = fc.array(fc.constantFrom(...ACCEPTED_UNITS), { minLength: 1, maxLength: 20 });

describe("refused characters", () => {
  it.each(REFUSED_EVERYWHERE.map((c) => [`U+${c.codePointAt(0)?.toString(16).toUpperCase().padStart(4, "0")}`, c]))(
    "%s is refused in single- and multi-line fields",
    (_, c) => {
      expect(refusedCharacter(`ab${c}cd`, "single")).toMatchObject({ codePoint: c.codePointAt(0), position: 3 });
      expect(refusedCharacter(`ab${c}cd`, "multi")).toMatchObject({ codePoint: c.codePointAt(0), position: 3 });
    },
  );

  it("LF, CRLF and TAB are refused in a single line, and allowed in a multi-line field; a CR alone is refused in both", () => {
    for (const c of [...REFUSED_IN_A_LINE, "\r\n"]) {
      expect(refusedCharacter(`a${c}b`, "single")).toBeDefined();
      expect(refusedCharacter(`a${c}b`, "multi")).toBeUndefined();
    }
    for (const text of ["a\rb", "a\n\rb", "a\r"]) expect(refusedCharacter(text, "multi"), JSON.stringify(text)).toMatchObject({ codePoint: 0x0d });
  });

  it("joiners are refused unless between two visible characters outside ASCII", () => {
    for (const text of ["ad\u200Dmin", "ad\u200Cmin", "\u200D😀", "😀\u200D", "😀 \u200D😀", "😀\u200D\u200D😀", "\u202E\u200D😀"]) {
      expect(refusedCharacter(text, "single"), JSON.stringify(text)).toBeDefined();
    }
    for (const text of ["👩‍💻", "می‌خواهم", "❤️‍🔥"]) expect(refusedCharacter(text, "single"), text).toBeUndefined();
  });

  it("property: any refused character inserted anywhere in accepted text is found where it was put", () => {
    fc.assert(
      fc.property(acceptedText, fc.nat(), fc.constantFrom(...REFUSED_EVERYWHERE, ...REFUSED_IN_A_LINE), (units, at, c) => {
        const i = at % (units.length + 1);
        const text = [...units.slice(0, i), c, ...units.slice(i)].join("");
        const found = refusedCharacter(text, "single");
        expect(found?.codePoint).toBe(c.codePointAt(0));
        expect(found?.position).toBe(Array.from(units.slice(0, i).join("")).length + 1);
      }),
    );
  });

  it("property: text in any script, with emoji and combining marks, is accepted", () => {
    fc.assert(
      fc.property(acceptedText, (units) => {
        expect(refusedCharacter(units.join(""), "single")).toBeUndefined();
        expect(refusedCharacter(units.join("\n"), "multi")).toBeUndefined();
      }),
    );
  });
});

describe("the zod refinement's message", () => {
  const title = displayed(z.string(), "title", "single");
  const message = displayed(z.string(), "message", "multi");
  const issue = (schema: z.ZodString, text: string) => schema.safeParse(text).error?.issues[0]?.message;

  it("names the field, the character, what it is and where", () => {
    expect(issue(title, "Invoice \u202Egnp.exe\u202C paid")).toBe(
      "title must not contain U+202E (a bidirectional control) at character 9: text must display as it reads",
    );
    expect(issue(title, "line1\u2028line2")).toBe("title must be a single line: U+2028 (a line break) at character 6 is not allowed");
    expect(issue(message, "line1\rline2")).toBe("message must not contain U+000D (a line break) at character 6: lines end with LF (U+000A) or CRLF");
    expect(issue(message, "a\u0000")).toBe("message must not contain U+0000 (a control character) at character 2: text must display as it reads");
  });
});
