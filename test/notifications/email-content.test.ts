import { env } from "cloudflare:workers";
import * as fc from "fast-check";
import PostalMime from "postal-mime";
import { describe, expect, it } from "vitest";
import { database } from "../../src/db/client";
import { notificationTemplates } from "../../src/db/schema";
import { markdownToHtml } from "../../src/markdown/html";
import { markdownToPlaintext } from "../../src/markdown/plaintext";
import { messageIdFor } from "../../src/notifications/channels/smtp";
import { composeEmail } from "../../src/notifications/email/mime";
import { dotStuff } from "../../src/notifications/email/smtp-client";
import { NotificationsMessages } from "../../src/notifications/messages";
import { emailText, renderTemplate } from "../../src/notifications/render";
import { NASTY_STRINGS } from "../fixtures/arbitraries";
import { call, createUser, expectError } from "../helpers";

// Nothing a user writes reaches a header or a live link (docs/email.md): the MIME layer encodes every header value,
// and one link policy (src/markdown/links.ts) decides which URLs become links in every rendering.

describe("link policy: only http, https and mailto survive (docs/email.md)", () => {
  const refused: [string, string][] = [
    ["inline javascript:", "[Verify](javascript:alert(1))"],
    ["mixed-case scheme", "[Verify](JaVaScRiPt:alert(1))"],
    ["reference link", "[Verify][r]\n\n[r]: jAvAsCrIpT:alert(document.cookie)"],
    ["data: URL", "[Verify](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)"],
    ["vbscript:", "[Verify](vbscript:msgbox(1))"],
    ["protocol-relative", "[Verify](//evil.example/login)"],
    ["relative path", "[Verify](/reset?code=1)"],
    ["autolink with a script scheme", "<javascript:alert(1)>"],
    ["entity-encoded scheme", "[Verify](&#106;avascript:alert(1))"],
  ];

  for (const [what, markdown] of refused) {
    it(`${what}: text in HTML and in plain text, never a link`, () => {
      const html = markdownToHtml(markdown);
      expect(html).not.toMatch(/<a\b/);
      expect(html).not.toMatch(/href=/i);
      // In plain text a link is `text (url)`: a refused URL never gets that far.
      expect(markdownToPlaintext(markdown)).not.toMatch(/\((javascript|data|vbscript|\/)/i);
    });
  }

  it("http, https (any case) and mailto stay links", () => {
    expect(markdownToHtml("[a](https://example.com/x?y=1&z=2)")).toContain('<a href="https://example.com/x?y=1&#38;z=2">a</a>');
    expect(markdownToHtml("[b](HTTP://EXAMPLE.COM)")).toContain('<a href="HTTP://EXAMPLE.COM">b</a>');
    expect(markdownToHtml("[c](mailto:ops@example.com)")).toContain('<a href="mailto:ops@example.com">c</a>');
    expect(markdownToPlaintext("[a](https://example.com/x)")).toBe("a (https://example.com/x)");
  });

  it("a remote image is shown as a link, never loaded; an image with a refused URL is its alt text", () => {
    const html = markdownToHtml("![pixel](http://tracker.example/p.gif)");
    expect(html).not.toMatch(/<img/i);
    expect(html).toContain('<a href="http://tracker.example/p.gif">pixel</a>');
    expect(markdownToHtml("![x](javascript:alert(1))")).not.toMatch(/<a|<img|javascript/i);
    expect(markdownToPlaintext("![pixel](http://tracker.example/p.gif)")).toBe("pixel (http://tracker.example/p.gif)");
  });
});

describe("N1 titles become e-mail subjects (docs/email.md)", () => {
  it("a title with CR/LF (the header-injection payload) or any control character → 400, nothing sent", async () => {
    const user = await createUser();
    const payloads = [
      "Alert\r\nReply-To: attacker@evil.example\r\nContent-Type: text/html\r\n\r\n<a href=//evil>Verify</a>",
      "tab\there",
      "bell\u0007",
      "next line\u0085",
    ];
    for (const title of payloads) {
      const body = await expectError(
        await call("POST", "/notifications/custom", { token: user.token, body: { content: { title, message: "x" } } }),
        400,
        NotificationsMessages.invalidCustomBody,
      );
      expect(body.validations?.map((v) => v.field)).toContain("content.title");
    }
    const { n } = (await env.DB.prepare("SELECT count(*) AS n FROM notification_messages WHERE user_id = ?")
      .bind(user.id)
      .first<{ n: number }>()) ?? { n: -1 };
    expect(n).toBe(0);
  });

  it("a message may still span lines", async () => {
    const user = await createUser();
    const res = await call("POST", "/notifications/custom", {
      token: user.token,
      body: { content: { title: "Deploy", message: "line one\nline two\r\n\r\n- item" } },
    });
    expect(res.status).toBe(204);
  });
});

const HEADER_NAMES = ["From", "To", "Subject", "Date", "Message-ID", "MIME-Version", "Content-Type"];

const hostile = fc.oneof(
  fc.constantFrom(
    ...NASTY_STRINGS,
    "Alert\r\nReply-To: attacker@evil.example\r\nContent-Type: text/html\r\n\r\n<a href=//evil>Verify</a>",
    "\nBcc: everyone@example.com",
    "[Verify](javascript:alert(1))",
    "[Verify][r]\n\n[r]: JaVaScRiPt:alert(1)",
    "![](http://tracker.example/p.gif)",
    "[x](data:text/html,<script>alert(1)</script>)",
    "<img src=x onerror=alert(1)>",
    "=?UTF-8?B?SGVsbG8=?=",
    ".\r\n.\r\nQUIT",
    "通知".repeat(80),
  ),
  fc.string({ unit: "binary", maxLength: 200 }),
  fc.string({ unit: fc.constantFrom("\r", "\n", "\u0000", "\u0085", "a", ":", " ", "<", "[", "]", "(", ")", "j"), maxLength: 60 }),
);

describe("property: hostile labels in every template never reach a header or a live link (docs/email.md)", () => {
  it("renders and composes safely for any label values", async () => {
    const templates = await database(env.DB).select().from(notificationTemplates);
    expect(templates.length).toBeGreaterThanOrEqual(11);
    const labelNames = [
      ...new Set(
        templates.flatMap((t) =>
          [...`${t.titleTemplate} ${t.bodyTemplate} ${t.actions}`.matchAll(/\.Labels\.([A-Za-z0-9_]+)/g)].map((m) => m[1] ?? ""),
        ),
      ),
    ];
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...templates),
        fc.dictionary(fc.constantFrom(...labelNames), hostile),
        hostile,
        async (template, labels, name) => {
          const rendered = renderTemplate(template, {
            user: { name, username: "alice", email: "alice@example.net" },
            labels,
            data: {},
            baseUrl: "https://herald.example.com",
          });
          const id = "0193b3a2-0000-7000-8000-000000000000";
          const raw = composeEmail({
            from: { name: "Herald", address: "alerts@example.com" },
            to: "alice@example.net",
            subject: rendered.title,
            text: emailText(rendered),
            html: rendered.html,
            messageId: messageIdFor(id, "alerts@example.com"),
            date: new Date(0),
          });
          const [head = "", ...rest] = raw.split("\r\n\r\n");
          expect(rest.length).toBeGreaterThan(0);
          const names: string[] = [];
          for (const line of head.split("\r\n")) {
            if (line.startsWith(" ") || line.startsWith("\t")) continue;
            names.push(line.slice(0, line.indexOf(":")));
          }
          expect(names).toEqual(HEADER_NAMES);
          for (const line of raw.split("\r\n")) expect(line.length).toBeLessThanOrEqual(998);
          expect(raw).not.toMatch(/[^\r]\n|\r[^\n]/);
          for (const word of head.match(/=\?UTF-8\?B\?[^?]*\?=/g) ?? []) expect(word.length).toBeLessThanOrEqual(75);

          const parsed = await PostalMime.parse(raw);
          expect(parsed.headers.map((h) => h.key)).toEqual(HEADER_NAMES.map((h) => h.toLowerCase()));
          expect(parsed.subject ?? "").not.toMatch(/[\r\n]/);
          expect(parsed.messageId).toBe(`<${id}@example.com>`);
          const html = parsed.html ?? "";
          expect(html).not.toMatch(/<(img|script|iframe)\b/i);
          expect(html).not.toMatch(/<[^>]*\son\w+=/i);
          for (const [, href = ""] of html.matchAll(/href="([^"]*)"/g)) expect(href).toMatch(/^(https?:\/\/|mailto:)/i);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe("SMTP DATA framing", () => {
  it("a line that starts with a dot gets a second one, so the message cannot end DATA early", () => {
    expect(dotStuff(".\r\nQUIT\r\n..x\r\nend")).toBe("..\r\nQUIT\r\n...x\r\nend\r\n");
    expect(dotStuff("a\n.b")).toBe("a\r\n..b\r\n");
  });
});
