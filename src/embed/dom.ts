import { iconPath } from "../inbox/icons";
import { safeHref } from "../markdown/links";

/**
 * Building blocks of the embed's shadow DOM. Everything is created with createElement and text nodes
 * (notification Markdown too, through src/markdown/dom.ts): no markup is ever parsed, so a notification's text
 * cannot become HTML, and a host page that enforces Trusted Types (`require-trusted-types-for 'script'`) needs no
 * policy for the embed (docs/embed.md, "Content-Security-Policy").
 */

type Child = Node | string | false | undefined;

/** An element with string attributes (`true` for an empty one) and children; strings become text nodes. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Record<string, string | boolean | undefined> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === true) element.setAttribute(name, "");
    else if (typeof value === "string") element.setAttribute(name, value);
  }
  for (const child of children) {
    // appendChild, not append: the Workers types this project also loads give `append` another signature.
    if (child !== false && child !== undefined && child !== "")
      element.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
  }
  return element;
}

const SVG = "http://www.w3.org/2000/svg";

/** A decorative 24×24 icon (hidden from assistive technology: the button around it carries the name). */
function icon(path: string): SVGSVGElement {
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("focusable", "false");
  const shape = document.createElementNS(SVG, "path");
  shape.setAttribute("d", path);
  svg.appendChild(shape);
  return svg;
}

export const bellIcon = () =>
  icon(
    "M12 22a2.5 2.5 0 0 0 2.45-2h-4.9A2.5 2.5 0 0 0 12 22Zm7-6V11a7 7 0 0 0-5.5-6.84V3.5a1.5 1.5 0 0 0-3 0v.66A7 7 0 0 0 5 11v5l-2 2v1h18v-1l-2-2Z",
  );
export const checkIcon = () => icon("M9.5 16.2 5.3 12l-1.4 1.4 5.6 5.6L20.1 8.4 18.7 7Z");
export const archiveIcon = () => icon("M3 4h18v4H3V4Zm1 5h16v11H4V9Zm5 2v2h6v-2H9Z");

/**
 * An action's URL as an `href`, or undefined: resolved against Herald's origin (actions may be paths), then held to
 * the one link policy every renderer applies (src/markdown/links.ts), so a `javascript:` or `data:` URL from a
 * notification never becomes a link.
 */
export function actionHref(url: string, server: string): string | undefined {
  // Not URL.parse: the build targets browsers from before it (docs/embed.md).
  try {
    return safeHref(new URL(url, server).href);
  } catch {
    return undefined;
  }
}

/**
 * A notification's `icon` as the API gives it: an http(s) URL is shown as an image (the host page's `img-src`
 * decides whether it loads, docs/embed.md), anything else as the dashboard's glyph for that name (src/inbox/icons.ts).
 */
export function itemIcon(name: string): Element {
  const href = /^https?:/i.test(name) ? safeHref(name) : undefined;
  return href ? h("img", { src: href, alt: "", referrerpolicy: "no-referrer", loading: "lazy" }) : icon(iconPath(name));
}

const STEPS: [number, Intl.RelativeTimeFormatUnit][] = [
  [60, "second"],
  [60, "minute"],
  [24, "hour"],
  [7, "day"],
  [4.35, "week"],
  [12, "month"],
  [Number.POSITIVE_INFINITY, "year"],
];

/** "5 minutes ago", in the page's language (the `lang` of the document, else the browser's). */
export function relativeTime(iso: string, now: number): string {
  const locale = document.documentElement.lang || undefined;
  let value = (Date.parse(iso) - now) / 1000;
  if (Number.isNaN(value)) return "";
  for (const [size, unit] of STEPS) {
    if (Math.abs(value) < size) return new Intl.RelativeTimeFormat(locale, { numeric: "auto" }).format(Math.round(value), unit);
    value /= size;
  }
  return "";
}

export function fullTime(iso: string): string {
  const date = new Date(iso);
  return Number.isNaN(date.getTime())
    ? ""
    : date.toLocaleString(document.documentElement.lang || undefined, { dateStyle: "medium", timeStyle: "short" });
}
