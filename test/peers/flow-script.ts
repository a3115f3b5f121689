import type { IncomingMessage } from "node:http";
import type { GithubAccount, GithubScriptedError } from "./github";
import type { OidcAccount, OidcScriptedError } from "./oidc";

/**
 * What one "browser" has scripted the OAuth peers to do: who signs in, or which error ends the authorization. A test's
 * browser (followRedirects in test/external/oauth-peers.ts) sends it with every request to a peer, in this header, as
 * base64url JSON. Scripting travels with the flow rather than living in the peer, so test files that run at the same
 * time never take each other's login or error (docs/testing.md, "The workerd suite").
 */
export const FLOW_SCRIPT_HEADER = "x-peer-flow-script";

export interface FlowScript {
  oidc?: { login?: OidcAccount; error?: OidcScriptedError };
  github?: { login?: GithubAccount; error?: GithubScriptedError };
}

/** The script a request carries, if any (the browser e2e flows carry none: the peer's own scripting applies). */
export function flowScriptOf(req: IncomingMessage): FlowScript | undefined {
  const header = req.headers[FLOW_SCRIPT_HEADER];
  if (typeof header !== "string") return undefined;
  return JSON.parse(Buffer.from(header, "base64url").toString("utf8")) as FlowScript;
}
