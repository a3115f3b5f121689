import { Lexer, type Token, type Tokens } from "marked";
import { safeHref } from "./links";

/**
 * Markdown → a small tree of safe elements, for the browser inbox (the dashboard and the embed, docs/dashboard.md,
 * "Notifications as rich text"). The tree can only hold the tags below, an `href` the link policy allowed (links.ts)
 * and an ordered list's `start`; text stays text. Each browser renderer turns it into elements with
 * `createElement` and text nodes, never through `innerHTML`, so nothing a sender writes can become markup.
 *
 * It follows the e-mail's HTML (html.ts) where it can: raw HTML is shown as written, images become links labelled
 * with their alt text, and refused links keep only their text. Headings become strong paragraphs, since an item's
 * text sits under the item's own title, and tables become one line per row.
 */
type RichTag = "p" | "strong" | "em" | "del" | "code" | "pre" | "a" | "ul" | "ol" | "li" | "blockquote" | "br" | "hr";

interface RichElement {
  tag: RichTag;
  /** Only on `a`: a URL `safeHref` returned. */
  href?: string;
  /** Only on `ol`: the first item's number, when it is not 1. */
  start?: number;
  children: RichNode[];
}

export type RichNode = string | RichElement;

/**
 * What a named character reference (`&copy;`) reads as. marked's lexer turns numeric references into characters but
 * leaves named ones as written; the browser renderers decode them with the browser's own table, so the Worker's copy
 * of that table (entities.ts) stays out of the browser bundles.
 */
export type DecodeReferences = (text: string) => string;

export function markdownToTree(markdown: string, decode: DecodeReferences = (text) => text): RichNode[] {
  return blocks(new Lexer({ gfm: true }).lex(markdown), decode);
}

function element(tag: RichTag, children: RichNode[], extra: Pick<RichElement, "href" | "start"> = {}): RichElement {
  return { tag, ...extra, children };
}

function blocks(tokens: Token[], decode: DecodeReferences): RichNode[] {
  return tokens.flatMap((token) => block(token, decode));
}

function block(token: Token, decode: DecodeReferences): RichNode[] {
  switch (token.type) {
    case "paragraph":
      return [element("p", inline((token as Tokens.Paragraph).tokens, decode))];
    case "heading":
      return [element("p", [element("strong", inline((token as Tokens.Heading).tokens, decode))])];
    case "blockquote":
      return [element("blockquote", blocks((token as Tokens.Blockquote).tokens, decode))];
    case "list": {
      const list = token as Tokens.List;
      const start = typeof list.start === "number" && list.start !== 1 ? { start: list.start } : {};
      const items = list.items.map((item) => element("li", listItem(item, decode)));
      return [element(list.ordered ? "ol" : "ul", items, start)];
    }
    case "code":
      return [element("pre", [element("code", [(token as Tokens.Code).text])])];
    case "table": {
      const table = token as Tokens.Table;
      const row = (cells: Tokens.TableCell[]) =>
        element(
          "p",
          cells.flatMap((cell, i) => [...(i > 0 ? [" | "] : []), ...inline(cell.tokens, decode)]),
        );
      return [row(table.header), ...table.rows.map(row)];
    }
    case "hr":
      return [element("hr", [])];
    case "html":
      return [element("p", [(token as Tokens.HTML).text.trimEnd()])];
    case "text": {
      const text = token as Tokens.Text;
      return [element("p", text.tokens ? inline(text.tokens, decode) : [decode(text.text)])];
    }
    default:
      // `space` and `def` (a link reference's definition) show nothing.
      return [];
  }
}

/** A tight item's text comes as a `text` block; it stays inline, so the item is not a paragraph. */
function listItem(item: Tokens.ListItem, decode: DecodeReferences): RichNode[] {
  return item.tokens.flatMap((token): RichNode[] => {
    if (token.type === "checkbox") return [(token as Tokens.Checkbox).checked ? "☑ " : "☐ "];
    if (token.type === "text" && !item.loose) {
      const text = token as Tokens.Text;
      return text.tokens ? inline(text.tokens, decode) : [decode(text.text)];
    }
    return block(token, decode);
  });
}

function inline(tokens: Token[] | undefined, decode: DecodeReferences): RichNode[] {
  if (!tokens) return [];
  return tokens.flatMap((token): RichNode[] => {
    switch (token.type) {
      case "strong":
      case "em":
      case "del":
        return [element(token.type, inline((token as Tokens.Strong | Tokens.Em | Tokens.Del).tokens, decode))];
      case "codespan":
        return [element("code", [(token as Tokens.Codespan).text])];
      case "link": {
        const link = token as Tokens.Link;
        const text = inline(link.tokens, decode);
        const href = safeHref(link.href);
        return href ? [element("a", text.length > 0 ? text : [href], { href })] : text;
      }
      case "image": {
        const image = token as Tokens.Image;
        const href = safeHref(image.href);
        const label = decode(image.text) || image.href;
        return href ? [element("a", [label], { href })] : [decode(image.text)];
      }
      case "br":
        return [element("br", [])];
      case "escape":
        return [(token as Tokens.Escape).text];
      case "html":
        return [(token as Tokens.HTML).text];
      case "text": {
        const text = token as Tokens.Text;
        return text.tokens ? inline(text.tokens, decode) : [decode(text.text)];
      }
      default:
        return "raw" in token && typeof token.raw === "string" ? [token.raw] : [];
    }
  });
}
