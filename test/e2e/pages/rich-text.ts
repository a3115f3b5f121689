import { h, render } from "preact";
import { RichText } from "../../../src/dashboard/ui/rich-text";
import { markdownFragment } from "../../../src/markdown/dom";

// Bundled by test/e2e/dashboard-inbox.test.ts into a blank page in Chromium: the two browser renderers of a
// notification's Markdown, the dashboard's (Preact) and the embed's (DOM), side by side, so the hostile-Markdown
// property checks what each one really puts in the document (docs/dashboard.md, "Notifications as rich text").

interface Shape {
  tag: string;
  attributes: [string, string][];
}

function shapes(root: Element): Shape[] {
  return [...root.querySelectorAll("*")].map((element) => ({
    tag: element.tagName.toLowerCase(),
    attributes: [...element.attributes].map((attribute): [string, string] => [attribute.name, attribute.value]),
  }));
}

function renderBoth(markdown: string): { dashboard: Shape[]; embed: Shape[]; text: [string, string] } {
  const dashboard = document.createElement("div");
  render(h(RichText, { markdown, tabbable: true }), dashboard);
  const embed = document.createElement("div");
  embed.appendChild(markdownFragment(markdown));
  return { dashboard: shapes(dashboard), embed: shapes(embed), text: [dashboard.textContent ?? "", embed.textContent ?? ""] };
}

Object.assign(window, { renderBoth });
