import type * as z from "zod";

/**
 * The one rule for text a person writes and another reads (docs/api.md, "Displayed text"): a title, a message, a
 * display name, a token name. Such text must display as it reads, so it may not hold
 *
 * - control characters (C0, DEL, C1): a multi-line field allows LF, CR directly before LF, and TAB, and no other;
 * - U+2028 and U+2029, line breaks that some displays honour and others ignore;
 * - bidirectional controls: embeddings and overrides (U+202A–U+202E), isolates (U+2066–U+2069) and the marks
 *   U+200E, U+200F and U+061C, which reorder what is shown ("Invoice \u202Egnp.exe" shows as "Invoice exe.png");
 * - invisible characters: U+200B, U+2060–U+2064, U+FEFF, and the joiners U+200C and U+200D except directly between
 *   two visible characters outside ASCII, where emoji sequences (👩‍💻) and scripts such as Persian need them.
 *
 * Refused at input with a 400 naming the character and where it is; stored text is left as it is.
 */
export type TextLines = "single" | "multi";

/** What a refused character is, for the 400's detail. */
type Refusal = "a control character" | "a line break" | "a bidirectional control" | "an invisible character";

const LF = 0x0a;
const CR = 0x0d;
const TAB = 0x09;
const ZWNJ = 0x200c;
const ZWJ = 0x200d;

function refusal(cp: number, lines: TextLines): Refusal | undefined {
  if (cp < 0x20) {
    if (lines === "multi" && (cp === LF || cp === TAB)) return undefined;
    return cp === LF || cp === CR ? "a line break" : "a control character";
  }
  if (cp < 0x7f) return undefined;
  if (cp <= 0x9f) return cp === 0x85 ? "a line break" : "a control character";
  if (cp === 0x2028 || cp === 0x2029) return "a line break";
  if (cp === 0x061c || cp === 0x200e || cp === 0x200f || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069)) {
    return "a bidirectional control";
  }
  if (cp === 0x200b || (cp >= 0x2060 && cp <= 0x2064) || cp === 0xfeff) return "an invisible character";
  return undefined;
}

/** A neighbour a joiner may stand between: visible and outside ASCII (not a space, not itself refused, not a joiner). */
function joinable(cp: number | undefined, lines: TextLines): boolean {
  return cp !== undefined && cp > 0x7f && cp !== ZWNJ && cp !== ZWJ && refusal(cp, lines) === undefined && !/\s/u.test(String.fromCodePoint(cp));
}

/** The first character the rule refuses in `text`, with its 1-based position in code points; one pass over the text. */
export function refusedCharacter(text: string, lines: TextLines): { codePoint: number; position: number; what: Refusal } | undefined {
  const cps = Array.from(text, (c) => c.codePointAt(0) ?? 0);
  for (let i = 0; i < cps.length; i++) {
    const cp = cps[i] ?? 0;
    // A multi-line field's line break may be written CRLF; a CR alone is refused.
    if (cp === CR && lines === "multi" && cps[i + 1] === LF) continue;
    let what = refusal(cp, lines);
    if (what === undefined && (cp === ZWNJ || cp === ZWJ) && !(joinable(cps[i - 1], lines) && joinable(cps[i + 1], lines))) {
      what = "an invisible character";
    }
    if (what !== undefined) return { codePoint: cp, position: i + 1, what };
  }
  return undefined;
}

const hex = (cp: number) => `U+${cp.toString(16).toUpperCase().padStart(4, "0")}`;

/**
 * `schema` with the rule for displayed text (docs/api.md, "Displayed text"), its refusal worded with `label` (the
 * field's name as a person reads it): "title must be a single line: U+000A (a line break) at character 6 is not
 * allowed". The one place the rule is applied; every displayed field's schema goes through it.
 */
export function displayed<T extends z.ZodString>(schema: T, label: string, lines: TextLines): T {
  return schema.superRefine((text, ctx) => {
    const found = refusedCharacter(text, lines);
    if (!found) return;
    const at = `${hex(found.codePoint)} (${found.what}) at character ${found.position}`;
    const why =
      found.what !== "a line break"
        ? `${label} must not contain ${at}: text must display as it reads`
        : lines === "single"
          ? `${label} must be a single line: ${at} is not allowed`
          : `${label} must not contain ${at}: lines end with LF (U+000A) or CRLF`;
    ctx.addIssue({ code: "custom", message: why });
  });
}
