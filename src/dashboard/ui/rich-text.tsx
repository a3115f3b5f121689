import { createElement, type VNode } from "preact";
import { useMemo } from "preact/hooks";
import { decodeReferences, LINK_ATTRIBUTES } from "../../markdown/dom";
import { markdownToTree, type RichNode } from "../../markdown/tree";

function toVNode(node: RichNode, key: number): VNode | string {
  if (typeof node === "string") return node;
  const props: Record<string, string | number> = { key };
  if (node.tag === "a" && node.href !== undefined) Object.assign(props, { href: node.href }, LINK_ATTRIBUTES);
  if (node.tag === "ol" && node.start !== undefined) props.start = node.start;
  return createElement(node.tag, props, ...node.children.map(toVNode));
}

/**
 * A notification's Markdown as rich text: the safe tree of markdown/tree.ts as Preact elements, whose text Preact
 * sets as text, never as markup (docs/dashboard.md, "Notifications as rich text").
 */
export function RichText({ markdown, class: className }: { markdown: string; class?: string }) {
  const nodes = useMemo(() => markdownToTree(markdown, decodeReferences), [markdown]);
  return <div class={className}>{nodes.map(toVNode)}</div>;
}
