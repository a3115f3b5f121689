import type * as z from "zod";
import type { Env } from "../env";
import { type Mailbox, parseMailbox } from "../notifications/email/address";
import { configSchema } from "./schema";

export { CONFIG_KEYS } from "./schema";

export type Config = z.output<typeof configSchema> & {
  /** Origin of ACCESS_URL, e.g. "https://herald.example.com". */
  origin: string;
  /** True when ACCESS_URL is https: cookies get `Secure` and the `__Host-` prefix. */
  secure: boolean;
  /** The WebAuthn relying party id: ACCESS_URL's host name, without its port (docs/passkeys.md). */
  rpId: string;
  /** EMAIL_FROM parsed, or `Herald <noreply@ACCESS_URL's host>`. */
  emailFrom: Mailbox;
  /** EMAIL_HELLO, else ACCESS_URL's host name (an IP address as an address literal, `[192.0.2.1]`). */
  emailHello: string;
  /**
   * The `sub` of every VAPID token (docs/push.md, "Keys"): VAPID_SUBJECT; else `mailto:` and EMAIL_FROM's address; else
   * ACCESS_URL when it is https; else `mailto:` and the default sender address.
   */
  vapidSubject: string;
};

export class ConfigError extends Error {
  override name = "ConfigError";
}

// The environment object is the same for the life of an isolate, so the parsed form is kept beside it.
const cache = new WeakMap<object, Config>();

/**
 * Reads and validates the configuration (docs/configuration.md). Invalid configuration throws a ConfigError naming every bad
 * variable (never its value): the error handler logs it and answers 500, so a misconfiguration is loud at the first
 * request instead of silently changing behaviour.
 */
export function getConfig(env: Env): Config {
  const cached = cache.get(env);
  if (cached) return cached;
  const parsed = configSchema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ");
    throw new ConfigError(`Invalid configuration: ${problems}`);
  }
  const url = new URL(parsed.data.ACCESS_URL);
  const host = url.hostname;
  const ipLiteral = /^\d+\.\d+\.\d+\.\d+$/.test(host) ? `[${host}]` : host.startsWith("[") ? `[IPv6:${host.slice(1, -1)}]` : undefined;
  const emailFrom = (parsed.data.EMAIL_FROM && parseMailbox(parsed.data.EMAIL_FROM)) || {
    name: "Herald",
    address: `noreply@${ipLiteral ? "localhost" : host}`,
  };
  const config: Config = {
    ...parsed.data,
    origin: url.origin,
    secure: url.protocol === "https:",
    rpId: host,
    emailFrom,
    emailHello: parsed.data.EMAIL_HELLO ?? ipLiteral ?? host,
    vapidSubject: parsed.data.VAPID_SUBJECT ?? (parsed.data.EMAIL_FROM || url.protocol !== "https:" ? `mailto:${emailFrom.address}` : url.origin),
  };
  cache.set(env, config);
  return config;
}
