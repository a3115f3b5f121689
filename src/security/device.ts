import Bowser from "bowser";

/**
 * Where a request came from, as a person would recognise it (docs/security.md, "Devices"): the User-Agent as sent
 * and what it names, the client address cut to its network, and Cloudflare's country and city for it.
 */
export interface RequestOrigin {
  userAgent: string | null;
  /** "Chrome 131 on macOS"; null when the User-Agent names no browser. */
  device: string | null;
  /** The browser family and operating system alone, the part of a device that does not change with each update. */
  browser: string;
  os: string;
  /** The client address as its /24 (IPv4) or /48 (IPv6); null when the request carried none (local runs). */
  ipPrefix: string | null;
  /** ISO 3166-1 alpha-2 and the city Cloudflare placed the address in; null locally. */
  country: string | null;
  city: string | null;
}

/** User-Agents are cut to this many characters before they are stored (a header can be 16 KB). */
const USER_AGENT_MAX = 512;

/**
 * What a User-Agent names, through bowser (MIT): the browser's family and major version and the operating system.
 * A client that names no browser (curl, a script) has no device, only its User-Agent.
 */
export function describeUserAgent(userAgent: string | null): Pick<RequestOrigin, "device" | "browser" | "os"> {
  if (!userAgent) return { device: null, browser: "", os: "" };
  const parser = Bowser.getParser(userAgent);
  const browser = parser.getBrowserName() ?? "";
  const os = parser.getOSName() ?? "";
  if (!browser) return { device: null, browser: "", os };
  const major = (parser.getBrowserVersion() ?? "").split(".")[0] ?? "";
  const named = major ? `${browser} ${major}` : browser;
  return { device: os ? `${named} on ${os}` : named, browser, os };
}

/** An IPv4 address's /24 or an IPv6 address's /48, written as a network; anything else is not an address. */
export function addressPrefix(address: string): string | null {
  const v4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(address);
  if (v4) {
    const octets = v4.slice(1, 4).map(Number);
    return octets.every((o) => o <= 255) ? `${octets.join(".")}.0/24` : null;
  }
  if (!address.includes(":") || !/^[0-9a-fA-F:.]+$/.test(address)) return null;
  const [head = "", tail] = address.split("::");
  const groups = head ? head.split(":") : [];
  // With "::" the first three groups are those before it, padded with the zeros it stands for.
  if (tail === undefined && groups.length < 3) return null;
  const first = [...groups, "0", "0", "0"].slice(0, 3);
  if (first.some((g) => !/^[0-9a-fA-F]{1,4}$/.test(g))) return null;
  // Written as RFC 5952 writes it: no leading zeros, and trailing zero groups folded into the "::".
  const written = first.map((g) => Number.parseInt(g, 16).toString(16));
  while (written.at(-1) === "0") written.pop();
  return `${written.join(":")}::/48`;
}

/** The origin of a request: its headers, and the `cf` object Cloudflare attaches (absent under `wrangler dev`). */
export function requestOrigin(request: Request): RequestOrigin {
  const userAgent = request.headers.get("User-Agent")?.slice(0, USER_AGENT_MAX) || null;
  const address = request.headers.get("CF-Connecting-IP");
  const cf = (request as { cf?: { country?: unknown; city?: unknown } }).cf;
  return {
    userAgent,
    ...describeUserAgent(userAgent),
    ipPrefix: address ? addressPrefix(address) : null,
    country: typeof cf?.country === "string" && /^[A-Z]{2}$/.test(cf.country) ? cf.country : null,
    city: typeof cf?.city === "string" && cf.city ? cf.city.slice(0, 100) : null,
  };
}

/** The part of an origin that names a device for the new-device notice: browser family, OS, country. */
export function deviceKey(origin: Pick<RequestOrigin, "browser" | "os" | "country">): string {
  return [origin.browser, origin.os, origin.country ?? ""].join("|");
}
