import type { Config } from "../config/config";

export type ExternalLoginType = "oidc" | "github";

/** Who the provider says signed in. Only a verified e-mail is ever trusted. */
export interface ExternalIdentity {
  issuer: string;
  subject: string;
  email: string;
  emailVerified: boolean;
  name: string;
  username: string;
}

/** What the start of a flow keeps (in a signed cookie) for its end to check. */
export interface FlowChecks {
  state: string;
  codeVerifier: string;
  nonce: string;
  redirectUri: string;
}

export interface ExternalProvider {
  type: ExternalLoginType;
  /** The callback path under /api/v2, which is also the redirect URI registered with the provider. */
  callbackPath: string;
  configured(config: Config): boolean;
  authorizationUrl(config: Config, checks: FlowChecks, codeChallenge: string): Promise<URL>;
  /** Exchanges the code and reads the identity; throws ApiError with a clear message on any failure. */
  complete(config: Config, callbackUrl: URL, checks: FlowChecks): Promise<ExternalIdentity>;
}
