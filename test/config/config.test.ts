import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { CONFIG_KEYS, ConfigError, getConfig } from "../../src/config/config";
import type { Env } from "../../src/env";
import { PEER_VARS, WORKERD_VARS } from "../fixtures/vars";

/** Each case is a fresh env object: the parsed configuration is cached per env. */
const configWith = (overrides: Partial<Env>) => getConfig({ ...env, ...overrides });

describe("configuration (docs/configuration.md): invalid settings fail loudly, naming the variable", () => {
  const invalid: [string, Partial<Env>, RegExp][] = [
    ["a short SECRET_KEY", { SECRET_KEY: "short" }, /SECRET_KEY/],
    ["webhook method without a URL", { NOTIFICATIONS_METHOD: "webhook", NOTIFICATIONS_WEBHOOK_URL: "" }, /NOTIFICATIONS_WEBHOOK_URL/],
    ["an unknown method", { NOTIFICATIONS_METHOD: "pigeon" }, /NOTIFICATIONS_METHOD/],
    ["a smarthost without a port", { EMAIL_SMARTHOST: "mail.example.com" }, /EMAIL_SMARTHOST/],
    ["an unknown EMAIL_TLS", { EMAIL_TLS: "maybe" }, /EMAIL_TLS/],
    ["a plain-http issuer off loopback", { OIDC_ISSUER_URL: "http://idp.example.com" }, /OIDC_ISSUER_URL/],
    ["an issuer without a client id", { OIDC_ISSUER_URL: "https://idp.example.com", OIDC_CLIENT_ID: "" }, /OIDC_CLIENT_ID/],
    ["a GitHub id without a secret", { GITHUB_CLIENT_ID: "id", GITHUB_CLIENT_SECRET: "" }, /GITHUB_CLIENT_SECRET/],
    ["a duration that is not one", { SESSION_DURATION: "a day" }, /SESSION_DURATION/],
    ["an auth cache over a minute", { AUTH_CACHE_TTL: "5m" }, /AUTH_CACHE_TTL/],
    ["a sender that is no address", { EMAIL_FROM: "Herald Alerts" }, /EMAIL_FROM/],
    ["a sender with a line break", { EMAIL_FROM: "Herald\r\nBcc: x@evil.example <alerts@example.com>" }, /EMAIL_FROM/],
    ["a bare-label EHLO name", { EMAIL_HELLO: "localhost" }, /EMAIL_HELLO/],
    ["a maximum age that is no duration", { NOTIFICATIONS_MAX_AGE: "forever" }, /NOTIFICATIONS_MAX_AGE/],
    ["a step-up age that is no duration", { STEP_UP_MAX_AGE: "a while" }, /STEP_UP_MAX_AGE/],
    ["a second-factor role that is no site role", { MFA_REQUIRED_ROLES: "owner,wizard" }, /MFA_REQUIRED_ROLES/],
    ["a jurisdiction Durable Objects do not have", { DATA_JURISDICTION: "mars" }, /DATA_JURISDICTION/],
    ["an embed signing key without an id", { EMBED_SIGNING_KEYS: "0123456789abcdefghijklmnopqrstuvwxyz" }, /EMBED_SIGNING_KEYS/],
    ["an embed signing key with a short secret", { EMBED_SIGNING_KEYS: "k1:short" }, /EMBED_SIGNING_KEYS/],
    ["an embed key id with a dot", { EMBED_SIGNING_KEYS: "k.1:0123456789abcdefghijklmnopqrstuvwxyz" }, /EMBED_SIGNING_KEYS/],
    ["a VAPID public key without its private key", { VAPID_PRIVATE_KEY: "" }, /VAPID_PRIVATE_KEY/],
    ["a VAPID private key without its public key", { VAPID_PUBLIC_KEY: "" }, /VAPID_PUBLIC_KEY/],
    ["a compressed VAPID public key", { VAPID_PUBLIC_KEY: "AzBO8vn9WJe0yTJ5rMzOPSliMDFKhRuESlJAJD4MXk_e" }, /VAPID_PUBLIC_KEY/],
    ["a VAPID public key in padded base64", { VAPID_PUBLIC_KEY: `${WORKERD_VARS.VAPID_PUBLIC_KEY}=` }, /VAPID_PUBLIC_KEY/],
    ["a VAPID private key of 30 bytes", { VAPID_PRIVATE_KEY: WORKERD_VARS.VAPID_PRIVATE_KEY.slice(0, 40) }, /VAPID_PRIVATE_KEY/],
    ["a VAPID subject that is no mailto: or https: URL", { VAPID_SUBJECT: "http://herald.example.com" }, /VAPID_SUBJECT/],
    [
      "an embed key id given twice",
      { EMBED_SIGNING_KEYS: "k1:0123456789abcdefghijklmnopqrstuvwxyz,k1:zyxwvutsrqponmlkjihgfedcba9876543210" },
      /EMBED_SIGNING_KEYS/,
    ],
  ];
  for (const [name, overrides, variable] of invalid) {
    it(`rejects ${name}`, () => {
      expect(() => configWith(overrides)).toThrow(ConfigError);
      expect(() => configWith(overrides)).toThrow(variable);
    });
  }

  it("never puts a secret's value in the error", () => {
    expect(() => configWith({ SECRET_KEY: "tiny-secret" })).not.toThrow(/tiny-secret/);
    expect(() => configWith({ EMBED_SIGNING_KEYS: "k1:tiny-embed-secret" })).not.toThrow(/tiny-embed-secret/);
    expect(() => configWith({ EMBED_SIGNING_KEYS: "tiny-embed-secret-without-an-id" })).not.toThrow(/tiny-embed/);
    expect(() => configWith({ VAPID_PRIVATE_KEY: "tiny-vapid-secret" })).not.toThrow(/tiny-vapid-secret/);
  });

  it('derives the VAPID subject: VAPID_SUBJECT, else EMAIL_FROM, else an https ACCESS_URL, else the default sender (docs/push.md, "Keys")', () => {
    expect(configWith({ VAPID_SUBJECT: "https://status.example.com/contact" }).vapidSubject).toBe("https://status.example.com/contact");
    expect(configWith({ VAPID_SUBJECT: "", EMAIL_FROM: "Alerts <alerts@example.com>" }).vapidSubject).toBe("mailto:alerts@example.com");
    expect(configWith({ VAPID_SUBJECT: "", EMAIL_FROM: "", ACCESS_URL: "https://herald.example.com/" }).vapidSubject).toBe(
      "https://herald.example.com",
    );
    expect(configWith({ VAPID_SUBJECT: "", EMAIL_FROM: "", ACCESS_URL: "http://localhost:8787" }).vapidSubject).toBe("mailto:noreply@localhost");
  });

  it("reads STEP_UP_MAX_AGE and MFA_REQUIRED_ROLES, with their defaults (docs/second-factor.md)", () => {
    const defaults = configWith({ STEP_UP_MAX_AGE: undefined, MFA_REQUIRED_ROLES: undefined });
    expect(defaults.STEP_UP_MAX_AGE).toBe(10 * 60 * 1000);
    expect(defaults.MFA_REQUIRED_ROLES).toEqual([]);
    const set = configWith({ STEP_UP_MAX_AGE: "5m", MFA_REQUIRED_ROLES: " owner, user-admin ,owner," });
    expect(set.STEP_UP_MAX_AGE).toBe(5 * 60 * 1000);
    expect(set.MFA_REQUIRED_ROLES).toEqual(["owner", "user-admin"]);
  });

  it("parses durations, lists and the origin", () => {
    const config = configWith({
      SESSION_DURATION: "1h30m",
      AUTH_CACHE_TTL: "0s",
      CORS_ALLOWED_ORIGINS: "https://a.example.com/, https://b.example.com",
      ACCESS_URL: "https://herald.example.com/path",
      OIDC_ISSUER_URL: "http://127.0.0.1:9000",
      OIDC_CLIENT_ID: "herald",
    });
    expect(config.SESSION_DURATION).toBe(90 * 60 * 1000);
    expect(config.AUTH_CACHE_TTL).toBe(0);
    expect(config.CORS_ALLOWED_ORIGINS).toEqual(["https://a.example.com", "https://b.example.com"]);
    expect(config.origin).toBe("https://herald.example.com");
    expect(config.secure).toBe(true);
  });

  it("reads EMBED_SIGNING_KEYS as key id → secret, several at once (docs/configuration.md)", () => {
    const config = configWith({
      EMBED_SIGNING_KEYS: " 2026-a:0123456789abcdefghijklmnopqrstuvwxyz:+/= , 2025_b:zyxwvutsrqponmlkjihgfedcba9876543210 ",
    });
    expect([...config.EMBED_SIGNING_KEYS]).toEqual([
      ["2026-a", "0123456789abcdefghijklmnopqrstuvwxyz:+/="],
      ["2025_b", "zyxwvutsrqponmlkjihgfedcba9876543210"],
    ]);
    expect(configWith({ EMBED_SIGNING_KEYS: "" }).EMBED_SIGNING_KEYS.size).toBe(0);
  });

  it("derives the e-mail sender, the EHLO name and the maximum age (docs/email.md)", () => {
    const named = configWith({
      EMAIL_FROM: '"Herald, Alerts" <alerts@example.com>',
      ACCESS_URL: "https://herald.example.com",
      EMAIL_HELLO: undefined,
    });
    expect(named.emailFrom).toEqual({ name: "Herald, Alerts", address: "alerts@example.com" });
    expect(named.emailHello).toBe("herald.example.com");
    expect(named.NOTIFICATIONS_MAX_AGE).toBe(5 * 24 * 3600 * 1000);
    const defaults = configWith({ EMAIL_FROM: undefined, ACCESS_URL: "http://127.0.0.1:8787", EMAIL_HELLO: undefined, NOTIFICATIONS_MAX_AGE: "36h" });
    expect(defaults.emailFrom).toEqual({ name: "Herald", address: "noreply@localhost" });
    expect(defaults.emailHello).toBe("[127.0.0.1]");
    expect(defaults.NOTIFICATIONS_MAX_AGE).toBe(36 * 3600 * 1000);
    expect(configWith({ EMAIL_HELLO: "mail.example.org" }).emailHello).toBe("mail.example.org");
  });
});

describe("the suite's settings are pinned", () => {
  it("every configuration variable the Worker sees is the suite's own, so a developer's .dev.vars cannot change a test", () => {
    const seen = env as unknown as Record<string, unknown>;
    for (const key of CONFIG_KEYS) {
      if ((PEER_VARS as readonly string[]).includes(key)) expect(String(seen[key]), key).toMatch(/^(http:\/\/)?127\.0\.0\.1:\d+/);
      else expect(seen[key], key).toBe(WORKERD_VARS[key]);
    }
  });
});
