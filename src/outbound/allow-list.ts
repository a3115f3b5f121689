/**
 * Where Herald may send on a user's behalf (docs/targets.md, "Outbound safety"). A push endpoint or a target URL is
 * given by a user, so without a list anyone could make Herald post to a cloud metadata service or a router on the
 * operator's network. Each kind has a built-in list of https hosts; `webhook` accepts any public https host.
 * `OUTBOUND_ALLOWED_ORIGINS`, when set, replaces every built-in list (the tests point Herald at local stand-ins).
 */

export type OutboundKind = "push" | "webhook" | "slack" | "teams" | "discord";

export type OutboundCheck = { ok: true; url: URL } | { ok: false; reason: string };

/** A host and the hosts under it: `notify.windows.com` also allows `wns2-par02p.notify.windows.com`. */
interface HostRule {
  host: string;
  subdomains: boolean;
  /** The path the service's URLs start with, when the host serves other things too. */
  pathPrefix?: string;
}

const BUILT_IN: Record<Exclude<OutboundKind, "webhook">, { what: string; rules: HostRule[] }> = {
  push: {
    what: "a push service (Google FCM, Mozilla, Apple or Windows)",
    rules: [
      { host: "fcm.googleapis.com", subdomains: false },
      { host: "push.services.mozilla.com", subdomains: true },
      { host: "push.apple.com", subdomains: true },
      { host: "notify.windows.com", subdomains: true },
    ],
  },
  slack: { what: "a Slack incoming webhook (https://hooks.slack.com/…)", rules: [{ host: "hooks.slack.com", subdomains: false }] },
  teams: {
    what: "a Microsoft Teams Workflows webhook (https://….logic.azure.com/… or https://….environment.api.powerplatform.com/…)",
    rules: [
      { host: "logic.azure.com", subdomains: true },
      { host: "environment.api.powerplatform.com", subdomains: true },
    ],
  },
  discord: {
    what: "a Discord webhook (https://discord.com/api/webhooks/…)",
    rules: [
      { host: "discord.com", subdomains: false, pathPrefix: "/api/webhooks/" },
      { host: "ptb.discord.com", subdomains: false, pathPrefix: "/api/webhooks/" },
      { host: "canary.discord.com", subdomains: false, pathPrefix: "/api/webhooks/" },
    ],
  },
};

/**
 * Names that point inside a network rather than at a public host. The WHATWG URL parser has already turned decimal,
 * hex and octal IPv4 forms (`2130706433`, `0x7f.1`) into dotted quads, so every IP literal is caught by
 * `isIpLiteral`; these are the names that resolve to private, loopback or metadata addresses by convention.
 */
const INTERNAL_NAMES = ["localhost", "metadata.google.internal", "metadata"];
const INTERNAL_SUFFIXES = [".localhost", ".internal", ".local", ".localdomain", ".home.arpa", ".lan", ".intranet", ".corp"];

function isIpLiteral(hostname: string): boolean {
  return hostname.startsWith("[") || /^\d{1,3}(\.\d{1,3}){3}$/.test(hostname);
}

function matches(url: URL, rule: HostRule): boolean {
  const host = url.hostname;
  const hostOk = host === rule.host || (rule.subdomains && host.endsWith(`.${rule.host}`));
  return hostOk && (rule.pathPrefix === undefined || url.pathname.startsWith(rule.pathPrefix));
}

/**
 * Checks a URL a user gave for `kind`. `allowedOrigins` is `OUTBOUND_ALLOWED_ORIGINS`: when non-empty it is the only
 * list. The answer's reason is written for the person who typed the URL.
 */
export function checkOutboundUrl(kind: OutboundKind, input: string, allowedOrigins: readonly string[]): OutboundCheck {
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    return { ok: false, reason: "must be an absolute URL" };
  }
  if (url.username !== "" || url.password !== "") return { ok: false, reason: "must not carry a user name or password" };
  if (allowedOrigins.length > 0) {
    return allowedOrigins.includes(url.origin)
      ? { ok: true, url }
      : { ok: false, reason: `must be on an origin listed in OUTBOUND_ALLOWED_ORIGINS (${url.origin} is not)` };
  }
  if (url.protocol !== "https:") return { ok: false, reason: "must use https" };
  if (kind === "webhook") {
    const host = url.hostname.replace(/\.$/, "");
    if (isIpLiteral(host)) return { ok: false, reason: "must name a host, not an IP address" };
    if (!host.includes(".") || INTERNAL_NAMES.includes(host) || INTERNAL_SUFFIXES.some((suffix) => host.endsWith(suffix))) {
      return { ok: false, reason: `must be a public host (${host} is private, loopback, link-local or a metadata service)` };
    }
    return { ok: true, url };
  }
  const { what, rules } = BUILT_IN[kind];
  return rules.some((rule) => matches(url, rule)) ? { ok: true, url } : { ok: false, reason: `must be ${what}` };
}
