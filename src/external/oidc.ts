import * as client from "openid-client";
import type { Config } from "../config/config";
import { ApiError } from "../http/errors";
import { ExternalMessages } from "./messages";
import type { ExternalIdentity, ExternalProvider, FlowChecks } from "./provider";

const SCOPE = "openid email profile";
// Discovery is a network round trip; an isolate reuses the issuer's metadata and keys.
const configurations = new Map<string, Promise<client.Configuration>>();

function isLoopback(url: URL): boolean {
  return /^(localhost|127\.\d+\.\d+\.\d+|\[::1\])$/.test(url.hostname);
}

function configuration(config: Config): Promise<client.Configuration> {
  const issuer = new URL(config.OIDC_ISSUER_URL ?? "");
  const key = `${issuer.href}|${config.OIDC_CLIENT_ID}`;
  let found = configurations.get(key);
  if (!found) {
    found = client
      .discovery(issuer, config.OIDC_CLIENT_ID ?? "", config.OIDC_CLIENT_SECRET, undefined, {
        // Plain http is accepted only for an issuer on this machine (config validation enforces the same). The ID
        // token's signature is checked against the issuer's JWKS, not only trusted for arriving over TLS from the
        // token endpoint (docs/security.md, V6.8 and V9.1).
        execute: [client.enableNonRepudiationChecks, ...(issuer.protocol === "http:" && isLoopback(issuer) ? [client.allowInsecureRequests] : [])],
      })
      .catch((error: unknown) => {
        configurations.delete(key);
        throw error;
      });
    configurations.set(key, found);
  }
  return found;
}

async function discovered(config: Config): Promise<client.Configuration> {
  try {
    return await configuration(config);
  } catch {
    throw new ApiError(502, ExternalMessages.oidcUnreachable, { detail: ExternalMessages.oidcUnreachableDetail });
  }
}

/** Any standard OpenID Connect issuer, through openid-client: code flow with state, PKCE (S256) and nonce. */
export const oidcProvider: ExternalProvider = {
  type: "oidc",
  callbackPath: "/users/oidc/callback",
  configured: (config) => Boolean(config.OIDC_ISSUER_URL && config.OIDC_CLIENT_ID),

  async authorizationUrl(config, checks, codeChallenge) {
    return client.buildAuthorizationUrl(await discovered(config), {
      redirect_uri: checks.redirectUri,
      scope: SCOPE,
      state: checks.state,
      nonce: checks.nonce,
      code_challenge: codeChallenge,
      code_challenge_method: "S256",
    });
  },

  async complete(config, callbackUrl, checks: FlowChecks): Promise<ExternalIdentity> {
    const oidc = await discovered(config);
    let tokens: Awaited<ReturnType<typeof client.authorizationCodeGrant>>;
    try {
      tokens = await client.authorizationCodeGrant(oidc, callbackUrl, {
        pkceCodeVerifier: checks.codeVerifier,
        expectedState: checks.state,
        expectedNonce: checks.nonce,
        idTokenExpected: true,
      });
    } catch {
      throw new ApiError(400, ExternalMessages.oidcExchangeFailed);
    }
    const claims = tokens.claims();
    if (!claims) throw new ApiError(400, ExternalMessages.oidcNoIdToken);
    let info: client.UserInfoResponse = { sub: claims.sub };
    try {
      info = await client.fetchUserInfo(oidc, tokens.access_token, claims.sub);
    } catch {
      // Userinfo is optional for providers that put everything in the ID token.
    }
    const email = String(info.email ?? claims.email ?? "");
    // A verification flag counts only for the address it came with (docs/api.md, "External sign-in"): userinfo's
    // email_verified vouches for userinfo's e-mail, the ID token's for the ID token's, so no flag vouches for another
    // address.
    const verified =
      info.email !== undefined && info.email_verified !== undefined ? info.email_verified : claims.email === email ? claims.email_verified : false;
    return {
      issuer: oidc.serverMetadata().issuer,
      subject: claims.sub,
      email,
      emailVerified: verified === true || verified === "true",
      name: String(info.name ?? claims.name ?? ""),
      username: String(info.preferred_username ?? claims.preferred_username ?? email.split("@")[0] ?? ""),
    };
  },
};
