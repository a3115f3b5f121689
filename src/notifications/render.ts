import type { TemplateRow } from "../db/schema";
import { escapeHtml, markdownToHtml } from "../markdown/html";
import { safeHref } from "../markdown/links";
import { markdownToPlaintext } from "../markdown/plaintext";
import { stripControls } from "./email/mime";

export interface RenderContext {
  user: { name: string; username: string; email: string };
  labels: Record<string, string>;
  data: Record<string, unknown>;
  baseUrl: string;
}

export interface RenderedNotification {
  titleMarkdown: string;
  bodyMarkdown: string;
  title: string;
  body: string;
  html: string;
  actions: { label: string; url: string }[];
}

type Escape = (value: string) => string;

const PLACEHOLDER = /\{\{\s*(base_url|\.UserName|\.UserUsername|\.UserEmail|\.Labels\.([A-Za-z0-9_]+)|\.Data\.([A-Za-z0-9_]+))\s*\}\}/g;

/**
 * Label values are data, not Markdown: control characters (line breaks among them) are removed, so a value can start
 * neither a header nor a Markdown block, and every character Markdown or HTML could interpret is escaped. That
 * includes `:`: GFM turns a bare `https://…` into a link whatever backslashes follow its scheme, and would send it
 * to the backslashed URL (a browser reads `\` as `/`), so only an escaped colon keeps a URL in a value as text, for
 * every GFM renderer of the Markdown (`www.` and e-mail autolinks already stop at the escaped `.`).
 */
export const escapeMarkdown: Escape = (value) => stripControls(value).replace(/[\\`*_{}[\]()#+\-.!|<>~&"':]/g, (ch) => `\\${ch}`);
const verbatim: Escape = (value) => value;

/**
 * The logic-less renderer: placeholders are substituted, nothing else is evaluated (no loops, no functions), so a
 * template can never run code or reach data it was not given: only a label or datum the sender gave is read (own
 * keys, so `{{.Labels.constructor}}` is empty, not Object's constructor), and a missing one becomes "". A
 * placeholder that is not one of these is left as written.
 */
export function fill(template: string, ctx: RenderContext, escapeValue: Escape): string {
  return template.replace(PLACEHOLDER, (_, name: string, label?: string, datum?: string) => {
    if (name === "base_url") return ctx.baseUrl.replace(/\/$/, "");
    if (name === ".UserName") return escapeValue(ctx.user.name || ctx.user.username);
    if (name === ".UserUsername") return escapeValue(ctx.user.username);
    if (name === ".UserEmail") return escapeValue(ctx.user.email);
    if (label !== undefined) return escapeValue(Object.hasOwn(ctx.labels, label) ? (ctx.labels[label] ?? "") : "");
    if (datum !== undefined) {
      const value = Object.hasOwn(ctx.data, datum) ? ctx.data[datum] : undefined;
      return escapeValue(value === undefined || value === null ? "" : typeof value === "string" ? value : JSON.stringify(value));
    }
    return "";
  });
}

export function parseActions(json: string): { label: string; url: string }[] {
  try {
    const parsed: unknown = JSON.parse(json);
    if (!Array.isArray(parsed)) return [];
    return parsed.filter((a): a is { label: string; url: string } => typeof a?.label === "string" && typeof a?.url === "string");
  } catch {
    return [];
  }
}

/**
 * Renders a template for one recipient. Labels are escaped for Markdown, except in custom templates whose title and
 * message are the sender's own Markdown (docs/api.md, Notification delivery); action URLs get URL-encoded values.
 */
export function renderTemplate(template: TemplateRow, ctx: RenderContext): RenderedNotification {
  const escapeLabel = template.kind === "custom" ? verbatim : escapeMarkdown;
  const titleMarkdown = fill(template.titleTemplate, ctx, escapeLabel).trim();
  const bodyMarkdown = fill(template.bodyTemplate, ctx, escapeLabel).trim();
  const actions = parseActions(template.actions).map((a) => ({
    label: fill(a.label, ctx, verbatim),
    url: fill(a.url, ctx, encodeURIComponent),
  }));
  const title = markdownToPlaintext(titleMarkdown);
  const body = markdownToPlaintext(bodyMarkdown);
  const actionsHtml = actions
    .map((a) => {
      const href = safeHref(a.url);
      return `<p>${href ? `<a href="${escapeHtml(href)}">${escapeHtml(a.label)}</a>` : escapeHtml(a.label)}</p>`;
    })
    .join("");
  return {
    titleMarkdown,
    bodyMarkdown,
    title,
    body,
    html: `${markdownToHtml(bodyMarkdown)}${actionsHtml}`,
    actions,
  };
}

/** The e-mail's text part: the plaintext body followed by each action as `label: url`. */
export function emailText(rendered: RenderedNotification): string {
  const actions = rendered.actions.map((a) => `${a.label}: ${a.url}`).join("\n");
  return actions ? `${rendered.body}\n\n${actions}\n` : `${rendered.body}\n`;
}
