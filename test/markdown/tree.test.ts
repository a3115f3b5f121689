import * as fc from "fast-check";
import { describe, expect, it } from "vitest";
import { markdownToTree, type RichNode } from "../../src/markdown/tree";
import { markdownish } from "../fixtures/arbitraries";

// markdownToTree feeds the browser inbox, the dashboard's and the embed's (docs/dashboard.md, "Notifications as rich
// text"): Markdown's own elements, links only under the one link policy (docs/email.md), everything else as text.

const TAGS = new Set(["p", "strong", "em", "del", "code", "pre", "a", "ul", "ol", "li", "blockquote", "br", "hr"]);

function walk(nodes: RichNode[], visit: (node: Exclude<RichNode, string>) => void): void {
  for (const node of nodes) {
    if (typeof node === "string") continue;
    visit(node);
    walk(node.children, visit);
  }
}

describe("markdownToTree", () => {
  it("links, bare URLs, emphasis, code and lists become their elements", () => {
    expect(markdownToTree("See [the log](https://ci.example.com/42), *now* `x`")).toEqual([
      {
        tag: "p",
        children: [
          "See ",
          { tag: "a", href: "https://ci.example.com/42", children: ["the log"] },
          ", ",
          { tag: "em", children: ["now"] },
          " ",
          { tag: "code", children: ["x"] },
        ],
      },
    ]);
    expect(markdownToTree("https://example.org/a")).toEqual([
      { tag: "p", children: [{ tag: "a", href: "https://example.org/a", children: ["https://example.org/a"] }] },
    ]);
    expect(markdownToTree("3. three\n4. **four**")).toEqual([
      {
        tag: "ol",
        start: 3,
        children: [
          { tag: "li", children: ["three"] },
          { tag: "li", children: [{ tag: "strong", children: ["four"] }] },
        ],
      },
    ]);
  });

  it("a link the policy refuses keeps its text, without an anchor", () => {
    expect(markdownToTree("[run](javascript:alert(1)) [rel](/x) [data](data:text/html,x)")).toEqual([
      { tag: "p", children: ["run", " ", "rel", " ", "data"] },
    ]);
  });

  it("raw HTML is text as written; an image is a link labelled with its alt text, never loaded", () => {
    expect(markdownToTree("<b onclick=x>hi</b>")).toEqual([{ tag: "p", children: ["<b onclick=x>", "hi", "</b>"] }]);
    expect(markdownToTree("![chart](https://img.example/c.png)")).toEqual([
      { tag: "p", children: [{ tag: "a", href: "https://img.example/c.png", children: ["chart"] }] },
    ]);
  });

  it("named references go through the decoder it is given; numeric ones are already characters", () => {
    const decode = (text: string) => text.replace("&copy;", "©");
    expect(markdownToTree("&copy; &#106;", decode)).toEqual([{ tag: "p", children: ["© j"] }]);
  });

  it("property: only Markdown's own tags, hrefs the link policy allows, and nothing else on an element", () => {
    fc.assert(
      fc.property(markdownish, (markdown) => {
        walk(markdownToTree(markdown), (node) => {
          expect(TAGS).toContain(node.tag);
          expect(Object.keys(node).filter((key) => !["tag", "children", "href", "start"].includes(key))).toEqual([]);
          if (node.href !== undefined) {
            expect(node.tag).toBe("a");
            expect(node.href).toMatch(/^(https?:\/\/[^/\\]|mailto:)/i);
            expect(node.href).not.toMatch(/[\u0000-\u0020\u007f-\u009f]/);
          }
          if (node.start !== undefined) expect(node.tag).toBe("ol");
        });
      }),
      { numRuns: 1000 },
    );
  });
});
