/** An e-mail address with an optional display name, as in `EMAIL_FROM="Herald Alerts <alerts@example.com>"`. */
export interface Mailbox {
  name?: string;
  address: string;
}

/**
 * A plain `local@domain` address: no spaces, brackets, quotes or control characters, and a dotted or single-label
 * domain of letters, digits and hyphens. Quoted local parts and address literals are not accepted: no relay needs them
 * for a sender, and refusing them keeps every address safe to write into a command or a header as it is.
 */
const ADDRESS = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*$/;

export function isAddress(text: string): boolean {
  return text.length <= 254 && ADDRESS.test(text);
}

/** Reads `addr`, `<addr>` or `Display Name <addr>` (the name may be quoted); undefined when it is none of those. */
export function parseMailbox(text: string): Mailbox | undefined {
  const trimmed = text.trim();
  const bracketed = /^(.*?)\s*<([^<>]+)>$/.exec(trimmed);
  const address = (bracketed ? bracketed[2] : trimmed)?.trim() ?? "";
  if (!isAddress(address)) return undefined;
  const rawName = bracketed?.[1]?.trim() ?? "";
  const name = rawName.startsWith('"') && rawName.endsWith('"') && rawName.length >= 2 ? rawName.slice(1, -1).replace(/\\(.)/g, "$1") : rawName;
  if (/[\u0000-\u001f\u007f]/.test(name)) return undefined;
  return name ? { name, address } : { address };
}

/** The domain of an address, for the Message-ID: `alerts@example.com` → `example.com`. */
export function domainOf(address: string): string {
  return address.slice(address.lastIndexOf("@") + 1);
}
