/**
 * The link policy for everything Herald renders from Markdown (e-mail HTML, plain text, and the browser inbox): only
 * absolute `http`, `https` and `mailto` URLs become links. Anything else — `javascript:`, `data:`, `vbscript:`,
 * relative and protocol-relative URLs — is shown as text. Remote images are never loaded; they become links. The
 * policy lives here alone so that every renderer applies the same one (docs/email.md).
 */

const ALLOWED_SCHEMES = new Set(["http", "https", "mailto"]);

/**
 * The URL as it may appear in an `href`, or undefined when the policy refuses it. Browsers ignore tabs, newlines and
 * leading control characters inside a scheme (`java\tscript:`), so those are removed before the scheme is read.
 */
export function safeHref(url: string): string | undefined {
  const cleaned = url.replace(/[\u0000-\u0020\u007f-\u009f]/g, "");
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(cleaned)?.[1]?.toLowerCase();
  if (!scheme || !ALLOWED_SCHEMES.has(scheme)) return undefined;
  if (scheme !== "mailto" && !/^[A-Za-z]+:\/\/[^/\\]/.test(cleaned)) return undefined;
  return cleaned;
}
