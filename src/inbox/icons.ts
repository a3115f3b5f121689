import { FALLBACK_ICONS } from "./model";

/**
 * The glyph each browser inbox (the dashboard and the embed) draws for a notification's `icon`: one 24×24 SVG path
 * per fallback icon name. An icon that is a URL is not loaded (like images in e-mail, docs/email.md: a remote image
 * tells its sender who opened what, and when) and is drawn as the general bell.
 */
const PATHS: Record<string, string> = {
  // A person: account and security events.
  [FALLBACK_ICONS.account]: "M12 12a4.5 4.5 0 1 0 0-9 4.5 4.5 0 0 0 0 9Zm0 2c-4.4 0-8 2.2-8 5v2h16v-2c0-2.8-3.6-5-8-5Z",
  // A box: workspace-like events.
  [FALLBACK_ICONS.workspace]:
    "M3 7.5 12 3l9 4.5v9L12 21l-9-4.5v-9Zm9 2.3 6.6-3.3L12 3.2 5.4 6.5 12 9.8Zm-7 7.4 6 3v-8.4l-6-3v8.4Zm8 3 6-3V8.8l-6 3v8.4Z",
  // A page: template-like events.
  [FALLBACK_ICONS.template]: "M6 2h8l5 5v15H6V2Zm7 1.5V8h4.5L13 3.5ZM8 12v1.5h8V12H8Zm0 4v1.5h8V16H8Z",
  // A bell: everything else.
  [FALLBACK_ICONS.other]:
    "M12 22a2.5 2.5 0 0 0 2.45-2h-4.9A2.5 2.5 0 0 0 12 22Zm7-6V11a7 7 0 0 0-5.5-6.84V3.5a1.5 1.5 0 0 0-3 0v.66A7 7 0 0 0 5 11v5l-2 2v1h18v-1l-2-2Z",
};

/** The SVG path for `icon`: its own glyph for a fallback name, the bell for anything else. */
export function iconPath(icon: string): string {
  return PATHS[icon] ?? PATHS[FALLBACK_ICONS.other] ?? "";
}
