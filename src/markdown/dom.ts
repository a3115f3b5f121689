import { markdownToTree, type RichNode } from "./tree";

/**
 * The browser's side of tree.ts: Markdown as DOM nodes for the embed, and the named-reference decoder both browser
 * renderers share. Elements are made with `createElement`, text with text nodes; no string is ever parsed as markup
 * (docs/dashboard.md, "Notifications as rich text").
 */

const decoded = new Map<string, string>();

/**
 * `&copy;` → ©, with the browser's own table of names. Only a reference whose name is letters and digits reaches the
 * parser, alone, so what it parses is a single character reference and never markup.
 */
export function decodeReferences(text: string): string {
  return text.replace(/&([A-Za-z][A-Za-z0-9]{0,31});/g, (whole, name: string) => {
    let value = decoded.get(name);
    if (value === undefined) {
      let parsed = whole;
      try {
        parsed = new DOMParser().parseFromString(`&${name};`, "text/html").body.textContent ?? whole;
      } catch {
        // A host page that enforces Trusted Types refuses a string here (docs/embed.md, "Content-Security-Policy"):
        // the reference then stays as written, as an unknown name does.
      }
      // A known name is one or two characters. Anything longer is a browser reading a known prefix (`&notit;` as
      // "¬it;"), which the e-mail does not do (references.ts): such a name stays as written there and here.
      value = [...parsed].length <= 2 ? parsed : whole;
      decoded.set(name, value);
    }
    return value;
  });
}

/** A link from a notification opens in a new tab, and the page it opens learns nothing of the inbox. */
export const LINK_ATTRIBUTES = { target: "_blank", rel: "noopener noreferrer" } as const;

function toNode(node: RichNode): Node {
  if (typeof node === "string") return document.createTextNode(node);
  const element = document.createElement(node.tag);
  if (node.tag === "a" && node.href !== undefined) {
    element.setAttribute("href", node.href);
    element.setAttribute("target", LINK_ATTRIBUTES.target);
    element.setAttribute("rel", LINK_ATTRIBUTES.rel);
  }
  if (node.tag === "ol" && node.start !== undefined) element.setAttribute("start", String(node.start));
  for (const child of node.children) element.appendChild(toNode(child));
  return element;
}

/** The notification's Markdown as a fragment of safe elements. */
export function markdownFragment(markdown: string): DocumentFragment {
  const fragment = document.createDocumentFragment();
  for (const node of markdownToTree(markdown, decodeReferences)) fragment.appendChild(toNode(node));
  return fragment;
}
