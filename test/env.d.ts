import type { D1Migration } from "cloudflare:test";

declare global {
  namespace Cloudflare {
    interface Env {
      TEST_MIGRATIONS: D1Migration[];
      PEER_URL: string;
      // The stand-ins of users' own targets (test/peers/targets.ts): http://127.0.0.1:<port>.
      TARGETS_URL: string;
      /** The Web Push service stand-in's origin (test/peers/push-service.ts). */
      PUSH_SERVICE_URL: string;
      // GitHub's web and API base URLs, pointed at the stand-in in test/peers/github.ts.
      GITHUB_WEB_URL?: string;
      GITHUB_API_URL?: string;
    }
    interface GlobalProps {
      mainModule: typeof import("../src/index");
    }
  }
}
