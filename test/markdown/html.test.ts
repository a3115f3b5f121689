import * as fc from "fast-check";
import { describe, expect, it } from "vitest";
import { escapeHtml, markdownToHtml as html } from "../../src/markdown/html";
import { safeHref } from "../../src/markdown/links";
import { markdownish, NASTY_STRINGS } from "../fixtures/arbitraries";

// The HTML part of every e-mail (src/markdown/html.ts) and the one link policy every renderer applies
// (src/markdown/links.ts, docs/email.md): raw HTML is shown as text, only http/https/mailto become links, images
// become links. test/notifications/email-content.test.ts covers the classic refused-link payloads; this file covers the rest.

/** Decodes what escapeHtml produces (numeric entities), to check it loses nothing. */
const decode = (s: string) =>
  s
    .replace(/&(lt|gt|quot|amp);/g, (_, name: string) => ({ lt: "&#60;", gt: "&#62;", quot: "&#34;", amp: "&#38;" })[name] ?? "")
    .replace(/&#(\d+);/g, (_, n: string) => String.fromCharCode(Number(n)));

describe("escapeHtml", () => {
  it("escapes the five characters that can open a tag, an attribute or an entity", () => {
    expect(escapeHtml(`<a href="x" title='y'>&</a>`)).toBe("&#60;a href=&#34;x&#34; title=&#39;y&#39;&#62;&#38;&#60;/a&#62;");
  });

  it("leaves everything else alone", () => {
    for (const s of ["plain", "é 😀 日本", "a=b;c", "`~!@#$%^*()"]) expect(escapeHtml(s)).toBe(s);
  });

  it("escapes an entity's ampersand, so `&lt;` stays visible text", () => {
    expect(escapeHtml("&lt;")).toBe("&#38;lt;");
  });

  it("property: the output has no markup characters left, and decodes back to the input", () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: "binary", maxLength: 60 }), fc.constantFrom(...NASTY_STRINGS)), (s) => {
        const out = escapeHtml(s);
        expect(out).not.toMatch(/[<>"']/);
        expect(out).not.toMatch(/&(?!#\d+;)/);
        expect(decode(out)).toBe(s);
      }),
    );
  });
});

describe("safeHref: the link policy", () => {
  it.each([
    "https://example.com",
    "http://example.com/a?b=1&c=2#d",
    "HTTPS://EXAMPLE.COM",
    "HtTp://example.com",
    "mailto:ops@example.com",
    "MAILTO:ops@example.com",
    "https://user:pass@example.com:8443/x",
    "https://[::1]/x",
    "https://xn--bcher-kva.example/",
  ])("allows %s unchanged", (url) => {
    expect(safeHref(url)).toBe(url);
  });

  it.each([
    ["javascript:", "javascript:alert(1)"],
    ["JavaScript mixed case", "JaVaScRiPt:alert(1)"],
    ["javascript: posing as a URL", "javascript://example.com/%0aalert(1)"],
    ["data:", "data:text/html;base64,PHNjcmlwdD4="],
    ["vbscript:", "vbscript:msgbox(1)"],
    ["file:", "file:///etc/passwd"],
    ["ftp:", "ftp://files.example.com/"],
    ["tel:", "tel:+15555550100"],
    ["blob:", "blob:https://example.com/uuid"],
    ["protocol-relative", "//evil.example/x"],
    ["absolute path", "/reset?code=1"],
    ["relative path", "reset"],
    ["fragment", "#top"],
    ["query", "?a=1"],
    ["empty", ""],
    ["a scheme without //", "https:evil.example"],
    ["a scheme with one slash", "https:/evil.example"],
    ["three slashes", "https:///evil.example"],
    ["a backslash host", "https://\\evil.example"],
    ["backslashes instead of slashes", "https:\\\\evil.example"],
    ["no host at all", "http://"],
    ["a scheme that starts with a digit", "1http://example.com"],
  ])("refuses %s", (_, url) => {
    expect(safeHref(url)).toBeUndefined();
  });

  it("control characters and whitespace browsers ignore cannot hide a script scheme", () => {
    for (const url of [
      "java\tscript:alert(1)",
      "java\nscript:alert(1)",
      "java\rscript:alert(1)",
      "\u0000javascript:alert(1)",
      " javascript:alert(1)",
      "\u0001\u001fjavascript:alert(1)",
      "javas\u007fcript:alert(1)",
      "javas\u0085cript:alert(1)",
      "javascript\t:alert(1)",
    ]) {
      expect(safeHref(url), JSON.stringify(url)).toBeUndefined();
    }
  });

  it("characters that are not ignored by browsers break the scheme instead (zero-width, full-width look-alikes)", () => {
    for (const url of ["java\u200bscript:alert(1)", "ｊavascript:alert(1)", "https\u200b://example.com", "ｈttps://example.com"]) {
      expect(safeHref(url), JSON.stringify(url)).toBeUndefined();
    }
  });

  it("an allowed URL comes back without the control characters and spaces it was written with", () => {
    expect(safeHref("  https://example.com")).toBe("https://example.com");
    expect(safeHref("ht\ttps://example.com/\n")).toBe("https://example.com/");
  });

  it("property: whatever it returns is an http(s) URL with a host, or a mailto, with no control characters or spaces", () => {
    const candidates = fc.oneof(
      fc.string({ unit: "binary", maxLength: 40 }),
      fc.constantFrom(...NASTY_STRINGS),
      fc
        .tuple(
          fc.constantFrom("http", "https", "mailto", "javascript", "data", "HTTP", "ftp"),
          fc.constantFrom(":", "://", ":/", ":\\\\", "://\\"),
          fc.string({ unit: "binary", maxLength: 20 }),
        )
        .map(([a, b, c]) => a + b + c),
    );
    fc.assert(
      fc.property(candidates, (url) => {
        const href = safeHref(url);
        if (href === undefined) return;
        expect(href).toMatch(/^(https?:\/\/[^/\\]|mailto:)/i);
        expect(href).not.toMatch(/[\u0000-\u0020\u007f-\u009f]/);
      }),
      { numRuns: 1000 },
    );
  });
});

describe("markdownToHtml: the usual Markdown", () => {
  it("paragraphs, emphasis, headings, lists, quotes, code and tables", () => {
    expect(html("**b** _i_ ~~d~~ `c`")).toBe("<p><strong>b</strong> <em>i</em> <del>d</del> <code>c</code></p>\n");
    expect(html("# T")).toBe("<h1>T</h1>\n");
    expect(html("- a\n- b")).toBe("<ul>\n<li>a</li>\n<li>b</li>\n</ul>\n");
    expect(html("> q")).toBe("<blockquote>\n<p>q</p>\n</blockquote>\n");
    expect(html("| a |\n|---|\n| 1 |")).toContain("<td>1</td>");
  });

  it("code is escaped, never interpreted", () => {
    expect(html("`<b>`")).toBe("<p><code>&lt;b&gt;</code></p>\n");
    expect(html("```\n<script>alert(1)</script>\n```")).toBe("<pre><code>&lt;script&gt;alert(1)&lt;/script&gt;\n</code></pre>\n");
  });

  it("a fence's language cannot break out of its class attribute", () => {
    const out = html('```"><img src=x onerror=alert(1)>\ncode\n```');
    expect(out).not.toMatch(/<img/i);
    expect(out).not.toMatch(/"\s*onerror/i);
  });

  it("text special characters are escaped", () => {
    expect(html("a < b & c > d")).toBe("<p>a &lt; b &amp; c &gt; d</p>\n");
  });
});

describe("markdownToHtml: raw HTML is shown as text, never interpreted", () => {
  it.each([
    ["script", "<script>alert(1)</script>"],
    ["img with an event handler", "<img src=x onerror=alert(1)>"],
    ["iframe", '<iframe src="https://evil.example"></iframe>'],
    ["svg onload", "<svg onload=alert(1)>"],
    ["a javascript: anchor", '<a href="javascript:alert(1)">click</a>'],
    ["style", "<style>body{display:none}</style>"],
    ["form", '<form action="https://evil.example"><input name=p></form>'],
    ["comment", "<!-- hidden -->"],
    ["meta refresh", '<meta http-equiv="refresh" content="0;url=https://evil.example">'],
    ["inline in a sentence", "hello <img src=x onerror=alert(1)> world"],
    ["inside a link text", "[<img src=x onerror=alert(1)>](https://x.example)"],
    ["inside a heading", "# <script>alert(1)</script>"],
    ["inside a list", "- <script>alert(1)</script>"],
    ["inside a table", "| a |\n|---|\n| <script>alert(1)</script> |"],
  ])("%s", (_, markdown) => {
    const out = html(markdown);
    expect(out).not.toMatch(/<(script|img|iframe|svg|style|form|input|meta|!--)/i);
    expect(out).not.toMatch(/<a\s[^>]*javascript/i);
    // Shown, escaped: the reader sees what was written.
    expect(decode(out)).toContain(markdown.match(/<[^>]*>/)?.[0] ?? "");
  });
});

describe("markdownToHtml: links and images follow the link policy", () => {
  it("a link's URL is attribute-escaped, so a quote cannot add an attribute", () => {
    const out = html('[a](<https://x.example/" onmouseover="alert(1)>)');
    expect(out).toBe('<p><a href="https://x.example/&#34;onmouseover=&#34;alert(1)">a</a></p>\n');
    expect(out).not.toMatch(/\sonmouseover=/);
  });

  it("query strings keep their ampersands, escaped", () => {
    expect(html("[a](https://x.example/?a=1&b=<2>)")).toBe('<p><a href="https://x.example/?a=1&#38;b=&#60;2&#62;">a</a></p>\n');
  });

  it("link titles are dropped (no title attribute to escape)", () => {
    expect(html('[a](https://x.example "t\\" onmouseover=\\"x")')).toBe('<p><a href="https://x.example">a</a></p>\n');
  });

  it("bare URLs, www. and e-mail autolinks become links", () => {
    expect(html("see https://x.example/a")).toBe('<p>see <a href="https://x.example/a">https://x.example/a</a></p>\n');
    expect(html("www.example.com")).toBe('<p><a href="http://www.example.com">www.example.com</a></p>\n');
    expect(html("ops@example.com")).toBe('<p><a href="mailto:ops@example.com">ops@example.com</a></p>\n');
  });

  it("a refused link keeps its formatted text, without an anchor", () => {
    expect(html("[**Verify**](javascript:alert(1))")).toBe("<p><strong>Verify</strong></p>\n");
  });

  it("an image is never loaded: it is a link labelled with its alt text, or with its URL when it has none", () => {
    expect(html("![logo](https://x.example/l.png)")).toBe('<p><a href="https://x.example/l.png">logo</a></p>\n');
    expect(html("![](https://x.example/p.gif)")).toBe('<p><a href="https://x.example/p.gif">https://x.example/p.gif</a></p>\n');
  });

  it("an image's alt text is escaped once", () => {
    expect(html('![a"b<c>&d](https://x.example/i.png)')).toBe('<p><a href="https://x.example/i.png">a&#34;b&#60;c&#62;&#38;d</a></p>\n');
  });

  it("an image with a refused URL is its alt text only", () => {
    expect(html("![<b>x</b>](javascript:alert(1))")).toBe("<p>&#60;b&#62;x&#60;/b&#62;</p>\n");
    expect(html("![pixel](data:image/gif;base64,R0lGOD)")).toBe("<p>pixel</p>\n");
  });
});

describe("markdownToHtml: properties", () => {
  const ALLOWED_TAGS = new Set([
    "p",
    "a",
    "em",
    "strong",
    "del",
    "code",
    "pre",
    "ul",
    "ol",
    "li",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "blockquote",
    "hr",
    "br",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "input",
  ]);
  const ALLOWED_ATTRIBUTES = new Set(["href", "class", "align", "start", "type", "disabled", "checked"]);

  it("never throws, and whatever it is given yields only Markdown's own tags, safe attributes and allowed links", () => {
    fc.assert(
      fc.property(markdownish, (markdown) => {
        const out = html(markdown);
        for (const [, name = ""] of out.matchAll(/<\/?([A-Za-z][A-Za-z0-9-]*)/g))
          expect(ALLOWED_TAGS, `tag <${name}> in ${out}`).toContain(name.toLowerCase());
        for (const [, tag = ""] of out.matchAll(/<([A-Za-z][^>]*)>/g)) {
          for (const [, attr = ""] of tag.matchAll(/\s([^\s=]+)(?==|\s|$)/g))
            expect(ALLOWED_ATTRIBUTES, `attribute ${attr} in ${out}`).toContain(attr.toLowerCase());
        }
        for (const [, href = ""] of out.matchAll(/href="([^"]*)"/g)) expect(decode(href)).toMatch(/^(https?:\/\/[^/\\]|mailto:)/i);
        expect(out).not.toMatch(/<input(?![^>]*type="checkbox")/);
      }),
      { numRuns: 1000 },
    );
  });
});
