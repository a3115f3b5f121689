import { safeHref } from "../markdown/links";

/**
 * The bodies Herald posts to a user's chat targets (docs/targets.md, "What each service receives"), made from a
 * rendered notification by plain functions: each stays inside the limits its service documents, so a long
 * notification is cut (with "…") rather than refused. Text is the notification's plain text, escaped for the
 * service's own markup where it has one, so nothing in a notification can format, link or mention on its own.
 */

export interface TargetContent {
  /** The notification's plain-text title and body (src/notifications/render.ts). */
  title: string;
  body: string;
  actions: readonly { label: string; url: string }[];
  /** When the notification was created, RFC 3339. */
  createdAt: string;
  /** Where the notification can be read in Herald: the dashboard's inbox. */
  link: string;
}

/** The longest action URL Teams and Discord get (Slack takes up to its own limit). */
const LINK_MAX = 2048;
/** Used when a notification has neither title nor body: every service refuses an empty message. */
const NOTHING = "Notification";
const ELLIPSIS = "…";

/**
 * `text` cut to at most `max` UTF-16 code units, "…" included, never between the halves of a surrogate pair. Services
 * count characters (code points or UTF-16 units): a string within the limit in units is within it either way.
 */
export function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = max - ELLIPSIS.length;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return `${text.slice(0, end)}${ELLIPSIS}`;
}

/**
 * The actions a button or link can carry: absolute http(s) URLs (src/markdown/links.ts) within the service's limit,
 * at most `max`. A notification without one gets "Open in Herald", to where it can be read.
 */
function linkable(content: TargetContent, maxUrl: number, max: number): { label: string; url: string }[] {
  const links = content.actions.flatMap((a) => {
    const href = safeHref(a.url);
    if (href === undefined || !/^https?:/i.test(href) || !URL.canParse(href)) return [];
    // As the URL parser writes it: spaces and other characters a service would refuse are percent-encoded.
    const url = new URL(href);
    return url.href.length > maxUrl ? [] : [{ label: a.label.trim() || url.host, url: url.href }];
  });
  return (links.length > 0 ? links : [{ label: "Open in Herald", url: content.link }]).slice(0, max);
}

// ---------------------------------------------------------------------------------------------------------------
// Slack: incoming-webhook JSON with a `text` fallback and Block Kit blocks
// ---------------------------------------------------------------------------------------------------------------

/** Block Kit's limits for what Herald sends (a header's text, a section's, a button's, the counts). */
export const SLACK_LIMITS = { header: 150, section: 3000, buttonText: 75, buttonUrl: 3000, actionElements: 25, blocks: 50, text: 3000 } as const;

/** The three characters Slack's markup gives a meaning: `&`, `<` (links, mentions) and `>`. */
function escapeSlack(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/**
 * `text` escaped and split into pieces of at most `max` units each, at a line break or space where one is near, never
 * inside an escape; at most `pieces` of them, the last cut with "…" when the text goes on.
 */
function slackPieces(text: string, max: number, pieces: number): string[] {
  const out: string[] = [];
  let rest = text;
  while (rest !== "" && out.length < pieces) {
    if (escapeSlack(rest).length <= max) {
      out.push(escapeSlack(rest));
      break;
    }
    if (out.length === pieces - 1) {
      out.push(clipEscaped(rest, max));
      break;
    }
    // The longest prefix whose escaped form fits, then back to a break if one is in its last fifth.
    let fit = 0;
    let size = 0;
    for (const ch of rest) {
      const grown = size + escapeSlack(ch).length;
      if (grown > max) break;
      size = grown;
      fit += ch.length;
    }
    const cut = Math.max(rest.lastIndexOf("\n", fit), rest.lastIndexOf(" ", fit));
    const end = cut > fit * 0.8 ? cut : fit;
    out.push(escapeSlack(rest.slice(0, end)));
    rest = rest.slice(end).replace(/^[\n ]/, "");
  }
  return out;
}

/** `text` escaped and cut so that the escaped form, "…" included, fits `max`. */
function clipEscaped(text: string, max: number): string {
  let out = "";
  for (const ch of text) {
    const next = escapeSlack(ch);
    if (out.length + next.length > max - ELLIPSIS.length) return `${out}${ELLIPSIS}`;
    out += next;
  }
  return out;
}

export function slackPayload(content: TargetContent): Record<string, unknown> {
  const title = content.title.trim();
  const body = content.body.trim();
  const actions = linkable(content, SLACK_LIMITS.buttonUrl, SLACK_LIMITS.actionElements);
  const blocks: Record<string, unknown>[] = [];
  if (title !== "") blocks.push({ type: "header", text: { type: "plain_text", text: clip(title, SLACK_LIMITS.header), emoji: true } });
  const room = SLACK_LIMITS.blocks - blocks.length - 1;
  for (const piece of slackPieces(body, SLACK_LIMITS.section, room)) blocks.push({ type: "section", text: { type: "mrkdwn", text: piece } });
  blocks.push({
    type: "actions",
    elements: actions.map((a, i) => ({
      type: "button",
      text: { type: "plain_text", text: clip(a.label, SLACK_LIMITS.buttonText), emoji: true },
      url: a.url,
      action_id: `herald_action_${i}`,
    })),
  });
  // The fallback notifications and old clients show; a body with no title leads with its first line.
  const fallback = title || body.split("\n")[0]?.trim() || NOTHING;
  return { text: clipEscaped(fallback, SLACK_LIMITS.text), blocks };
}

// ---------------------------------------------------------------------------------------------------------------
// Microsoft Teams: a Workflows message with one Adaptive Card 1.5
// ---------------------------------------------------------------------------------------------------------------

/** What Herald keeps a card to: a title and body well inside Teams' 28 KB message, and the 5 actions a card may show. */
const TEAMS_LIMITS = { title: 256, body: 20_000, actions: 5 } as const;

export function teamsPayload(content: TargetContent): Record<string, unknown> {
  const title = content.title.trim();
  const body = content.body.trim();
  const textBlocks: Record<string, unknown>[] = [];
  if (title !== "")
    textBlocks.push({ type: "TextBlock", text: clip(title, TEAMS_LIMITS.title), wrap: true, weight: "Bolder", size: "Medium", style: "heading" });
  if (body !== "" || title === "") textBlocks.push({ type: "TextBlock", text: clip(body || NOTHING, TEAMS_LIMITS.body), wrap: true });
  const actions = linkable(content, LINK_MAX, TEAMS_LIMITS.actions).map((a) => ({ type: "Action.OpenUrl", title: clip(a.label, 100), url: a.url }));
  return {
    type: "message",
    attachments: [
      {
        contentType: "application/vnd.microsoft.card.adaptive",
        contentUrl: null,
        content: {
          $schema: "http://adaptivecards.io/schemas/adaptive-card.json",
          type: "AdaptiveCard",
          version: "1.5",
          body: textBlocks,
          actions,
        },
      },
    ],
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Discord: one embed, no mentions
// ---------------------------------------------------------------------------------------------------------------

/** Discord's embed limits: a title, a description, and all of an embed's text together. */
export const DISCORD_LIMITS = { title: 256, description: 4096, embedTotal: 6000, links: 5 } as const;

/** The characters Discord's Markdown reads anywhere: emphasis, code, spoilers, quotes, masked links, mentions. */
const DISCORD_INLINE = /[\\`*_~|<>[\]]/g;
/** What starts a heading, a list or a quote, at the start of a line. */
const DISCORD_LINE_START = /^([ \t]*)([#>+-]|\d+\.)/gm;
/** Bare web addresses stay as they are, so Discord still links them (an escape inside one would end up in the link). */
const BARE_URL = /(https?:\/\/[^\s<>]+)/;

/** `text` with a backslash before everything Discord's Markdown would read, so it shows as written. */
export function escapeDiscord(text: string): string {
  return text
    .split(BARE_URL)
    .map((part, i) => (i % 2 === 1 ? part : part.replace(DISCORD_INLINE, (ch) => `\\${ch}`)))
    .join("")
    .replace(DISCORD_LINE_START, (_, indent: string, marker: string) => `${indent}\\${marker}`);
}

/** `text` escaped and cut to `max`, "…" included, never between a backslash and what it escapes. */
function clipDiscord(text: string, max: number): string {
  const escaped = escapeDiscord(text);
  if (escaped.length <= max) return escaped;
  let end = max - ELLIPSIS.length;
  // An odd run of backslashes before the cut: the last one escapes what was cut off.
  let slashes = 0;
  while (slashes < end && escaped[end - 1 - slashes] === "\\") slashes += 1;
  if (slashes % 2 === 1) end -= 1;
  return clip(`${escaped.slice(0, end)}${ELLIPSIS}`, max);
}

/** A masked link's URL may hold no parenthesis: one would end it early (spaces are encoded already). */
const discordUrl = (url: string) => url.replace(/[()]/g, (ch) => (ch === "(" ? "%28" : "%29"));

export function discordPayload(content: TargetContent): Record<string, unknown> {
  const title = content.title.trim();
  const actions = linkable(content, LINK_MAX, DISCORD_LIMITS.links);
  const linkText = actions.map((a) => `[${clipDiscord(a.label, 100)}](${discordUrl(a.url)})`).join("\n");
  // The links are kept whole; the body gives way to them.
  const room = DISCORD_LIMITS.description - (linkText === "" ? 0 : linkText.length + 2);
  const bodyText = content.body.trim() === "" ? "" : clipDiscord(content.body.trim(), Math.max(0, room));
  const description = [bodyText, linkText].filter((part) => part !== "").join("\n\n") || (title === "" ? NOTHING : "");
  const embed: Record<string, unknown> = {
    ...(title === "" ? {} : { title: clip(title, DISCORD_LIMITS.title) }),
    ...(description === "" ? {} : { description: clip(description, DISCORD_LIMITS.description) }),
    url: actions[0]?.url ?? content.link,
    timestamp: content.createdAt,
  };
  // Never a ping: Discord parses no @everyone, @here, role or user mention in what a webhook posts.
  return { embeds: [embed], allowed_mentions: { parse: [] } };
}
