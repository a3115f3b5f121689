import { Lexer, type Token, type Tokens } from "marked";
import { safeHref } from "./links";
import { decodeNamedReferences } from "./references";

/**
 * Markdown → plain text for clients that cannot render Markdown (docs/api.md (Notification delivery): `plaintext` strips Markdown, links become
 * `text (url)`). Parsed by marked's lexer, so emphasis, headings, lists and escapes are understood, not regex-guessed.
 * A URL the link policy refuses (links.ts) is left out: only its text remains. `targets: false` leaves every link's
 * target out, for an e-mail's Subject (docs/email.md, "Nothing a user writes reaches a header or a live link").
 */
export function markdownToPlaintext(markdown: string, { targets = true }: { targets?: boolean } = {}): string {
  const blocks = new Lexer({ gfm: true }).lex(markdown);
  return renderBlocks(blocks, targets)
    .replace(/\n{3,}/g, "\n\n")
    .trim();
}

function renderBlocks(tokens: Token[], targets: boolean): string {
  return tokens.map((token) => renderBlock(token, targets)).join("");
}

function renderBlock(token: Token, targets: boolean): string {
  switch (token.type) {
    case "heading":
    case "paragraph":
      return `${renderInline((token as Tokens.Heading | Tokens.Paragraph).tokens, targets)}\n\n`;
    case "blockquote":
      return renderBlocks((token as Tokens.Blockquote).tokens, targets);
    case "list": {
      const list = token as Tokens.List;
      const start = typeof list.start === "number" ? list.start : 1;
      const items = list.items.map((item, i) => {
        const marker = `${list.ordered ? `${start + i}.` : "-"} `;
        // Every line after the first is indented to the item's text, so a sub-list reads as nested.
        return marker + renderListItem(item, targets).replace(/\n(?=.)/g, `\n${" ".repeat(marker.length)}`);
      });
      return `${items.join("\n")}\n\n`;
    }
    case "code":
      return `${(token as Tokens.Code).text}\n\n`;
    case "table": {
      const table = token as Tokens.Table;
      const row = (cells: Tokens.TableCell[]) => cells.map((cell) => renderInline(cell.tokens, targets)).join(" | ");
      return `${[row(table.header), ...table.rows.map(row)].join("\n")}\n\n`;
    }
    case "hr":
    case "space":
    case "def":
      return "\n";
    case "html":
      // Raw HTML is the author's text: shown as written, as the e-mail's HTML part shows it (docs/email.md), never
      // dropped and never read as markup.
      return `${(token as Tokens.HTML).text.trim()}\n\n`;
    case "text": {
      const text = token as Tokens.Text;
      return text.tokens ? renderInline(text.tokens, targets) : text.text;
    }
    default:
      return renderInline([token], targets);
  }
}

/**
 * An item's blocks, one per line: its own text is a `text` block without a line break of its own, so without this a
 * nested list would be glued to it. A task's checkbox stays on the line of the text it belongs to.
 */
function renderListItem(item: Tokens.ListItem, targets: boolean): string {
  const lines: string[] = [];
  let checkbox = "";
  for (const token of item.tokens) {
    if (token.type === "checkbox") {
      checkbox = (token as Tokens.Checkbox).checked ? "[x] " : "[ ] ";
      continue;
    }
    const text = renderBlock(token, targets)
      .replace(/\n{3,}/g, "\n\n")
      .trim();
    if (text === "") continue;
    lines.push(checkbox + text);
    checkbox = "";
  }
  return lines.join("\n") || checkbox.trim();
}

function renderInline(tokens: Token[] | undefined, targets: boolean): string {
  if (!tokens) return "";
  return tokens
    .map((token): string => {
      switch (token.type) {
        case "strong":
        case "em":
        case "del":
          return renderInline((token as Tokens.Strong | Tokens.Em | Tokens.Del).tokens, targets);
        case "codespan":
          return (token as Tokens.Codespan).text;
        case "link": {
          const link = token as Tokens.Link;
          const text = renderInline(link.tokens, targets);
          const href = safeHref(link.href);
          if (!href || (!targets && text)) return text;
          return text && text !== link.href ? `${text} (${href})` : href;
        }
        case "image": {
          const image = token as Tokens.Image;
          const href = safeHref(image.href);
          return href && targets ? `${image.text || "image"} (${href})` : image.text;
        }
        case "br":
          return "\n";
        case "escape":
          return (token as Tokens.Escape).text;
        case "html":
          return (token as Tokens.HTML).text;
        case "text": {
          const text = token as Tokens.Text;
          return text.tokens ? renderInline(text.tokens, targets) : decodeNamedReferences(text.text);
        }
        default:
          return "raw" in token && typeof token.raw === "string" ? token.raw : "";
      }
    })
    .join("");
}
