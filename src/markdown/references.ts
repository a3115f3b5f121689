import { NAMED_REFERENCES } from "./entities";

let named: Map<string, string> | undefined;

/** The HTML Standard's named character references (entities.ts), by name without `&` and `;`; read on first use. */
function namedReferences(): Map<string, string> {
  if (named) return named;
  named = new Map();
  let codePoint = 0;
  for (const entry of NAMED_REFERENCES.split(/\s+/)) {
    const [, step, second, names] = /^(\d+)(?:\+(\d+))?([A-Za-z].*)$/.exec(entry) ?? [];
    if (step === undefined || names === undefined) continue;
    codePoint += Number(step);
    const value = String.fromCodePoint(codePoint) + (second === undefined ? "" : String.fromCodePoint(Number(second)));
    for (const name of names.split(",")) named.set(name, value);
  }
  return named;
}

/**
 * `&name;` read as a browser reads it in text, for the names of the HTML Standard's list (`&copy;` → ©, `&amp;` → &);
 * a name that is not on the list is no reference and stays as written. One pass, so `&amp;lt;` is `&lt;`. marked has
 * already turned numeric references into characters.
 */
export function decodeNamedReferences(text: string): string {
  return text.replace(/&([A-Za-z][A-Za-z0-9]*);/g, (whole, name: string) => namedReferences().get(name) ?? whole);
}

/**
 * marked passes any `&word;` through to the HTML as it is, so a name that is not on the list reached the browser,
 * which reads a known prefix of it (`&notit;` shows as ¬it;). Such an ampersand is escaped instead: the reader sees
 * what was written, as in the plain text.
 */
export function escapeUnknownReferences(html: string): string {
  return html.replace(/&(\w+);/g, (whole, name: string) => (namedReferences().has(name) ? whole : `&amp;${name};`));
}
