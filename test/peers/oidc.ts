// A real OpenID Provider (panva's oidc-provider, the certified Node implementation) for Herald's OIDC sign-in tests.
// It runs in Node (vitest globalSetup) on its own 127.0.0.1 port; the Worker under test reaches it over plain http,
// exactly like it would reach an IdP in production (discovery, authorize, token, JWKS, userinfo are all genuine).
//
// The only stand-in part is the user interaction: instead of login and consent pages, GET /interaction/:uid finishes
// the interaction at once, as the account the tests scripted through the control API (see global-setup.ts), so a
// client that merely follows redirects and carries cookies walks
//   authorize → /interaction/:uid (login) → authorize resume → /interaction/:uid (consent) → authorize resume
//   → redirect_uri?code=…&state=…&iss=…
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import Provider, { type Account, type Adapter, type AdapterPayload, type Configuration, type InteractionResults, type JWK } from "oidc-provider";
import { flowScriptOf } from "./flow-script";

/** The identity the provider signs in as. Claim names are the OIDC standard ones, so they reach tokens as-is. */
export interface OidcAccount {
  sub: string;
  email: string;
  email_verified: boolean;
  name?: string;
  preferred_username?: string;
}

/** An error the next authorization ends with, delivered to the redirect_uri like a real IdP would. */
export interface OidcScriptedError {
  error: string;
  error_description?: string;
}

const OIDC_CLIENT_ID = "herald";
const OIDC_CLIENT_SECRET = "herald-oidc-secret";
/** ACCESS_URL in the tests is http://localhost:8787; Herald's OIDC callback lives under /api/v2. */
// The end-to-end suite runs Herald on a free port and says where through HERALD_ACCESS_URL.
const OIDC_REDIRECT_URI = `${process.env.HERALD_ACCESS_URL ?? "http://localhost:8787"}/api/v2/users/oidc/callback`;

/** Signs in when no test scripted an account, so a flow never stalls on a missing script. */
const DEFAULT_OIDC_ACCOUNT: OidcAccount = {
  sub: "oidc-default-user",
  email: "oidc-default-user@idp.test",
  email_verified: true,
  name: "OIDC Default User",
  preferred_username: "oidc-default-user",
};

export class OidcPeer {
  private nextLogin: OidcAccount = DEFAULT_OIDC_ACCOUNT;
  private nextError: OidcScriptedError | undefined;

  private constructor(
    private readonly server: Server,
    private readonly provider: Provider,
    /** Every account ever scripted, by sub: tokens and userinfo look claims up here after the interaction is over. */
    private readonly accounts: Map<string, OidcAccount>,
  ) {}

  /** The issuer identifier, `http://127.0.0.1:<port>` (no trailing slash, as in the discovery document). */
  get issuer(): string {
    return this.provider.issuer;
  }

  static async start(host: string): Promise<OidcPeer> {
    // The issuer has to contain the port, and the port is only known once the socket is bound: bind first with a
    // dispatcher that forwards to whatever peer is installed below.
    let peer: OidcPeer | undefined;
    const server = createServer((req, res) => {
      if (!peer) {
        res.writeHead(503).end();
        return;
      }
      peer.dispatch(req, res);
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, host, () => {
        server.off("error", reject);
        resolve();
      });
    });
    const { port } = server.address() as AddressInfo;
    const issuer = `http://${host}:${port}`;

    const accounts = new Map<string, OidcAccount>([[DEFAULT_OIDC_ACCOUNT.sub, DEFAULT_OIDC_ACCOUNT]]);
    const provider = new Provider(
      issuer,
      configuration((sub) => accounts.get(sub)),
    );
    // OAuth errors (invalid_grant, …) are answered to the client and expected in tests; server_error means a bug in
    // this peer or its configuration, which should be loud.
    provider.on("server_error", (_ctx: unknown, error: unknown) => {
      console.error("[oidc peer] server_error:", error);
    });
    peer = new OidcPeer(server, provider, accounts);
    return peer;
  }

  /** Sets the account the following interactions sign in as (until changed or reset). */
  setNextLogin(account: OidcAccount): void {
    this.accounts.set(account.sub, account);
    this.nextLogin = account;
  }

  /** Makes the next interaction end the authorization with `error` instead of signing in (once). */
  setNextError(error: OidcScriptedError): void {
    this.nextError = error;
  }

  /**
   * Forgets the scripted login and error. Known accounts stay, so a flow another test file has in flight can still
   * redeem its code and call userinfo.
   */
  reset(): void {
    this.nextLogin = DEFAULT_OIDC_ACCOUNT;
    this.nextError = undefined;
  }

  async stop(): Promise<void> {
    // workerd keeps connections alive; without this, close() waits for their idle timeout.
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private dispatch(req: IncomingMessage, res: ServerResponse): void {
    const path = new URL(req.url ?? "/", "http://peer").pathname;
    if (req.method === "GET" && path.startsWith("/interaction/")) {
      this.interaction(req, res).catch((error: unknown) => {
        // E.g. SessionNotFound when the client lost the interaction cookie: say so in the response the test records.
        if (!res.headersSent) res.writeHead(400, { "content-type": "text/plain" });
        res.end(`interaction failed: ${error instanceof Error ? error.message : String(error)}`);
      });
      return;
    }
    this.callback(req, res);
  }

  /** The provider's own request listener (Provider extends Koa, whose callback() is a Node listener), made once. */
  private get callback(): (req: IncomingMessage, res: ServerResponse) => void {
    this.cachedCallback ??= this.provider.callback();
    return this.cachedCallback;
  }
  private cachedCallback: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;

  /** Finishes the pending interaction without any UI: scripted error, else login as nextLogin, else full consent. */
  private async interaction(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const interaction = await this.provider.interactionDetails(req, res);
    // A test's browser carries its own script; only a flow without one (a real browser) uses the peer's.
    const flow = flowScriptOf(req)?.oidc;

    const scripted = flow ? flow.error : this.nextError;
    if (scripted) {
      if (!flow) this.nextError = undefined;
      // An `error` result makes the resumed authorization redirect to redirect_uri?error=…&state=….
      const result: InteractionResults = { ...scripted };
      await this.provider.interactionFinished(req, res, result, { mergeWithLastSubmission: false });
      return;
    }

    switch (interaction.prompt.name) {
      case "login": {
        const account = flow ? (flow.login ?? DEFAULT_OIDC_ACCOUNT) : this.nextLogin;
        this.accounts.set(account.sub, account);
        // remember: false keeps the provider session cookie transient; each test's cookie jar is a fresh "browser".
        await this.provider.interactionFinished(req, res, { login: { accountId: account.sub, remember: false } }, { mergeWithLastSubmission: false });
        return;
      }
      case "consent": {
        // Auto-consent: grant exactly what the provider reports as missing (the example flow of oidc-provider's docs).
        const accountId = interaction.session?.accountId;
        if (!accountId) throw new Error("consent prompt without a signed-in session");
        const { details } = interaction.prompt;
        const grant = interaction.grantId
          ? await this.provider.Grant.find(interaction.grantId)
          : new this.provider.Grant({ accountId, clientId: String(interaction.params.client_id) });
        if (!grant) throw new Error(`grant ${interaction.grantId} vanished`);
        const scopes = stringArray(details.missingOIDCScope);
        if (scopes) grant.addOIDCScope(scopes.join(" "));
        const claims = stringArray(details.missingOIDCClaims);
        if (claims) grant.addOIDCClaims(claims);
        const resourceScopes = details.missingResourceScopes;
        if (typeof resourceScopes === "object" && resourceScopes !== null) {
          for (const [indicator, scope] of Object.entries(resourceScopes)) {
            const list = stringArray(scope);
            if (list) grant.addResourceScope(indicator, list.join(" "));
          }
        }
        const grantId = await grant.save();
        // Only a new grant's id goes into the result; an existing one was updated in place.
        const consent = interaction.grantId ? {} : { grantId };
        await this.provider.interactionFinished(req, res, { consent }, { mergeWithLastSubmission: true });
        return;
      }
      default:
        throw new Error(`unsupported prompt ${interaction.prompt.name}`);
    }
  }
}

/**
 * The provider's state (sessions, grants, codes) in memory, per model, with expiry. Stated explicitly rather than
 * left to oidc-provider's development adapter, which warns on start that it must be replaced: in a test peer that
 * lives for one run, memory is the intended store.
 */
class MemoryAdapter implements Adapter {
  private static readonly stores = new Map<string, Map<string, { payload: AdapterPayload; expiresAt: number }>>();
  private readonly store: Map<string, { payload: AdapterPayload; expiresAt: number }>;

  constructor(model: string) {
    const existing = MemoryAdapter.stores.get(model);
    this.store = existing ?? new Map();
    if (!existing) MemoryAdapter.stores.set(model, this.store);
  }

  async upsert(id: string, payload: AdapterPayload, expiresIn?: number): Promise<void> {
    this.store.set(id, { payload, expiresAt: expiresIn ? Date.now() + expiresIn * 1000 : Number.POSITIVE_INFINITY });
  }

  async find(id: string): Promise<AdapterPayload | undefined> {
    const entry = this.store.get(id);
    if (!entry) return undefined;
    if (entry.expiresAt <= Date.now()) {
      this.store.delete(id);
      return undefined;
    }
    return entry.payload;
  }

  async findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
    for (const [id, entry] of this.store) if (entry.payload.userCode === userCode) return this.find(id);
    return undefined;
  }

  async findByUid(uid: string): Promise<AdapterPayload | undefined> {
    for (const [id, entry] of this.store) if (entry.payload.uid === uid) return this.find(id);
    return undefined;
  }

  async consume(id: string): Promise<void> {
    const entry = this.store.get(id);
    if (entry) entry.payload.consumed = Math.floor(Date.now() / 1000);
  }

  async destroy(id: string): Promise<void> {
    this.store.delete(id);
  }

  async revokeByGrantId(grantId: string): Promise<void> {
    for (const [id, entry] of this.store) if (entry.payload.grantId === grantId) this.store.delete(id);
  }
}

function configuration(findAccountClaims: (sub: string) => OidcAccount | undefined): Configuration {
  return {
    adapter: MemoryAdapter,
    clients: [
      {
        client_id: OIDC_CLIENT_ID,
        client_secret: OIDC_CLIENT_SECRET,
        // oidc-provider treats client_secret_basic and client_secret_post as one family: a client registered for
        // either may authenticate with both (openid-client defaults to client_secret_post).
        token_endpoint_auth_method: "client_secret_basic",
        grant_types: ["authorization_code"],
        response_types: ["code"],
        redirect_uris: [OIDC_REDIRECT_URI],
      },
    ],
    // A fresh RS256 key per run (RS256 is what clients expect by default); avoids the provider's dev-key warning.
    jwks: { keys: [signingKey()] },
    // The signing keys of the provider's cookies (the `.sig` companions); random per run, nothing persists.
    cookies: {
      keys: [randomBytes(32).toString("hex")],
      // secure stays false: the provider would only add Secure on an https request anyway, and this is plain http.
      long: { httpOnly: true, sameSite: "lax", secure: false },
      short: { httpOnly: true, sameSite: "lax", secure: false },
    },
    claims: {
      openid: ["sub"],
      email: ["email", "email_verified"],
      profile: ["name", "preferred_username"],
    },
    // The default, conformant behaviour keeps scope-derived claims out of an ID token issued with an access token
    // (they are left to userinfo). Many real IdPs (Google, Okta, Keycloak) put them in the ID token as well, which is
    // what Herald reads first, so this peer does too.
    conformIdTokenClaims: false,
    // PKCE for every client, confidential ones included (oidc-provider only requires it for public clients by
    // default). Only S256 exists in oidc-provider 9.
    pkce: { required: () => true },
    features: {
      // The built-in HTML login/consent pages are replaced by the redirect-only interaction above.
      devInteractions: { enabled: false },
    },
    interactions: {
      url: (_ctx, interaction) => `/interaction/${interaction.uid}`,
    },
    // Fixed lifetimes (seconds), long enough for any test run; the provider nags at startup about each default.
    ttl: {
      AuthorizationCode: 60,
      Interaction: 600,
      Session: 3600,
      Grant: 3600,
      AccessToken: 3600,
      IdToken: 3600,
    },
    findAccount: (_ctx, sub): Account | undefined => {
      const account = findAccountClaims(sub);
      if (!account) return undefined;
      return {
        accountId: sub,
        // The provider filters these down to what the granted scopes/claims allow, per token and for userinfo.
        claims: () => ({ ...account }),
      };
    },
  };
}

function signingKey(): JWK {
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const jwk = privateKey.export({ format: "jwk" });
  return { ...jwk, kid: "herald-test-rs256", alg: "RS256", use: "sig" };
}

function stringArray(value: unknown): string[] | undefined {
  return Array.isArray(value) && value.every((v): v is string => typeof v === "string") ? value : undefined;
}
