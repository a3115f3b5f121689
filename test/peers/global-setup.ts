// Real protocol peers for the notification-delivery tests: an SMTP server and a webhook receiver, both on 127.0.0.1;
// for external sign-in, a real OpenID Provider (oidc.ts) and a GitHub OAuth stand-in (github.ts); a Web Push service
// stand-in (push-service.ts) for push deliveries; and the Slack, Teams, Discord and webhook stand-ins of users' own
// targets (targets.ts), each on its own 127.0.0.1 port.
// This module runs in Node (vitest globalSetup), not in workerd: the Worker under test reaches the peers over real
// TCP, exactly as it would reach a smarthost or a webhook endpoint in production. Tests read what the peers received,
// script their answers and take the SMTP server down through a small JSON control API on the webhook port
// (see test/peers.ts and test/external/oauth-peers.ts for the workerd-side helpers).
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Server as NetServer } from "node:net";
import type { TestProject } from "vitest/node";
import { TEST_VAPID_KEYS } from "../fixtures/vars";
import { type GithubAccount, type GithubEmail, GithubPeer, type GithubScriptedError } from "./github";
import { type OidcAccount, OidcPeer, type OidcScriptedError } from "./oidc";
import { PushServiceStandIn } from "./push-service";
import { type LabEmail, type LabProfile, LabServer, SmtpLab } from "./smtp-lab";
import { TargetStandIns } from "./targets";

declare module "vitest" {
  export interface ProvidedContext {
    /** Port of the SMTP peer on 127.0.0.1. */
    smtpPort: number;
    /** Port of the webhook receiver and control API on 127.0.0.1. */
    peerPort: number;
    /** Issuer of the OpenID Provider peer: http://127.0.0.1:<port>. */
    oidcIssuer: string;
    /** "github.com" of the GitHub stand-in (authorize, access_token): http://127.0.0.1:<port>. */
    githubWebUrl: string;
    /** "api.github.com" of the GitHub stand-in (/user, /user/emails): http://127.0.0.1:<port>/api. */
    githubApiUrl: string;
    /** Origin of the Slack, Teams, Discord and webhook stand-ins of users' own targets (test/peers/targets.ts). */
    targetsOrigin: string;
    /** Origin of the Web Push service stand-in: its push endpoints and control API (test/peers/push-service.ts). */
    pushServiceUrl: string;
  }
}

/** One message accepted by the shared SMTP peer. Shared with test/peers.ts through JSON. */
export type RecordedEmail = LabEmail;

/** One request received on /webhook (a POST, or a GET from a client that followed a redirect). */
export interface RecordedWebhook {
  method: string;
  /** Request headers; names are lower-cased, repeated headers joined with ", ". */
  headers: Record<string, string>;
  body: string;
  receivedAt: string;
}

export interface ScriptedResponse {
  status: number;
  body?: string;
  /** A Location header (for 3xx answers). */
  location?: string;
  /** Hold the answer this long (a receiver that hangs). */
  delayMs?: number;
}

const HOST = "127.0.0.1";

export default async function setup({ provide }: TestProject): Promise<() => Promise<void>> {
  const webhooks: RecordedWebhook[] = [];
  const script: ScriptedResponse[] = [];

  // The SMTP server the whole suite shares: plain text (the Worker uses EMAIL_TLS=none), AUTH PLAIN/LOGIN offered and
  // optional, any credentials accepted (tests assert on the recorded username). A restart keeps its port, so the
  // Worker's EMAIL_SMARTHOST stays valid.
  const lab = new SmtpLab();
  const smtp = new LabServer({ auth: "optional", acceptAnyCredentials: true }, lab.clock);
  const smtpPort = await smtp.start();
  const oidc = await OidcPeer.start(HOST);
  const github = await GithubPeer.start(HOST);
  const pushService = new PushServiceStandIn(TEST_VAPID_KEYS.VAPID_PUBLIC_KEY);
  const pushServiceUrl = await pushService.start(HOST);
  const targets = await TargetStandIns.start(HOST);

  const http = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      // A broken control request must show up in the failing test, not kill the peer for every other test file.
      const status = error instanceof BadRequest || error instanceof SyntaxError ? 400 : 500;
      if (!res.headersSent) res.writeHead(status, { "content-type": "text/plain" });
      res.end(error instanceof Error ? error.message : String(error));
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? "/", "http://peer").pathname;
    const route = `${req.method ?? "GET"} ${path}`;
    const body = await readBody(req);

    const labRoute = /^(GET|POST) \/control\/lab\/servers\/(\d+)(\/stop|\/start)?$/.exec(route);
    if (labRoute) {
      const server = lab.get(labRoute[2] ?? "");
      if (!server) return sendJson(res, 404, { error: "no such lab server" });
      if (labRoute[3] === "/stop") await server.stop();
      if (labRoute[3] === "/start") await server.start();
      return sendJson(res, 200, { port: server.port, connections: server.connections, emails: server.emails });
    }

    switch (route) {
      case "POST /control/lab/servers":
        return sendJson(res, 200, await lab.create(jsonObject(body, "lab/servers") as LabProfile));
      case "POST /control/lab/clock": {
        const { now } = jsonObject(body, "lab/clock");
        if (now !== null && typeof now !== "number") throw new BadRequest("lab/clock: now must be epoch ms or null");
        lab.setClock(now);
        return sendJson(res, 200, { now: lab.clock() });
      }
      case "GET /webhook":
      case "POST /webhook": {
        webhooks.push({ method: req.method ?? "", headers: flattenHeaders(req), body, receivedAt: new Date().toISOString() });
        const next = script.shift() ?? { status: 200, body: "ok" };
        if (next.delayMs) await new Promise((resolve) => setTimeout(resolve, next.delayMs));
        res.writeHead(next.status, { "content-type": "text/plain", ...(next.location ? { location: next.location } : {}) });
        res.end(next.body ?? "");
        return;
      }
      case "GET /control/emails":
        return sendJson(res, 200, smtp.emails);
      case "GET /control/webhooks":
        return sendJson(res, 200, webhooks);
      case "POST /control/reset":
        smtp.emails.length = 0;
        webhooks.length = 0;
        script.length = 0;
        oidc.reset();
        github.reset();
        return sendJson(res, 200, { ok: true });
      case "POST /control/webhook-responses": {
        const responses = parseScript(body);
        script.push(...responses);
        return sendJson(res, 200, { queued: script.length });
      }
      case "POST /control/smtp/stop":
        await smtp.stop();
        return sendJson(res, 200, { listening: false });
      case "POST /control/smtp/start":
        await smtp.start();
        return sendJson(res, 200, { listening: true, port: smtpPort });
      case "POST /control/oidc/next-login":
        oidc.setNextLogin(parseOidcAccount(body));
        return sendJson(res, 200, { ok: true });
      case "POST /control/oidc/error":
        oidc.setNextError(parseScriptedError(body, "oidc/error"));
        return sendJson(res, 200, { ok: true });
      case "POST /control/github/next-login":
        github.setNextLogin(parseGithubAccount(body));
        return sendJson(res, 200, { ok: true });
      case "POST /control/github/error":
        github.setNextError(parseScriptedError(body, "github/error"));
        return sendJson(res, 200, { ok: true });
      default:
        return sendJson(res, 404, { error: `no route ${route}` });
    }
  }

  const peerPort = await listen(http, 0);

  provide("smtpPort", smtpPort);
  provide("peerPort", peerPort);
  provide("oidcIssuer", oidc.issuer);
  provide("githubWebUrl", github.webUrl);
  provide("githubApiUrl", github.apiUrl);
  provide("pushServiceUrl", pushServiceUrl);
  provide("targetsOrigin", targets.origin);

  return async () => {
    await Promise.all([smtp.stop(), oidc.stop(), github.stop(), lab.stopAll(), pushService.stop(), targets.stop()]);
    // workerd keeps HTTP connections alive; drop them so close() does not wait for their idle timeout.
    http.closeAllConnections();
    await new Promise<void>((resolve) => http.close(() => resolve()));
  };
}

/** Listens on 127.0.0.1 and resolves with the bound port, or rejects if the port cannot be bound. */
function listen(server: NetServer, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (error: Error) => reject(error);
    server.once("error", onError);
    server.listen(port, HOST, () => {
      server.off("error", onError);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

function flattenHeaders(req: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  // Node already lower-cases incoming header names.
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers[name.toLowerCase()] = Array.isArray(value) ? value.join(", ") : value;
  }
  return headers;
}

/** A malformed control request (answered 400, unlike a failure of the peer itself). */
class BadRequest extends Error {}

function parseScript(body: string): ScriptedResponse[] {
  const parsed: unknown = JSON.parse(body);
  if (!Array.isArray(parsed)) throw new BadRequest("webhook-responses: expected a JSON array of {status, body?}");
  return parsed.map((entry: unknown, i): ScriptedResponse => {
    if (typeof entry !== "object" || entry === null) throw new BadRequest(`webhook-responses[${i}]: not an object`);
    const { status, body: text, location, delayMs } = entry as { status?: unknown; body?: unknown; location?: unknown; delayMs?: unknown };
    if (typeof status !== "number" || !Number.isInteger(status) || status < 200 || status > 599) {
      throw new BadRequest(`webhook-responses[${i}]: status must be an integer HTTP status (200-599)`);
    }
    if (text !== undefined && typeof text !== "string") throw new BadRequest(`webhook-responses[${i}]: body must be a string`);
    if (location !== undefined && typeof location !== "string") throw new BadRequest(`webhook-responses[${i}]: location must be a string`);
    if (delayMs !== undefined && (typeof delayMs !== "number" || delayMs < 0 || delayMs > 60_000)) {
      throw new BadRequest(`webhook-responses[${i}]: delayMs must be 0-60000`);
    }
    return {
      status,
      ...(text === undefined ? {} : { body: text }),
      ...(location === undefined ? {} : { location }),
      ...(delayMs === undefined ? {} : { delayMs }),
    };
  });
}

/** Body of POST /control/oidc/next-login: {sub, email, email_verified, name?, preferred_username?}. */
function parseOidcAccount(body: string): OidcAccount {
  const value = jsonObject(body, "oidc/next-login");
  const { sub, email, email_verified, name, preferred_username } = value;
  if (typeof sub !== "string" || sub === "") throw new BadRequest("oidc/next-login: sub must be a non-empty string");
  if (typeof email !== "string") throw new BadRequest("oidc/next-login: email must be a string");
  if (typeof email_verified !== "boolean") throw new BadRequest("oidc/next-login: email_verified must be a boolean");
  const account: OidcAccount = { sub, email, email_verified };
  if (name !== undefined) account.name = requireString(name, "oidc/next-login: name");
  if (preferred_username !== undefined) {
    account.preferred_username = requireString(preferred_username, "oidc/next-login: preferred_username");
  }
  return account;
}

/** Body of POST /control/github/next-login: {id, login, name?, emails: [{email, primary, verified, visibility?}]}. */
function parseGithubAccount(body: string): GithubAccount {
  const value = jsonObject(body, "github/next-login");
  const { id, login, name, emails } = value;
  if (typeof id !== "number" || !Number.isSafeInteger(id)) throw new BadRequest("github/next-login: id must be an integer");
  if (typeof login !== "string" || login === "") throw new BadRequest("github/next-login: login must be a non-empty string");
  if (name !== undefined && name !== null && typeof name !== "string") {
    throw new BadRequest("github/next-login: name must be a string or null");
  }
  if (!Array.isArray(emails)) throw new BadRequest("github/next-login: emails must be an array");
  const parsed = emails.map((entry: unknown, i): GithubEmail => {
    if (typeof entry !== "object" || entry === null) throw new BadRequest(`github/next-login: emails[${i}] is not an object`);
    const { email, primary, verified, visibility } = entry as Record<string, unknown>;
    if (typeof email !== "string" || typeof primary !== "boolean" || typeof verified !== "boolean") {
      throw new BadRequest(`github/next-login: emails[${i}] needs email (string), primary and verified (booleans)`);
    }
    if (visibility !== undefined && visibility !== null && visibility !== "public" && visibility !== "private") {
      throw new BadRequest(`github/next-login: emails[${i}].visibility must be "public", "private" or null`);
    }
    return visibility === undefined ? { email, primary, verified } : { email, primary, verified, visibility };
  });
  return name === undefined ? { id, login, emails: parsed } : { id, login, name, emails: parsed };
}

/** Body of POST /control/{oidc,github}/error: {error, error_description?}. */
function parseScriptedError(body: string, what: string): OidcScriptedError & GithubScriptedError {
  const { error, error_description } = jsonObject(body, what);
  if (typeof error !== "string" || !/^[\x20-\x7e]+$/.test(error)) {
    throw new BadRequest(`${what}: error must be a non-empty ASCII string, e.g. "access_denied"`);
  }
  if (error_description === undefined) return { error };
  return { error, error_description: requireString(error_description, `${what}: error_description`) };
}

function jsonObject(body: string, what: string): Record<string, unknown> {
  const parsed: unknown = JSON.parse(body);
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new BadRequest(`${what}: expected a JSON object`);
  }
  return parsed as Record<string, unknown>;
}

function requireString(value: unknown, what: string): string {
  if (typeof value !== "string") throw new BadRequest(`${what} must be a string`);
  return value;
}

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(value));
}
