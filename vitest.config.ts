import path from "node:path";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { configDefaults, defineConfig } from "vitest/config";

// Tests run inside workerd with the real local D1, Durable Objects and rate limiters of wrangler.toml.
export default defineConfig(async () => {
  const migrations = await readD1Migrations(path.join(import.meta.dirname, "drizzle"));
  return {
    plugins: [
      // A function, so the bindings can point at the peers that test/peers/global-setup.ts started on free ports.
      cloudflareTest(({ inject }) => ({
        wrangler: { configPath: "./wrangler.toml" },
        miniflare: {
          bindings: {
            TEST_MIGRATIONS: migrations,
            // A fixed test secret; production secrets come from `wrangler secret put`.
            SECRET_KEY: "test-secret-key-0123456789abcdefghijklmnopqrstuvwxyz",
            // Tests edit D1 directly (expiry, status) and expect the next request to see it; the isolate cache of
            // authentication has its own test, which turns it on through an env override.
            AUTH_CACHE_TTL: "0s",
            // Notifications go to real protocol peers on 127.0.0.1: a plain-text SMTP server and a webhook receiver.
            EMAIL_SMARTHOST: `127.0.0.1:${inject("smtpPort")}`,
            EMAIL_FROM: "herald@herald.test",
            EMAIL_TLS: "none",
            // The peer offers AUTH, so the Worker authenticates (and the test sees with which user).
            EMAIL_USERNAME: "herald",
            EMAIL_PASSWORD: "smtp-test-password",
            NOTIFICATIONS_WEBHOOK_SECRET: "whsec_dGVzdC13ZWJob29rLXNpZ25pbmcta2V5LTAxMjM0NQ==",
            NOTIFICATIONS_WEBHOOK_URL: `http://127.0.0.1:${inject("peerPort")}/webhook`,
            // The peers' control API (test/peers.ts), on the webhook receiver's port.
            PEER_URL: `http://127.0.0.1:${inject("peerPort")}`,
            // Short retry backoff so retry tests finish in seconds.
            NOTIFICATIONS_RETRY_BASE: "1s",
            // External sign-in against real OAuth peers on 127.0.0.1 (test/peers/oidc.ts, test/peers/github.ts);
            // test/oauth-peers.ts scripts who signs in. Plain http is fine: both are loopback addresses.
            OIDC_ISSUER_URL: inject("oidcIssuer"),
            OIDC_CLIENT_ID: "herald",
            OIDC_CLIENT_SECRET: "herald-oidc-secret",
            GITHUB_CLIENT_ID: "herald-gh",
            GITHUB_CLIENT_SECRET: "herald-gh-secret",
            GITHUB_WEB_URL: inject("githubWebUrl"),
            GITHUB_API_URL: inject("githubApiUrl"),
          },
        },
      })),
    ],
    test: {
      include: ["test/**/*.test.ts"],
      // Node-side tests (a real browser, real HTTP clients) have their own config: vitest.node.config.ts.
      exclude: [...configDefaults.exclude, "test/node/**", "test/e2e/**"],
      setupFiles: ["./test/setup.ts"],
      // Starts the SMTP, webhook, OpenID Provider and GitHub peers in Node before any workerd test runs.
      globalSetup: ["./test/peers/global-setup.ts"],
      testTimeout: 30_000,
      hookTimeout: 30_000,
    },
  };
});
