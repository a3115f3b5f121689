import { type Context, Hono } from "hono";
import * as client from "openid-client";
import { auditInsert } from "../audit/log";
import { AuthMessages } from "../auth/messages";
import { issueChallenge } from "../auth/mfa/challenge";
import { factorsOf, hasSecondFactor, secondFactorMethods } from "../auth/mfa/factors";
import { verifyPassword } from "../auth/passwords/hash";
import { limitPerAccount, limitPerIp } from "../auth/rate-limit";
import { requireAuth } from "../auth/session";
import { startSession } from "../auth/sign-in";
import { assertCan } from "../authz/guard";
import { loginConversions } from "../db/schema";
import { dbFor } from "../db/session";
import { ApiError, badRequest, forbidden, Messages } from "../http/errors";
import type { AppEnv } from "../http/types";
import { jsonBody } from "../http/validate";
import { nowIso, randomAlphanumeric } from "../lib/crypto";
import { describeRoute, errors, LOCATION, RATE, SET_SESSION_COOKIE, USER_404 } from "../openapi/describe";
import { resolveUser } from "../users/resolve";
import { userPath } from "../users/schemas";
import { completeConversion, conversionStateHmac, resolveExternalUser } from "./accounts";
import { CONVERSION_COOKIE, clearSignedCookie, FLOW_COOKIE, readSignedCookie, setSignedCookie } from "./cookies";
import { githubProvider } from "./github";
import { ExternalMessages } from "./messages";
import { oidcProvider } from "./oidc";
import type { ExternalLoginType, ExternalProvider, FlowChecks } from "./provider";
import { callbackQuery, convertLoginBody, OAuthConversionResponse } from "./schemas";

const FLOW_TTL_MS = 10 * 60 * 1000;
const CONVERSION_TTL_MS = 5 * 60 * 1000;
const PROVIDERS: Record<ExternalLoginType, ExternalProvider> = { oidc: oidcProvider, github: githubProvider };

interface FlowState extends FlowChecks {
  type: ExternalLoginType;
  redirect: string;
  merge?: { state: string; userId: string };
}

interface ConversionCookie {
  state: string;
  userId: string;
  toType: ExternalLoginType;
}

/**
 * Where a browser may be sent after a sign-in: a path on this service, or a full URL whose origin is one of
 * CORS_ALLOWED_ORIGINS (a dashboard on another origin getting its user back). Anything else — another host, a scheme,
 * `//host`, `\\host`, credentials in the URL — becomes "/".
 */
export function safeRedirect(target: string | undefined, origin: string, allowedOrigins: readonly string[] = []): string {
  if (!target || /[\u0000-\u001f]/.test(target)) return "/";
  if (/^https?:\/\//i.test(target)) {
    const url = URL.parse(target);
    const allowed = allowedOrigins.some((o) => (URL.parse(o)?.origin ?? o) === url?.origin);
    return url && allowed && !url.username && !url.password ? url.href : "/";
  }
  if (!target.startsWith("/") || target.startsWith("//") || target.includes("\\")) return "/";
  const url = URL.parse(target, origin);
  if (!url || url.origin !== origin) return "/";
  // Parsing removes dot segments ("/.//evil.example" becomes "//evil.example"): check what is actually returned.
  const path = `${url.pathname}${url.search}${url.hash}`;
  return path.startsWith("//") || path.startsWith("/\\") ? "/" : path;
}

/** The callback URL as registered with the provider (ACCESS_URL's origin), carrying this request's query. */
function canonicalCallback(c: Context<AppEnv>, provider: ExternalProvider): URL {
  const url = new URL(`/api/v2${provider.callbackPath}`, c.get("config").origin);
  url.search = new URL(c.req.url).search;
  return url;
}

async function startFlow(c: Context<AppEnv>, provider: ExternalProvider, query: URLSearchParams): Promise<Response> {
  const config = c.get("config");
  const mergeState = query.get("oidc_merge_state");
  let merge: FlowState["merge"];
  if (mergeState !== null) {
    const conversion = await readSignedCookie<ConversionCookie>(c, config, CONVERSION_COOKIE, "login conversion");
    if (conversion.state !== mergeState) throw badRequest(ExternalMessages.conversionStateMismatch);
    if (conversion.toType !== provider.type) throw badRequest(ExternalMessages.conversionForOther(conversion.toType, provider.type));
    merge = { state: conversion.state, userId: conversion.userId };
  }
  const checks: FlowChecks = {
    state: client.randomState(),
    codeVerifier: client.randomPKCECodeVerifier(),
    nonce: client.randomNonce(),
    redirectUri: new URL(`/api/v2${provider.callbackPath}`, config.origin).href,
  };
  const authorize = await provider.authorizationUrl(config, checks, await client.calculatePKCECodeChallenge(checks.codeVerifier));
  const flow: FlowState = {
    ...checks,
    type: provider.type,
    redirect: safeRedirect(query.get("redirect") ?? undefined, config.origin, config.CORS_ALLOWED_ORIGINS),
    ...(merge ? { merge } : {}),
  };
  await setSignedCookie(c, config, FLOW_COOKIE, flow, FLOW_TTL_MS);
  return c.redirect(authorize.href, 302);
}

async function finishFlow(c: Context<AppEnv>, provider: ExternalProvider, query: URLSearchParams): Promise<Response> {
  const config = c.get("config");
  const flow = await readSignedCookie<FlowState>(c, config, FLOW_COOKIE, "sign-in");
  if (flow.type !== provider.type) throw badRequest(ExternalMessages.otherProvider);
  const error = query.get("error");
  if (error !== null) {
    throw badRequest(ExternalMessages.providerError, {
      detail: `${error.slice(0, 100)}${query.get("error_description") ? `: ${(query.get("error_description") ?? "").slice(0, 200)}` : ""}`,
    });
  }
  if (query.get("state") !== flow.state) throw badRequest(ExternalMessages.stateMismatch);

  const identity = await provider.complete(config, canonicalCallback(c, provider), flow);
  if (!identity.email || !identity.emailVerified) throw forbidden(Messages.forbidden, ExternalMessages.emailNotVerified);
  const domain = identity.email.split("@").pop()?.toLowerCase() ?? "";
  if (provider.type === "oidc" && config.OIDC_EMAIL_DOMAIN.length > 0 && !config.OIDC_EMAIL_DOMAIN.includes(domain)) {
    throw forbidden(Messages.forbidden, ExternalMessages.domainNotAllowed);
  }

  const user = flow.merge ? await completeConversion(c, provider.type, identity, flow.merge) : await resolveExternalUser(c, provider.type, identity);
  const db = dbFor(c, "write");
  clearSignedCookie(c, config, FLOW_COOKIE);
  if (flow.merge) clearSignedCookie(c, config, CONVERSION_COOKIE);
  // A user with a second factor is not signed in yet: the dashboard asks for it (docs/second-factor.md, "Signing in").
  const factors = await factorsOf(db, user.id);
  if (hasSecondFactor(factors)) {
    const challenge = await issueChallenge(db, { userId: user.id, loginType: provider.type, methods: [provider.type], redirect: flow.redirect });
    await db.batch([
      challenge.insert,
      auditInsert(db, c, {
        userId: user.id,
        action: "login_second_factor_asked",
        resourceType: "user",
        resourceId: user.id,
        diff: { login_type: provider.type },
      }),
    ]);
    return c.redirect(secondFactorPage(config.origin, challenge.token, secondFactorMethods(factors)), 302);
  }
  await startSession(c, db, { userId: user.id, loginType: provider.type, methods: [provider.type], diff: { login_type: provider.type } });
  return c.redirect(flow.redirect, 302);
}

/**
 * The dashboard's second-factor page: `<ACCESS_URL origin>/#/second-factor?mfa_token=…&methods=…`. All in the
 * fragment, which never reaches a server or a log; the page finishes with `POST /users/login/mfa`, whose answer names
 * the `redirect` kept with the challenge, already made safe by `safeRedirect` (docs/second-factor.md, "Signing in").
 */
function secondFactorPage(origin: string, token: string, methods: readonly string[]): string {
  return `${origin}/#/second-factor?mfa_token=${token}&methods=${methods.join(",")}`;
}

/** Both callbacks: without `code` (or `error`) they start the provider flow, with it they finish it. */
function callback(provider: ExternalProvider) {
  return async (c: Context<AppEnv>) => {
    await limitPerIp(c, "external-login");
    if (!provider.configured(c.get("config")))
      throw badRequest(ExternalMessages.notConfigured(provider.type === "oidc" ? "OpenID Connect" : "GitHub"));
    const query = new URL(c.req.url).searchParams;
    return query.has("code") || query.has("error") ? finishFlow(c, provider, query) : startFlow(c, provider, query);
  };
}

function describeCallback(operationId: string, provider: string) {
  return describeRoute({
    operationId,
    summary: `${provider} sign-in callback`,
    description:
      "Without `code` or `error`, starts the provider flow (state, nonce and PKCE in a signed cookie) and redirects to the provider; with `oidc_merge_state` it continues a convert-login. With `code` or `error`, finishes the flow: the provider's verified e-mail signs in (or, if allowed, signs up) a user of this login type, or completes the conversion; a session cookie is set and the browser is redirected to `redirect`. A user with a second factor gets no session yet: the browser goes to the dashboard's second-factor page, `/#/second-factor?mfa_token=…&methods=…`, which finishes with `POST /users/login/mfa` (its answer names `redirect`).",
    tags: ["External sign-in"],
    query: callbackQuery,
    responses: [
      {
        status: 302,
        description:
          "To the provider's authorization page (start); to the `redirect` path with the session cookie set (finish); or, for a user with a second factor, to the dashboard's second-factor page, with no session yet.",
        headers: { ...LOCATION, ...SET_SESSION_COOKIE },
      },
    ],
    errors: errors(
      {
        400: "The provider is not configured, the flow or conversion cookie is missing, invalid or for another provider, the state does not match, the provider returned an error, or the code exchange failed.",
        401: "The account is suspended.",
        403: "The e-mail is not verified or its domain is not allowed, the user has another login type, signups are disabled, or the verified e-mail does not match the converting user's.",
        409: "The external identity already belongs to another account (or was created concurrently).",
        502: "The OpenID Connect provider could not be reached (discovery failed).",
      },
      RATE,
    ),
  });
}

/** External sign-in (docs/api.md): the OpenID Connect and GitHub callbacks, and converting a password login. */
export const externalLoginRoutes = new Hono<AppEnv>()
  // Literal paths (equal to each provider's callbackPath) keep the route types precise for the typed client.
  .get("/users/oidc/callback", describeCallback("oidcCallback", "OpenID Connect"), callback(oidcProvider))
  .get("/users/oauth2/github/callback", describeCallback("githubCallback", "GitHub"), callback(githubProvider))
  .post(
    "/users/:user/convert-login",
    describeRoute({
      operationId: "convertUserLoginType",
      summary: "Start converting the caller's password login to an external login",
      description:
        "Sets a signed cookie binding the state to the user; the browser then opens the provider's callback with `oidc_merge_state=<state_string>`.",
      tags: ["External sign-in"],
      access: "anyone",
      scope: "user:update_personal",
      pathParams: userPath,
      responses: [{ status: 201, description: "The conversion, valid for 5 minutes.", schema: OAuthConversionResponse }],
      errors: errors(
        {
          400: `\`to_type\` is not a configured \`oidc\` / \`github\` (\`${ExternalMessages.cannotConvertTo("<t>")}\` or \`${ExternalMessages.unknownLoginType("<t>")}\`), or the user is not a password user.`,
          401: `The password is wrong: \`${AuthMessages.incorrectLogin}\``,
          403: "`{user}` is not the caller.",
        },
        USER_404,
        RATE,
      ),
    }),
    requireAuth,
    jsonBody(convertLoginBody),
    async (c) => {
      const { password, to_type: toType } = c.req.valid("json");
      const config = c.get("config");
      const user = await resolveUser(c, c.req.param("user"));
      if (user.id !== c.get("auth").user.id) throw forbidden(Messages.forbidden, ExternalMessages.convertSelfOnly);
      // A scoped token needs the personal-update permission, as for a password change (roles ∩ scopes).
      assertCan(c, "update_personal", { type: "user", ownerId: user.id });
      if (toType !== "oidc" && toType !== "github") {
        throw badRequest(
          ["password", "none", "token"].includes(toType) ? ExternalMessages.cannotConvertTo(toType) : ExternalMessages.unknownLoginType(toType),
        );
      }
      if (!PROVIDERS[toType].configured(config)) {
        throw badRequest(ExternalMessages.cannotConvertTo(toType), { detail: ExternalMessages.methodNotConfigured });
      }
      if (user.loginType !== "password") throw badRequest(ExternalMessages.passwordLoginRequired);
      await limitPerIp(c, "convert-login");
      await limitPerAccount(c, "convert-login", user.email);
      if (!(await verifyPassword(user.hashedPassword, password)).valid) throw new ApiError(401, AuthMessages.incorrectLogin);

      const state = `convert-${randomAlphanumeric(32)}`;
      const expiresAt = nowIso(Date.now() + CONVERSION_TTL_MS);
      const db = dbFor(c, "write");
      await db.batch([
        db.insert(loginConversions).values({
          stateHmac: await conversionStateHmac(config.SECRET_KEY, state),
          userId: user.id,
          toType,
          expiresAt,
          usedAt: null,
          createdAt: nowIso(),
        }),
        auditInsert(db, c, { action: "start_convert_login", resourceType: "user", resourceId: user.id, diff: { to_type: toType } }),
      ]);
      const cookie: ConversionCookie = { state, userId: user.id, toType };
      await setSignedCookie(c, config, CONVERSION_COOKIE, cookie, CONVERSION_TTL_MS);
      return c.json({ state_string: state, expires_at: expiresAt, to_type: toType, user_id: user.id }, 201);
    },
  );
