/**
 * The embed's styles, adopted by its shadow root as a constructed stylesheet: no `<style>` element and no `style`
 * attribute, so the host page's `style-src` needs nothing for it (docs/embed.md, "Content-Security-Policy"). Every
 * colour and size reads a documented `--herald-*` custom property first (docs/embed.md, "Theming"); the defaults
 * keep text at WCAG AA contrast on their backgrounds, in light and in dark. The bell itself takes the host page's text
 * colour, so it stays visible whichever scheme the page itself follows.
 */
const CSS = `
:host {
  --_accent: var(--herald-accent, #1d4ed8);
  --_bg: var(--herald-bg, #ffffff);
  --_text: var(--herald-text, #111827);
  --_muted: var(--herald-muted, #4b5563);
  --_border: var(--herald-border, #d1d5db);
  --_unread-bg: var(--herald-unread-bg, #eff6ff);
  --_badge-bg: var(--herald-badge-bg, #b91c1c);
  --_badge-text: var(--herald-badge-text, #ffffff);
  --_shadow: var(--herald-shadow, 0 10px 30px rgb(0 0 0 / 0.15));
  position: relative;
  display: inline-block;
  font-family: var(--herald-font, system-ui, -apple-system, "Segoe UI", Roboto, sans-serif);
  line-height: 1.4;
}
@media (prefers-color-scheme: dark) {
  :host {
    --_accent: var(--herald-accent, #93c5fd);
    --_bg: var(--herald-bg, #111827);
    --_text: var(--herald-text, #f9fafb);
    --_muted: var(--herald-muted, #9ca3af);
    --_border: var(--herald-border, #374151);
    --_unread-bg: var(--herald-unread-bg, #1e293b);
    --_badge-bg: var(--herald-badge-bg, #fca5a5);
    --_badge-text: var(--herald-badge-text, #111827);
    --_shadow: var(--herald-shadow, 0 10px 30px rgb(0 0 0 / 0.5));
  }
}
:host([hidden]), [hidden] { display: none !important; }
* { box-sizing: border-box; }
.sr {
  position: absolute; width: 1px; height: 1px; margin: -1px; padding: 0; border: 0;
  overflow: hidden; clip-path: inset(50%); white-space: nowrap;
}
button { font: inherit; color: inherit; cursor: pointer; }
:focus-visible { outline: 2px solid var(--_accent); outline-offset: 2px; }
.bell {
  position: relative; display: inline-flex; align-items: center; justify-content: center;
  width: 2.5rem; height: 2.5rem; padding: 0; border: 0; border-radius: var(--herald-radius, 8px);
  background: transparent; color: var(--herald-bell-color, inherit);
}
.bell:hover, .bell[aria-expanded="true"] { background: color-mix(in srgb, currentColor 12%, transparent); }
svg { width: 1.5rem; height: 1.5rem; fill: currentColor; }
.badge {
  position: absolute; top: 0.125rem; inset-inline-end: 0.125rem; min-width: 1.125rem; height: 1.125rem;
  padding: 0 0.25rem; border-radius: 999px; background: var(--_badge-bg); color: var(--_badge-text);
  font-size: 0.6875rem; font-weight: 700; line-height: 1.125rem; text-align: center;
}
.panel {
  position: absolute; top: calc(100% + 0.375rem); inset-inline-end: 0; z-index: var(--herald-z-index, 1000);
  width: var(--herald-panel-width, 22rem); max-width: calc(100vw - 1rem); overflow: hidden; text-align: start;
  background: var(--_bg); color: var(--_text); border: 1px solid var(--_border);
  border-radius: var(--herald-radius, 8px); box-shadow: var(--_shadow);
}
.head {
  display: flex; align-items: center; justify-content: space-between; gap: 0.5rem;
  padding: 0.625rem 0.875rem; border-bottom: 1px solid var(--_border);
}
h2 { margin: 0; font-size: 1rem; font-weight: 600; }
.text-button {
  padding: 0.25rem 0.375rem; border: 0; border-radius: 4px; background: none;
  color: var(--_accent); font-size: 0.8125rem; font-weight: 600;
}
.text-button:disabled { color: var(--_muted); cursor: default; }
ul {
  list-style: none; margin: 0; padding: 0; overflow-y: auto;
  max-height: var(--herald-panel-max-height, min(28rem, 70vh));
}
li {
  display: flex; align-items: flex-start; gap: 0.625rem;
  padding: 0.75rem 0.875rem; border-bottom: 1px solid var(--_border);
}
li:last-child { border-bottom: 0; }
li.unread { background: var(--_unread-bg); cursor: pointer; }
.dot { flex: none; width: 0.5rem; height: 0.5rem; margin-top: 0.4rem; border-radius: 50%; background: var(--_accent); }
li:not(.unread) .dot { visibility: hidden; }
.body { flex: 1; min-width: 0; }
.body p { margin: 0; overflow-wrap: anywhere; }
.title { font-size: 0.875rem; font-weight: 600; }
.content { margin-top: 0.125rem; font-size: 0.8125rem; color: var(--_muted); overflow-wrap: anywhere; }
.content > :first-child { margin-top: 0; }
.content p, .content ul, .content ol, .content pre, .content blockquote { margin: 0.25rem 0 0; }
.content ul, .content ol { padding-inline-start: 1.25rem; }
.content blockquote { padding-inline-start: 0.5rem; border-inline-start: 3px solid var(--_border); }
.content code {
  padding: 0 0.25rem; border-radius: 3px; font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  font-size: 0.75rem; background: color-mix(in srgb, var(--_text) 10%, transparent); color: var(--_text);
}
.content pre { padding: 0.375rem 0.5rem; overflow-x: auto; border-radius: 4px; background: color-mix(in srgb, var(--_text) 10%, transparent); }
.content pre code { padding: 0; background: none; }
.content hr { border: 0; border-top: 1px solid var(--_border); }
.content a { font-weight: 400; text-decoration: underline; }
.meta { margin-top: 0.25rem !important; font-size: 0.75rem; color: var(--_muted); }
.actions { display: flex; flex-wrap: wrap; gap: 0.5rem; margin-top: 0.375rem !important; }
a { color: var(--_accent); font-size: 0.8125rem; font-weight: 600; }
.action {
  display: inline-block; padding: 0.125rem 0.625rem; border: 1px solid var(--_accent); border-radius: 999px;
  background: var(--_bg); text-decoration: none;
}
.action:hover { background: color-mix(in srgb, var(--_accent) 12%, var(--_bg)); }
.icon { flex: none; display: inline-flex; width: 1.5rem; height: 1.5rem; color: var(--_muted); }
.icon svg, .icon img { width: 1.5rem; height: 1.5rem; border-radius: 4px; }
.buttons { flex: none; display: flex; flex-direction: column; gap: 0.375rem; }
.round {
  display: inline-flex; align-items: center; justify-content: center; width: 1.75rem; height: 1.75rem;
  padding: 0; border: 1px solid var(--_border); border-radius: 50%; background: var(--_bg); color: var(--_accent);
}
.round svg { width: 1rem; height: 1rem; }
.foot {
  display: flex; align-items: center; justify-content: space-between; gap: 0.5rem;
  padding: 0.375rem 0.875rem; border-top: 1px solid var(--_border);
}
.foot a { margin-inline-start: auto; text-decoration: none; }
.status, .empty { margin: 0; padding: 1rem 0.875rem; font-size: 0.875rem; color: var(--_muted); text-align: center; }
`;

let sheet: CSSStyleSheet | undefined;

/** One sheet shared by every `<herald-inbox>` of the page. */
export function stylesheet(): CSSStyleSheet {
  if (!sheet) {
    sheet = new CSSStyleSheet();
    sheet.replaceSync(CSS);
  }
  return sheet;
}
