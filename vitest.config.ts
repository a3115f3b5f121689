import path from "node:path";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { configDefaults, defineConfig } from "vitest/config";
import { WORKERD_VARS } from "./test/fixtures/vars.ts";

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
            // Every configuration variable, pinned: a developer's .dev.vars cannot change a test (test/fixtures/vars.ts).
            ...WORKERD_VARS,
            EMAIL_SMARTHOST: `127.0.0.1:${inject("smtpPort")}`,
            NOTIFICATIONS_WEBHOOK_URL: `http://127.0.0.1:${inject("peerPort")}/webhook`,
            // The peers' control API (test/peers.ts), on the webhook receiver's port.
            PEER_URL: `http://127.0.0.1:${inject("peerPort")}`,
            // Plain http is fine for the OAuth peers: both are loopback addresses; test/external/oauth-peers.ts scripts who signs in.
            OIDC_ISSUER_URL: inject("oidcIssuer"),
            GITHUB_WEB_URL: inject("githubWebUrl"),
            GITHUB_API_URL: inject("githubApiUrl"),
            // Push endpoints and users' own targets may point only at the stand-ins (docs/targets.md, "Outbound
            // safety"); tests reach their control APIs at the same origins (test/peers.ts, test/targets/stand-ins.ts).
            OUTBOUND_ALLOWED_ORIGINS: `${inject("pushServiceUrl")},${inject("targetsOrigin")}`,
            PUSH_SERVICE_URL: inject("pushServiceUrl"),
            TARGETS_URL: inject("targetsOrigin"),
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
      // The browser bundles first: wrangler.toml's [assets] directory must exist before workerd starts.
      globalSetup: ["./test/build-ui.setup.ts", "./test/peers/global-setup.ts"],
      // The security log (src/http/security-log.ts) writes a line per refusal, thousands in a run: test/http/conventions.test.ts
      // asserts them, the console stays readable.
      onConsoleLog: (log: string) => !log.startsWith('{"herald":"security"'),
      testTimeout: 30_000,
      hookTimeout: 30_000,
    },
  };
});
