import { ApiError } from "../http/errors";
import { ExternalMessages } from "./messages";
import type { ExternalIdentity, ExternalProvider } from "./provider";

// Least privilege (docs/security.md, V13.2): `GET /user` answers the public profile without a scope; only the e-mail
// list needs one.
const SCOPE = "user:email";
const TIMEOUT_MS = 10_000;

interface GitHubUser {
  id: number;
  login: string;
  name: string | null;
}

interface GitHubEmail {
  email: string;
  primary: boolean;
  verified: boolean;
}

async function githubApi<T>(apiUrl: string, path: string, token: string): Promise<T> {
  const res = await fetch(`${apiUrl.replace(/\/$/, "")}${path}`, {
    headers: { Authorization: `Bearer ${token}`, Accept: "application/vnd.github+json", "User-Agent": "Herald" },
    // Never follow a redirect with the user's token (docs/security.md, V15): a 3xx is a refusal like any other.
    redirect: "manual",
    signal: AbortSignal.timeout(TIMEOUT_MS),
  });
  if (!res.ok)
    throw new ApiError(400, ExternalMessages.githubProfileRefused, { detail: ExternalMessages.githubProfileRefusedDetail(path, res.status) });
  return (await res.json()) as T;
}

/** GitHub OAuth: authorize → code exchange → the user's primary verified e-mail (GitHub issues no ID token). */
export const githubProvider: ExternalProvider = {
  type: "github",
  callbackPath: "/users/oauth2/github/callback",
  configured: (config) => Boolean(config.GITHUB_CLIENT_ID && config.GITHUB_CLIENT_SECRET),

  async authorizationUrl(config, checks, codeChallenge) {
    const url = new URL("/login/oauth/authorize", config.GITHUB_WEB_URL);
    url.search = new URLSearchParams({
      client_id: config.GITHUB_CLIENT_ID ?? "",
      redirect_uri: checks.redirectUri,
      scope: SCOPE,
      state: checks.state,
      code_challenge: codeChallenge,
      code_challenge_method: "S256",
      allow_signup: "false",
    }).toString();
    return url;
  },

  async complete(config, callbackUrl, checks): Promise<ExternalIdentity> {
    if (callbackUrl.searchParams.get("state") !== checks.state) throw new ApiError(400, ExternalMessages.githubStateMismatch);
    let token: string | undefined;
    try {
      const res = await fetch(new URL("/login/oauth/access_token", config.GITHUB_WEB_URL), {
        method: "POST",
        headers: { Accept: "application/json", "Content-Type": "application/json", "User-Agent": "Herald" },
        body: JSON.stringify({
          client_id: config.GITHUB_CLIENT_ID,
          client_secret: config.GITHUB_CLIENT_SECRET,
          code: callbackUrl.searchParams.get("code"),
          redirect_uri: checks.redirectUri,
          code_verifier: checks.codeVerifier,
        }),
        // The body carries the client secret: it goes to GITHUB_WEB_URL and nowhere a redirect points.
        redirect: "manual",
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
      // GitHub reports a bad code as 200 with an `error` field.
      const body = (await res.json()) as { access_token?: string; error?: string };
      token = res.ok ? body.access_token : undefined;
    } catch {
      token = undefined;
    }
    if (!token) throw new ApiError(400, ExternalMessages.githubExchangeFailed);

    const [user, emails] = await Promise.all([
      githubApi<GitHubUser>(config.GITHUB_API_URL, "/user", token),
      githubApi<GitHubEmail[]>(config.GITHUB_API_URL, "/user/emails", token),
    ]);
    const primary = emails.find((e) => e.primary && e.verified);
    return {
      issuer: new URL(config.GITHUB_WEB_URL).origin,
      subject: String(user.id),
      email: primary?.email ?? "",
      emailVerified: primary !== undefined,
      name: user.name ?? "",
      username: user.login,
    };
  },
};
