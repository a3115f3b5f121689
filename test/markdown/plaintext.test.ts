import * as fc from "fast-check";
import { describe, expect, it } from "vitest";
import { markdownToPlaintext as plain } from "../../src/markdown/plaintext";
import { markdownish } from "../fixtures/arbitraries";

// markdownToPlaintext makes the e-mail subject, the e-mail's text part and the webhook's title/body (docs/api.md,
// Placeholders): the Markdown is stripped, links become `text (url)`, and a URL the link policy refuses is left out
// (docs/email.md).

describe("markdownToPlaintext: Markdown is stripped, the words stay", () => {
  it("emphasis, strong, strikethrough and code spans lose their markers", () => {
    expect(plain("**bold** _em_ *also em* __strong__ ~~gone~~ `code`")).toBe("bold em also em strong gone code");
  });

  it("nested emphasis", () => {
    expect(plain("***both*** and **bold _inner_**")).toBe("both and bold inner");
  });

  it("ATX and setext headings become their text, one paragraph each", () => {
    expect(plain("# Title\n\nBody")).toBe("Title\n\nBody");
    expect(plain("## Sub ##")).toBe("Sub");
    expect(plain("Setext\n======\n\nBody")).toBe("Setext\n\nBody");
  });

  it("paragraphs are separated by exactly one blank line; runs of blank lines collapse", () => {
    expect(plain("a\n\n\n\n\nb")).toBe("a\n\nb");
    expect(plain("one\n\ntwo\n\nthree")).toBe("one\n\ntwo\n\nthree");
  });

  it("the result is trimmed", () => {
    expect(plain("\n\n  text  \n\n")).toBe("text");
    expect(plain("")).toBe("");
    expect(plain("   \n\n\t")).toBe("");
  });

  it("a soft line break stays a line break, a hard break (two spaces, backslash) becomes one", () => {
    expect(plain("line one\nline two")).toBe("line one\nline two");
    expect(plain("line one  \nline two")).toBe("line one\nline two");
    expect(plain("line one\\\nline two")).toBe("line one\nline two");
  });

  it("block quotes lose their markers", () => {
    expect(plain("> quoted\n> more")).toBe("quoted\nmore");
    expect(plain("> **bold** quote")).toBe("bold quote");
  });

  it("unordered lists become `- item` lines, whatever the bullet", () => {
    expect(plain("- a\n- b")).toBe("- a\n- b");
    expect(plain("* a\n* b")).toBe("- a\n- b");
    expect(plain("+ **a**\n+ b")).toBe("- a\n- b");
  });

  it("ordered lists are numbered from their start, even when the source repeats `1.`", () => {
    expect(plain("1. one\n2. two")).toBe("1. one\n2. two");
    expect(plain("1. one\n1. two\n1. three")).toBe("1. one\n2. two\n3. three");
    expect(plain("3. three\n4. four")).toBe("3. three\n4. four");
    expect(plain("0. zero\n1. one")).toBe("0. zero\n1. one");
  });

  it("a loose list (items separated by blank lines) still gives one line per item", () => {
    expect(plain("- a\n\n- b")).toBe("- a\n- b");
  });

  it("a nested list starts on its own line, indented under its item's text", () => {
    const text = plain("- a\n  - b\n  - c\n- d");
    expect(text).not.toContain("a- b");
    expect(text.split("\n")).toContain("- d");
    expect(text).toMatch(/^- a\n\s*- b\n\s*- c\n- d$/);
    expect(text).toBe("- a\n  - b\n  - c\n- d");
  });

  it("nesting goes as deep as the Markdown, under ordered and unordered items alike", () => {
    expect(plain("1. one\n   - a\n     1. deep\n2. two")).toBe("1. one\n   - a\n     1. deep\n2. two");
    expect(plain("> - a\n>   - b")).toBe("- a\n  - b");
  });

  it("every block of an item starts its own line under the item's text: paragraphs, quotes, code", () => {
    expect(plain("- a\n\n  b\n- c")).toBe("- a\n  b\n- c");
    expect(plain("- a\n  > quoted\n- b")).toBe("- a\n  quoted\n- b");
    expect(plain("- a\n\n  ```\n  code\n  ```\n- b")).toBe("- a\n  code\n- b");
  });

  it("a task's checkbox stays on its item's line", () => {
    expect(plain("- [ ] todo\n- [x] done\n  - sub")).toBe("- [ ] todo\n- [x] done\n  - sub");
  });

  it("fenced and indented code blocks are kept verbatim, markup characters included", () => {
    expect(plain("```\nconst a = **b**;\n```")).toBe("const a = **b**;");
    expect(plain("```js\n<b>&amp;</b>\n```")).toBe("<b>&amp;</b>");
    expect(plain("    indented *code*")).toBe("indented *code*");
  });

  it("a code span keeps its content literally (no entity decoding, no emphasis)", () => {
    expect(plain("`a **b** &amp; <i>`")).toBe("a **b** &amp; <i>");
  });

  it("tables become one line per row, cells separated by ` | `, inline Markdown stripped", () => {
    expect(plain("| a | **b** |\n|---|---|\n| 1 | [x](https://x.example) |")).toBe("a | b\n1 | x (https://x.example)");
  });

  it("thematic breaks and link reference definitions leave nothing behind", () => {
    expect(plain("above\n\n---\n\nbelow")).toBe("above\n\nbelow");
    expect(plain("[r]: https://x.example\n\ntext")).toBe("text");
  });

  it("backslash escapes give the literal character", () => {
    expect(plain("\\*not em\\* \\# not a heading \\[not a link\\]")).toBe("*not em* # not a heading [not a link]");
    expect(plain("\\<b\\> \\& \\\\")).toBe("<b> & \\");
  });

  it("the entities marked keeps in text are decoded back to characters", () => {
    expect(plain("Tom &amp; Jerry &lt;3 &gt; &quot;q&quot; &#39;s")).toBe('Tom & Jerry <3 > "q" \'s');
    expect(plain("a & b < c > d \" e ' f")).toBe("a & b < c > d \" e ' f");
  });

  it("an entity is decoded once, not twice", () => {
    expect(plain("&amp;lt;")).toBe("&lt;");
  });

  // The HTML part shows `&copy;` as ©; the text part shows the same (every name: test/markdown/references.test.ts).
  it("named entities other than the five are decoded too (the HTML part shows ©, so does the text part)", () => {
    expect(plain("&copy; 2025 &mdash; caf&eacute;")).toBe("© 2025 — café");
    expect(plain("# &laquo;Title&raquo;\n\n- &hellip; [&rarr; docs](https://x.example)")).toBe("«Title»\n\n- … → docs (https://x.example)");
  });

  it("numeric references are decoded too; a name not on the HTML Standard's list is text", () => {
    expect(plain("&#169; &#xA9; &#38;copy;")).toBe("© © &copy;");
    expect(plain("&notit; &copyright; &copy no semicolon")).toBe("&notit; &copyright; &copy no semicolon");
  });

  it("non-Latin text, emoji and combining marks pass through untouched", () => {
    for (const s of ["Grüße, Łódź", "日本語のテキスト", "👩‍👩‍👧‍👦 😀", "e\u0301", "שלום עולם"]) expect(plain(s)).toBe(s);
  });
});

describe("markdownToPlaintext: links are `text (url)`", () => {
  it("an inline link", () => {
    expect(plain("See [the docs](https://docs.example/a?b=1&c=2).")).toBe("See the docs (https://docs.example/a?b=1&c=2).");
  });

  it("formatting inside the link text is stripped", () => {
    expect(plain("[**bold** link](https://x.example)")).toBe("bold link (https://x.example)");
  });

  it("a link whose text is its URL is written once", () => {
    expect(plain("[https://x.example](https://x.example)")).toBe("https://x.example");
    expect(plain("<https://x.example/path>")).toBe("https://x.example/path");
    expect(plain("visit https://x.example/path now")).toBe("visit https://x.example/path now");
  });

  it("a link whose text looks like another URL shows both, so the real destination is visible", () => {
    expect(plain("[https://bank.example](https://evil.example)")).toBe("https://bank.example (https://evil.example)");
  });

  it("a link without text is its URL", () => {
    expect(plain("[](https://x.example)")).toBe("https://x.example");
  });

  it("reference links resolve to their definition", () => {
    expect(plain("[text][ref]\n\n[ref]: https://x.example/ref")).toBe("text (https://x.example/ref)");
    expect(plain("[ref]\n\n[ref]: https://x.example/ref")).toBe("ref (https://x.example/ref)");
  });

  it("mailto links and e-mail autolinks", () => {
    expect(plain("[write us](mailto:ops@example.com)")).toBe("write us (mailto:ops@example.com)");
    expect(plain("<ops@example.com>")).toBe("ops@example.com (mailto:ops@example.com)");
  });

  it("a `www.` autolink gets its http URL", () => {
    expect(plain("www.example.com")).toBe("www.example.com (http://www.example.com)");
  });

  it("link titles are dropped", () => {
    expect(plain('[a](https://x.example "the title")')).toBe("a (https://x.example)");
  });

  it.each([
    ["javascript:", "[Click](javascript:alert(1))"],
    ["upper-case javascript:", "[Click](JAVASCRIPT:alert(1))"],
    ["data:", "[Click](data:text/html,<script>alert(1)</script>)"],
    ["vbscript:", "[Click](vbscript:msgbox(1))"],
    ["file:", "[Click](file:///etc/passwd)"],
    ["ftp:", "[Click](ftp://files.example/x)"],
    ["protocol-relative", "[Click](//evil.example/x)"],
    ["relative", "[Click](/reset?code=1)"],
    ["fragment", "[Click](#top)"],
    ["reference to javascript:", "[Click][r]\n\n[r]: javascript:alert(1)"],
  ])("a refused URL (%s) leaves only the link text", (_, markdown) => {
    expect(plain(markdown)).toBe("Click");
  });

  it("images become `alt (url)`; without alt text, `image (url)`; with a refused URL, the alt text alone", () => {
    expect(plain("![logo](https://x.example/logo.png)")).toBe("logo (https://x.example/logo.png)");
    expect(plain("![](https://x.example/p.gif)")).toBe("image (https://x.example/p.gif)");
    expect(plain("![logo](javascript:alert(1))")).toBe("logo");
    expect(plain("![a & b](https://x.example/i.png)")).toBe("a & b (https://x.example/i.png)");
  });
});

describe("markdownToPlaintext: raw HTML is the author's text (docs/email.md)", () => {
  it("inline tags are kept as written, with the words between them", () => {
    expect(plain("Deploy <b>done</b> <i>now</i>")).toBe("Deploy <b>done</b> <i>now</i>");
  });

  it("an HTML block is kept as written, as the HTML part shows it: nothing is dropped", () => {
    expect(plain("<div>Database outage at 14:00</div>")).toBe("<div>Database outage at 14:00</div>");
    expect(plain("Before\n\n<div>\n<b>Outage</b> at <i>14:00</i>\n</div>\n\nAfter")).toBe(
      "Before\n\n<div>\n<b>Outage</b> at <i>14:00</i>\n</div>\n\nAfter",
    );
  });

  it("a title that starts with a script block keeps all of its text", () => {
    expect(plain("<script>alert(1)</script>T2")).toBe("<script>alert(1)</script>T2");
    expect(plain("<b></b><i></i>")).toBe("<b></b><i></i>");
  });

  it("an HTML block's text is kept as written: no Markdown and no entities are read inside it, as in the HTML part", () => {
    expect(plain("<div>\n**not bold** &amp; [x](https://x.example)\n</div>")).toBe("<div>\n**not bold** &amp; [x](https://x.example)\n</div>");
  });
});

describe("markdownToPlaintext: properties", () => {
  const words = fc.stringMatching(/^[A-Za-z0-9]{1,12}$/);

  it("never throws; the result is trimmed and never has more than one blank line in a row", () => {
    fc.assert(
      fc.property(markdownish, (markdown) => {
        const text = plain(markdown);
        expect(typeof text).toBe("string");
        expect(text).toBe(text.trim());
        expect(text).not.toMatch(/\n{3,}/);
      }),
      { numRuns: 500 },
    );
  });

  it("text with no Markdown or HTML in it comes out unchanged", () => {
    fc.assert(
      fc.property(fc.array(words, { minLength: 1, maxLength: 10 }), (ws) => {
        expect(plain(ws.join(" "))).toBe(ws.join(" "));
      }),
    );
  });

  it("any link to an allowed URL is `text (url)`", () => {
    const url = fc
      .tuple(fc.constantFrom("http", "https", "HTTPS"), fc.domain(), fc.stringMatching(/^[A-Za-z0-9/_=?.-]{0,20}$/))
      .map(([scheme, host, path]) => `${scheme}://${host}/${path}`);
    fc.assert(
      fc.property(words, url, (text, href) => {
        fc.pre(text !== href);
        expect(plain(`[${text}](${href})`)).toBe(`${text} (${href})`);
      }),
    );
  });

  it("a link to a refused URL never shows the URL, whatever separators hide its scheme", () => {
    const hidden = fc
      .tuple(
        fc.constantFrom("javascript", "JavaScript", "data", "vbscript", "file"),
        fc.constantFrom("", "\t", "\u0000", "\n", " "),
        fc.stringMatching(/^[a-z0-9]{1,10}$/),
      )
      .map(([scheme, sep, payload]) => `${scheme.slice(0, 4)}${sep}${scheme.slice(4)}:${payload}`);
    fc.assert(
      fc.property(words, hidden, (text, href) => {
        const out = plain(`[${text}](<${href}>)`);
        expect(out).not.toMatch(/\((javascript|data|vbscript|file|java|vbsc)/i);
      }),
    );
  });

  it("the author's text survives: every word and every raw tag of the input is in the plaintext, in order (docs/email.md)", () => {
    const tag = fc.constantFrom(
      "<script>alert(1)</script>",
      "<img src=x onerror=alert(1)>",
      "<iframe src=https://evil.example></iframe>",
      "<svg onload=alert(1)>",
      "<div>",
      "</div>",
      "<!-- c -->",
      "<style>p{}</style>",
    );
    const piece = fc.oneof(
      words.map((w) => ({ kept: w, text: w })),
      tag.map((t) => ({ kept: t, text: t })),
      fc.constantFrom("**", "_", "# ", "> ", "- ", "\n", "\n\n", " ").map((m) => ({ kept: "", text: m })),
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 20 }), (pieces) => {
        // Words are separated from what follows, so a marker never joins two of them into one.
        const markdown = pieces.map((p) => (p.kept === "" ? p.text : `${p.text} `)).join("");
        const out = plain(markdown);
        let from = 0;
        for (const { kept } of pieces) {
          if (kept === "") continue;
          const at = out.indexOf(kept, from);
          expect(at, `${JSON.stringify(kept)} of ${JSON.stringify(markdown)} in ${JSON.stringify(out)}`).toBeGreaterThanOrEqual(0);
          from = at + kept.length;
        }
      }),
      { numRuns: 500 },
    );
  });
});
