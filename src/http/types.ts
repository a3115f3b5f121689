import type { AuthContext } from "../auth/session";
import type { Config } from "../config/config";
import type { Database } from "../db/client";
import type { SessionStart } from "../db/session";
import type { Env } from "../env";

/** Hono environment shared by every sub-app: bindings plus per-request variables. */
export interface AppEnv {
  Bindings: Env;
  Variables: {
    requestId: string;
    config: Config;
    /** Set by `requireAuth`; absent on public routes. */
    auth: AuthContext;
    /** The request's D1 session, where it began, and its Drizzle handle: opened by `dbFor` on first use (src/db/session.ts). */
    d1Session?: D1DatabaseSession;
    d1Start?: SessionStart;
    db?: Database;
    /** The answer whose headers `writableHeaders` last made ready (src/http/middleware.ts). */
    writableAnswer?: Response;
  };
}
