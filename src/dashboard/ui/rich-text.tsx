import { createElement, type VNode } from "preact";
import { useMemo } from "preact/hooks";
import { decodeReferences, LINK_ATTRIBUTES } from "../../markdown/dom";
import { markdownToTree, type RichNode } from "../../markdown/tree";

function toVNode(node: RichNode, key: number, tabIndex: number | undefined): VNode | string {
  if (typeof node === "string") return node;
  const props: Record<string, string | number> = { key };
  if (node.tag === "a" && node.href !== undefined) {
    Object.assign(props, { href: node.href }, LINK_ATTRIBUTES);
    if (tabIndex !== undefined) props.tabIndex = tabIndex;
  }
  if (node.tag === "ol" && node.start !== undefined) props.start = node.start;
  return createElement(node.tag, props, ...node.children.map((child, i) => toVNode(child, i, tabIndex)));
}

/**
 * A notification's Markdown as rich text: the safe tree of markdown/tree.ts as Preact elements, whose text Preact
 * sets as text, never as markup (docs/dashboard.md, "Notifications as rich text"). `inline` keeps a one-paragraph
 * text (a title) inside the element around it; `tabbable` false takes its links out of the Tab order.
 */
export function RichText({
  markdown,
  class: className,
  inline = false,
  tabbable,
}: {
  markdown: string;
  class?: string;
  inline?: boolean;
  tabbable?: boolean;
}) {
  const nodes = useMemo(() => {
    const tree = markdownToTree(markdown, decodeReferences);
    const only = tree[0];
    return inline && tree.length === 1 && typeof only === "object" && only.tag === "p" ? only.children : tree;
  }, [markdown, inline]);
  const tabIndex = tabbable === undefined ? undefined : tabbable ? 0 : -1;
  const children = nodes.map((node, i) => toVNode(node, i, tabIndex));
  return inline ? <span class={className}>{children}</span> : <div class={className}>{children}</div>;
}
