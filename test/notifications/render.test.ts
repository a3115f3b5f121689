import * as fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { TemplateRow } from "../../src/db/schema";
import { stripControls } from "../../src/notifications/email/mime";
import { emailText, escapeMarkdown, fill, parseActions, type RenderContext, renderTemplate } from "../../src/notifications/render";
import { anyText, NASTY_STRINGS } from "../fixtures/arbitraries";

// The logic-less template renderer (docs/api.md, Placeholders): placeholders are substituted in one pass, label values
// are Markdown-escaped in system templates and verbatim in the custom one, action URLs get URL-encoded values, and
// each template renders to Markdown, plain text and HTML.

const ctx = (over: Partial<RenderContext> = {}): RenderContext => ({
  user: { name: "Ada Lovelace", username: "ada", email: "ada@example.com" },
  labels: {},
  data: {},
  baseUrl: "https://herald.example.com",
  ...over,
});

const template = (over: Partial<TemplateRow> = {}): TemplateRow => ({
  id: "00000000-0000-4000-8000-000000000000",
  name: "Test template",
  titleTemplate: "",
  bodyTemplate: "",
  actions: "[]",
  group: "Test Events",
  method: "",
  kind: "system",
  enabledByDefault: true,
  mandatory: false,
  externalOnly: false,
  emailWhenUnreadAfterMs: 0,
  ...over,
});

const verbatim = (s: string) => s;

/** Text with bare URLs, `www.` hosts and addresses in it, the shapes GFM turns into links. */
const bareUrlText = fc
  .array(
    fc.oneof(
      fc.constantFrom("https://", "http://", "HTTP://", "ftp://", "www.", "mailto:", "@", ".", "/", "_", "*", " ", "<", ">", "(", ")"),
      fc.stringMatching(/^[a-z0-9-]{1,8}$/),
      fc.domain(),
    ),
    { minLength: 1, maxLength: 8 },
  )
  .map((parts) => parts.join(""));

describe("fill: placeholders", () => {
  it("substitutes every documented placeholder", () => {
    const out = fill(
      "{{base_url}}|{{.UserName}}|{{.UserUsername}}|{{.UserEmail}}|{{.Labels.who}}|{{.Data.count}}",
      ctx({ labels: { who: "Grace" }, data: { count: 3 } }),
      verbatim,
    );
    expect(out).toBe("https://herald.example.com|Ada Lovelace|ada|ada@example.com|Grace|3");
  });

  it("allows spaces inside the braces, not between the braces", () => {
    expect(fill("{{ .UserUsername }} {{   base_url\t}}", ctx(), verbatim)).toBe("ada https://herald.example.com");
    expect(fill("{ {.UserUsername}}", ctx(), verbatim)).toBe("{ {.UserUsername}}");
  });

  it("{{base_url}} loses one trailing slash, so `{{base_url}}/path` has one", () => {
    expect(fill("{{base_url}}/inbox", ctx({ baseUrl: "https://herald.example.com/" }), verbatim)).toBe("https://herald.example.com/inbox");
    expect(fill("{{base_url}}/inbox", ctx({ baseUrl: "https://herald.example.com/sub/" }), verbatim)).toBe("https://herald.example.com/sub/inbox");
  });

  it("{{base_url}} is never escaped: it is configuration, not user data", () => {
    expect(fill("{{base_url}}", ctx({ baseUrl: "https://herald.example.com/a_b" }), escapeMarkdown)).toBe("https://herald.example.com/a_b");
    expect(fill("{{base_url}}", ctx(), encodeURIComponent)).toBe("https://herald.example.com");
  });

  it("{{.UserName}} falls back to the username when the name is empty", () => {
    expect(fill("Hi {{.UserName}}", ctx({ user: { name: "", username: "ada", email: "a@example.com" } }), verbatim)).toBe("Hi ada");
  });

  it("a label or data key that was not given becomes empty", () => {
    expect(fill("[{{.Labels.missing}}][{{.Data.missing}}]", ctx(), verbatim)).toBe("[][]");
  });

  it("data values: strings as they are, null and undefined empty, everything else as JSON", () => {
    const data = { s: "text", n: 1.5, b: false, z: null, u: undefined, a: [1, "x"], o: { k: "v" } };
    expect(fill("{{.Data.s}}|{{.Data.n}}|{{.Data.b}}|{{.Data.z}}|{{.Data.u}}|{{.Data.a}}|{{.Data.o}}", ctx({ data }), verbatim)).toBe(
      'text|1.5|false|||[1,"x"]|{"k":"v"}',
    );
  });

  it("keys are case-sensitive and made of letters, digits and `_`", () => {
    const c = ctx({ labels: { Name: "upper", name: "lower", a_1: "ok" } });
    expect(fill("{{.Labels.Name}} {{.Labels.name}} {{.Labels.a_1}}", c, verbatim)).toBe("upper lower ok");
  });

  it("anything else in braces is left as written", () => {
    for (const t of [
      "{{.Foo}}",
      "{{.username}}",
      "{{.Labels.a-b}}",
      "{{.Labels.}}",
      "{{.Labels}}",
      "{{7*7}}",
      "{{ }}",
      "{{.Data.x.y}}",
      "{{{.UserUsername}}}",
    ]) {
      const out = fill(t, ctx({ labels: { a: "A" }, data: { x: { y: 1 } } }), verbatim);
      if (t === "{{{.UserUsername}}}") expect(out).toBe("{ada}");
      else expect(out, t).toBe(t);
    }
  });

  it("one pass: a value that holds a placeholder is never expanded (docs/asvs.md 1.3.7)", () => {
    const c = ctx({ labels: { a: "{{.UserEmail}}", b: "{{.Labels.a}}" }, data: { d: "{{base_url}}" } });
    for (const escapeFn of [verbatim, encodeURIComponent]) {
      const out = fill("{{.Labels.a}} {{.Labels.b}} {{.Data.d}}", c, escapeFn);
      expect(out).not.toContain("ada@example.com");
      expect(out).not.toContain("herald.example.com");
    }
    expect(fill("{{.Labels.a}}", c, verbatim)).toBe("{{.UserEmail}}");
    const rendered = renderTemplate(template({ titleTemplate: "{{.Labels.a}}", bodyTemplate: "{{.Labels.b}} {{.Data.d}}" }), c);
    expect(rendered.title).toBe("{{.UserEmail}}");
    expect(rendered.body).toBe("{{.Labels.a}} {{base_url}}");
    const custom = renderTemplate(template({ kind: "custom", titleTemplate: "{{.Labels.a}}", bodyTemplate: "{{.Labels.b}}" }), c);
    expect(custom.title).toBe("{{.UserEmail}}");
    expect(custom.body).toBe("{{.Labels.a}}");
  });

  it("labels named like Object.prototype members, but present, are used like any other", () => {
    const labels = JSON.parse('{"__proto__": "p", "constructor": "c", "toString": "t"}') as Record<string, string>;
    expect(fill("{{.Labels.__proto__}} {{.Labels.constructor}} {{.Labels.toString}}", ctx({ labels }), verbatim)).toBe("p c t");
  });

  // Only keys the sender gave are read: Object.prototype's members are not labels (docs/api.md, Placeholders).
  it("a label or data key named like an Object.prototype member that was not given becomes empty", () => {
    for (const key of ["constructor", "__proto__", "toString", "hasOwnProperty", "valueOf"]) {
      for (const escapeFn of [verbatim, escapeMarkdown, encodeURIComponent]) {
        expect(fill(`[{{.Labels.${key}}}]`, ctx(), escapeFn), key).toBe("[]");
        expect(fill(`[{{.Data.${key}}}]`, ctx(), escapeFn), key).toBe("[]");
      }
    }
  });
});

describe("escapeMarkdown: label values are data, not Markdown", () => {
  it("backslash-escapes every character Markdown or HTML could interpret", () => {
    expect(escapeMarkdown("\\`*_{}[]()#+-.!|<>~&\"'")).toBe("\\\\\\`\\*\\_\\{\\}\\[\\]\\(\\)\\#\\+\\-\\.\\!\\|\\<\\>\\~\\&\\\"\\'");
  });

  it("escapes `:` too, which GFM reads as the start of a bare URL", () => {
    expect(escapeMarkdown("https://2130706433/login")).toBe("https\\://2130706433/login");
    expect(escapeMarkdown("mailto:a@b")).toBe("mailto\\:a@b");
  });

  it("leaves letters, digits, spaces and other text alone", () => {
    for (const s of ["Ada Lovelace", "é ü 😀 日本", "a=b;c?d@e%f^g$h/i"]) expect(escapeMarkdown(s)).toBe(s);
  });

  it("removes line breaks and other control characters, so a value cannot start a new Markdown block", () => {
    expect(escapeMarkdown("a\r\n# heading")).toBe("a \\# heading");
    expect(escapeMarkdown("a\n\n- item")).toBe("a \\- item");
    expect(escapeMarkdown("a\u0000b\u001b[31mc\u0085d")).toBe("a b \\[31mc d");
  });

  it("a label cannot inject a heading, list, quote, link, image, emphasis or HTML into a system template", () => {
    const hostile = [
      "# Heading",
      "- list",
      "1. list",
      "> quote",
      "[click](mailto:evil@example.com)",
      "![pixel](/p.gif)",
      "**bold**",
      "<img src=x onerror=alert(1)>",
      "<script>alert(1)</script>",
      "`code`",
      "| a | b |",
      "~~x~~",
      "&lt;b&gt;",
      "\\*",
    ];
    for (const value of hostile) {
      const r = renderTemplate(template({ titleTemplate: "{{.Labels.v}}", bodyTemplate: "{{.Labels.v}}" }), ctx({ labels: { v: value } }));
      expect(r.title, value).toBe(value);
      expect(r.body, value).toBe(value);
      expect(r.html, value).toMatch(/^<p>[^<]*<\/p>\n$/); // one paragraph of text, nothing else
    }
  });

  it("property: a system template shows any label value exactly as given (controls collapsed to a space, ends trimmed)", () => {
    const value = fc.oneof(anyText, fc.string({ unit: "grapheme-ascii", maxLength: 40 }), bareUrlText).filter((s) => s.length < 2000);
    fc.assert(
      fc.property(value, (v) => {
        const r = renderTemplate(template({ titleTemplate: "{{.Labels.v}}", bodyTemplate: "Name: {{.Labels.v}}." }), ctx({ labels: { v } }));
        const shown = stripControls(v).trim();
        expect(r.title).toBe(shown);
        expect(r.body).toBe(`Name: ${stripControls(v)}.`);
      }),
      { numRuns: 500 },
    );
  });

  // GFM reads a bare `https://…` as a link whatever backslashes follow the scheme, so escaping `.` was not enough: the
  // escaped `:` is what keeps it text (docs/api.md, Placeholders). A display name ({{.UserName}}) can hold any of these.
  it("a label holding a bare URL is shown as written and never becomes a link", () => {
    for (const v of [
      "https://example.com/x",
      "https://2130706433/login",
      "[click](https://2130706433/login)",
      "HTTPS://EXAMPLE.COM",
      "http://a_b.example/c_d*e*",
      "ftp://files.example/x",
      "www.example.com",
      "mailto:ops@example.com",
      "ops@example.com",
      "<https://example.com>",
      "see https://example.com/x, then www.example.org.",
    ]) {
      const r = renderTemplate(
        template({ titleTemplate: "{{.Labels.v}}", bodyTemplate: "Hi {{.Labels.v}}\n\n**{{.Labels.v}}** by {{.UserName}}" }),
        ctx({ labels: { v }, user: { name: v, username: "ada", email: "ada@example.com" } }),
      );
      expect(r.title).toBe(v);
      expect(r.body).toBe(`Hi ${v}\n\n${v} by ${v}`);
      expect(r.html).not.toContain("<a ");
      expect(r.bodyMarkdown, "the Markdown given to the inbox and webhooks holds no scheme a GFM renderer would link").not.toMatch(
        /[a-z]:\/\/|mailto:|www\./i,
      );
    }
  });

  it("template-authored links keep working: a bare {{base_url}} link, and a label in a link's destination", () => {
    const r = renderTemplate(
      template({ bodyTemplate: "See {{base_url}}/inbox or [the report]({{.Labels.url}})." }),
      ctx({ labels: { url: "https://ci.example/r_1?a=1&b=2" } }),
    );
    expect(r.html).toBe(
      '<p>See <a href="https://herald.example.com/inbox">https://herald.example.com/inbox</a> or <a href="https://ci.example/r_1?a=1&#38;b=2">the report</a>.</p>\n',
    );
    expect(r.body).toBe("See https://herald.example.com/inbox or the report (https://ci.example/r_1?a=1&b=2).");
    const refused = renderTemplate(template({ bodyTemplate: "[Open]({{.Labels.url}})" }), ctx({ labels: { url: "javascript:alert(1)" } }));
    expect(refused.html).toBe("<p>Open</p>\n");
  });
});

describe("renderTemplate: system and custom templates", () => {
  it("renders Markdown, plain text and HTML from one template", () => {
    const r = renderTemplate(
      template({
        titleTemplate: 'Account "{{.Labels.account}}" created',
        bodyTemplate: "Hi {{.UserName}},\n\nAccount **{{.Labels.account}}** was created.",
      }),
      ctx({ labels: { account: "grace_h" } }),
    );
    expect(r.titleMarkdown).toBe('Account "grace\\_h" created');
    expect(r.title).toBe('Account "grace_h" created');
    expect(r.bodyMarkdown).toBe("Hi Ada Lovelace,\n\nAccount **grace\\_h** was created.");
    expect(r.body).toBe("Hi Ada Lovelace,\n\nAccount grace_h was created.");
    expect(r.html).toBe("<p>Hi Ada Lovelace,</p>\n<p>Account <strong>grace_h</strong> was created.</p>\n");
  });

  it("titles and bodies are trimmed after filling", () => {
    const r = renderTemplate(
      template({ titleTemplate: "  {{.Labels.t}}  ", bodyTemplate: "\n\n{{.Labels.b}}\n\n" }),
      ctx({ labels: { t: "T", b: "B" } }),
    );
    expect(r.titleMarkdown).toBe("T");
    expect(r.bodyMarkdown).toBe("B");
  });

  it("a missing label leaves an empty place, not a crash or a placeholder", () => {
    const r = renderTemplate(template({ titleTemplate: "Deleted {{.Labels.name}}", bodyTemplate: "By **{{.Labels.initiator}}**." }), ctx());
    expect(r.title).toBe("Deleted");
    expect(r.body).toBe("By ****.");
  });

  it("the custom template's title and message are the sender's own Markdown", () => {
    const r = renderTemplate(
      template({ kind: "custom", titleTemplate: "{{.Labels.custom_title}}", bodyTemplate: "{{.Labels.custom_message}}" }),
      ctx({ labels: { custom_title: "**Deploy** done", custom_message: "# Notes\n\n- one\n- [log](https://ci.example/1)" } }),
    );
    expect(r.titleMarkdown).toBe("**Deploy** done");
    expect(r.title).toBe("Deploy done");
    expect(r.body).toBe("Notes\n\n- one\n- log (https://ci.example/1)");
    expect(r.html).toContain("<h1>Notes</h1>");
    expect(r.html).toContain('<a href="https://ci.example/1">log</a>');
  });

  it("even in the custom template raw HTML stays text and refused links stay dead", () => {
    const r = renderTemplate(
      template({ kind: "custom", titleTemplate: "{{.Labels.custom_title}}", bodyTemplate: "{{.Labels.custom_message}}" }),
      ctx({
        labels: { custom_title: "t", custom_message: "<script>alert(1)</script>\n\n[x](javascript:alert(1)) ![p](https://tracker.example/p.gif)" },
      }),
    );
    expect(r.html).not.toMatch(/<script|<img|javascript:/i);
    expect(r.html).toContain('<a href="https://tracker.example/p.gif">p</a>');
  });
});

describe("actions", () => {
  it("parseActions keeps only well-formed {label, url} entries, and refuses anything that is not a JSON array", () => {
    expect(parseActions('[{"label":"Open","url":"https://x.example"}]')).toEqual([{ label: "Open", url: "https://x.example" }]);
    expect(parseActions('[null, 1, "x", [], {}, {"label":1,"url":"u"}, {"label":"l"}, {"url":"u"}, {"label":"ok","url":"u"}]')).toEqual([
      { label: "ok", url: "u" },
    ]);
    for (const json of ["", "not json", "{}", '{"label":"a","url":"b"}', "null", "42", '"[]"', "[", '[{"label":"a","url":"b"}'])
      expect(parseActions(json), json).toEqual([]);
  });

  it("parseActions is not fooled by prototype keys", () => {
    expect(parseActions('[{"__proto__":{"label":"x","url":"y"}}]')).toEqual([]);
  });

  it("action URLs get URL-encoded values but a raw base_url; action labels are filled verbatim", () => {
    const r = renderTemplate(
      template({
        bodyTemplate: "b",
        actions: JSON.stringify([
          { label: "Reset for {{.Labels.who}}", url: "{{base_url}}/reset?otp={{.Labels.otp}}&u={{.UserUsername}}&e={{.UserEmail}}" },
        ]),
      }),
      ctx({ labels: { who: "A & B <c>", otp: "12 34&x=1#f" } }),
    );
    expect(r.actions).toEqual([
      { label: "Reset for A & B <c>", url: "https://herald.example.com/reset?otp=12%2034%26x%3D1%23f&u=ada&e=ada%40example.com" },
    ]);
    expect(r.html).toContain(
      '<p><a href="https://herald.example.com/reset?otp=12%2034%26x%3D1%23f&#38;u=ada&#38;e=ada%40example.com">Reset for A &#38; B &#60;c&#62;</a></p>',
    );
  });

  it("a label value cannot turn an action into a different URL", () => {
    const r = renderTemplate(
      template({ actions: JSON.stringify([{ label: "Go", url: "{{.Labels.target}}" }]) }),
      ctx({ labels: { target: "javascript:alert(1)" } }),
    );
    expect(r.actions[0]?.url).toBe("javascript%3Aalert(1)");
    expect(r.html).toBe("<p>Go</p>");
    const r2 = renderTemplate(
      template({ actions: JSON.stringify([{ label: "Go", url: "{{base_url}}/x/{{.Labels.p}}" }]) }),
      ctx({ labels: { p: "../../@evil.example/" } }),
    );
    expect(r2.actions[0]?.url).toBe("https://herald.example.com/x/..%2F..%2F%40evil.example%2F");
  });

  it("an action whose URL the link policy refuses is shown as its label, without a link", () => {
    const r = renderTemplate(
      template({
        actions: JSON.stringify([
          { label: "<b>Run</b>", url: "javascript:alert(1)" },
          { label: "Rel", url: "/relative" },
        ]),
      }),
      ctx(),
    );
    expect(r.html).toBe("<p>&#60;b&#62;Run&#60;/b&#62;</p><p>Rel</p>");
  });

  it("the HTML part is the body followed by one paragraph per action", () => {
    const r = renderTemplate(
      template({
        bodyTemplate: "Body",
        actions: JSON.stringify([
          { label: "A", url: "https://a.example" },
          { label: "B", url: "mailto:b@example.com" },
        ]),
      }),
      ctx(),
    );
    expect(r.html).toBe('<p>Body</p>\n<p><a href="https://a.example">A</a></p><p><a href="mailto:b@example.com">B</a></p>');
  });

  it("malformed actions JSON renders no actions instead of failing the notification", () => {
    const r = renderTemplate(template({ bodyTemplate: "Body", actions: "{oops" }), ctx());
    expect(r.actions).toEqual([]);
    expect(r.html).toBe("<p>Body</p>\n");
  });
});

describe("emailText: the e-mail's text part", () => {
  it("is the plain body and a final line break when there are no actions", () => {
    const r = renderTemplate(template({ bodyTemplate: "**Hello** [docs](https://d.example)" }), ctx());
    expect(emailText(r)).toBe("Hello docs (https://d.example)\n");
  });

  it("lists each action as `label: url` after a blank line", () => {
    const r = renderTemplate(
      template({
        bodyTemplate: "Body",
        actions: JSON.stringify([
          { label: "Open", url: "{{base_url}}/a" },
          { label: "Help", url: "https://h.example" },
        ]),
      }),
      ctx(),
    );
    expect(emailText(r)).toBe("Body\n\nOpen: https://herald.example.com/a\nHelp: https://h.example\n");
  });
});

describe("renderTemplate: properties", () => {
  const safeKey = fc.stringMatching(/^[a-z][a-z0-9_]{0,8}$/).filter((k) => !(k in Object.prototype));
  const placeholder = fc.oneof(
    fc.constantFrom("{{base_url}}", "{{.UserName}}", "{{.UserUsername}}", "{{.UserEmail}}", "{{.Foo}}", "{{ .Labels.a }}", "{{.Data.d}}"),
    safeKey.map((k) => `{{.Labels.${k}}}`),
    safeKey.map((k) => `{{.Data.${k}}}`),
  );
  const templateText = fc
    .array(fc.oneof(placeholder, fc.string({ maxLength: 10 }), fc.constantFrom("**", "\n\n", "# ", "- ", "[", "](", ")")), { maxLength: 12 })
    .map((p) => p.join(""));
  const labels = fc.dictionary(fc.oneof(safeKey, fc.constant("a")), fc.oneof(anyText, fc.constantFrom(...NASTY_STRINGS)), { maxKeys: 6 });
  const data = fc.dictionary(fc.oneof(safeKey, fc.constant("d")), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 });
  const actions = fc.oneof(
    fc
      .array(
        fc.record({
          label: templateText,
          url: fc.oneof(templateText, fc.constantFrom("{{base_url}}/x?a={{.Labels.a}}", "javascript:{{.Labels.a}}", "{{.Labels.a}}")),
        }),
        { maxLength: 3 },
      )
      .map((a) => JSON.stringify(a)),
    fc.string({ maxLength: 20 }),
  );

  it("never throws on any template, label, data and user, and never emits a live script or a refused link", () => {
    fc.assert(
      fc.property(
        fc.constantFrom<"system" | "custom">("system", "custom"),
        templateText,
        templateText,
        actions,
        labels,
        data,
        fc.record({ name: anyText, username: fc.string({ maxLength: 10 }), email: fc.string({ maxLength: 20 }) }),
        (kind, titleTemplate, bodyTemplate, actionsJson, l, d, user) => {
          const r = renderTemplate(template({ kind, titleTemplate, bodyTemplate, actions: actionsJson }), {
            user,
            labels: l,
            data: d,
            baseUrl: "https://herald.example.com/",
          });
          expect(r.html).not.toMatch(/<(script|img|iframe|svg|style|object|embed)\b/i);
          expect(r.html).not.toMatch(/<[^>]*\son\w+=/i);
          for (const [, href = ""] of r.html.matchAll(/href="([^"]*)"/g)) expect(href).toMatch(/^(https?:\/\/[^/\\]|mailto:)/i);
          expect(typeof emailText(r)).toBe("string");
        },
      ),
      { numRuns: 300 },
    );
  });

  it("in a system template, no label value can add a link or an HTML element to the HTML part", () => {
    const value = fc.oneof(
      anyText,
      bareUrlText,
      fc.constantFrom(...NASTY_STRINGS, "[x](mailto:a@evil.example)", "<mailto:a@evil.example>", "www.evil.example", "a@evil.example"),
    );
    fc.assert(
      fc.property(value, (v) => {
        const r = renderTemplate(template({ bodyTemplate: "Account **{{.Labels.v}}** by {{.Labels.v}}" }), ctx({ labels: { v } }));
        for (const tag of r.html.match(/<[a-z]+/gi) ?? []) expect(["<p", "<strong"]).toContain(tag);
      }),
      { numRuns: 500 },
    );
  });
});
