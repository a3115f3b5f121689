import * as fc from "fast-check";
import { describe, expect, it } from "vitest";
// An independent copy of the HTML Standard's list, from a development dependency (postal-mime decodes HTML e-mail).
import { htmlEntities } from "../../node_modules/postal-mime/dist/esm/html-entities.js";
import { markdownToHtml } from "../../src/markdown/html";
import { markdownToPlaintext } from "../../src/markdown/plaintext";
import { decodeNamedReferences, escapeUnknownReferences } from "../../src/markdown/references";

// Character references in plain text and HTML (docs/api.md, Placeholders): every name of the HTML Standard's list is
// read as its character in the plain text, as the browser reads it in the HTML part; anything else stays as written.

const standard = Object.entries(htmlEntities as Record<string, string>).filter(([reference]) => reference.endsWith(";"));

describe("decodeNamedReferences", () => {
  it("knows every name of the HTML Standard's list, with its value", () => {
    expect(standard.length).toBe(2125);
    for (const [reference, value] of standard) expect(decodeNamedReferences(reference), reference).toBe(value);
  });

  it("reads names in one pass, case-sensitively, and leaves anything that is not a listed name as written", () => {
    expect(decodeNamedReferences("&amp;lt; &amp;amp;")).toBe("&lt; &amp;");
    expect(decodeNamedReferences("&Copy; &COPY; &copy;")).toBe("&Copy; © ©");
    for (const s of ["&notit;", "&copyright;", "&copy", "&;", "&#169;", "& copy;", "&foo_bar;", "&1;"]) expect(decodeNamedReferences(s), s).toBe(s);
  });

  it("property: a name that is not on the list is never decoded", () => {
    const listed = new Set(standard.map(([reference]) => reference));
    fc.assert(
      fc.property(fc.stringMatching(/^[A-Za-z][A-Za-z0-9]{0,12}$/), (name) => {
        const reference = `&${name};`;
        fc.pre(!listed.has(reference));
        expect(decodeNamedReferences(reference)).toBe(reference);
        expect(escapeUnknownReferences(reference)).toBe(`&amp;${name};`);
      }),
      { numRuns: 1000 },
    );
  });

  it("values of two code points and outside the BMP come out whole", () => {
    expect(decodeNamedReferences("&nvlt;&fjlig;&Afr;&bne;")).toBe("<\u20d2fj\u{1d504}=\u20e5");
  });
});

describe("escapeUnknownReferences", () => {
  it("keeps every listed name and escapes the ampersand of any other", () => {
    for (const [reference] of standard) expect(escapeUnknownReferences(reference)).toBe(reference);
    expect(escapeUnknownReferences("&notit; &copyright; &not_x; &#169; &#x41;")).toBe("&amp;notit; &amp;copyright; &amp;not_x; &#169; &#x41;");
  });
});

describe("Markdown to plain text and HTML", () => {
  it("every listed name is its character in the plain text, and reaches the HTML part as written for the browser to read", () => {
    for (const [reference, value] of standard) {
      expect(markdownToPlaintext(`a ${reference} b`), reference).toBe(`a ${value} b`);
      expect(markdownToHtml(`a ${reference} b`), reference).toBe(`<p>a ${reference} b</p>\n`);
    }
  });

  it("any other name is shown as written in both, never as a prefix the browser happens to know", () => {
    for (const reference of ["&notit;", "&copyright;", "&ampx;", "&not_x;"]) {
      expect(markdownToPlaintext(`a ${reference} b`), reference).toBe(`a ${reference} b`);
      expect(markdownToHtml(`a ${reference} b`), reference).toBe(`<p>a &amp;${reference.slice(1)} b</p>\n`);
    }
  });
});
