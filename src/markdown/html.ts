import { Marked, type Tokens } from "marked";
import { safeHref } from "./links";
import { escapeUnknownReferences } from "./references";

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}

/**
 * Markdown → HTML for e-mails. Raw HTML is shown as text, never interpreted, so a custom message cannot inject
 * markup; links follow the one link policy (links.ts), and images become links instead of remote loads.
 */
const markdownHtml = new Marked({ gfm: true, async: false });
markdownHtml.use({
  renderer: {
    html: ({ text }) => escapeHtml(text),
    link(this: { parser: { parseInline(tokens: Tokens.Generic[]): string } }, { href, tokens }: Tokens.Link) {
      const text = this.parser.parseInline(tokens);
      const safe = safeHref(href);
      return safe ? `<a href="${escapeHtml(safe)}">${text}</a>` : text;
    },
    image({ href, text }: Tokens.Image) {
      const safe = safeHref(href);
      const label = escapeHtml(text || href);
      return safe ? `<a href="${escapeHtml(safe)}">${label}</a>` : label;
    },
  },
});

export function markdownToHtml(markdown: string): string {
  return escapeUnknownReferences(markdownHtml.parse(markdown) as string);
}
