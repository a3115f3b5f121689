import type { Config } from "../config/config";
import type { Env } from "../env";
import type { AuthContext } from "../auth/session";

/** Hono environment shared by every sub-app: bindings plus per-request variables. */
export interface AppEnv {
  Bindings: Env;
  Variables: {
    requestId: string;
    config: Config;
    /** Set by `requireAuth`; absent on public routes. */
    auth: AuthContext;
  };
}
