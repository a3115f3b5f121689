// A Web Push service stand-in (RFC 8030) for the push delivery tests: it plays FCM or Mozilla's autopush for the
// browsers a test registers. Each registered browser gets an endpoint on this server; a push to it is checked as a
// push service checks it (the VAPID token of RFC 8292: an ES256 signature by the `k` key, which must be the key the
// browser subscribed with, `aud` this service's origin, `exp` in the future and at most 24 hours ahead, a `sub`), then
// decrypted as the browser would (RFC 8291) with the browser's private key. Decryption uses http_ece, the
// implementation the web-push library is built on, and the token check jose: neither shares code with Herald.
// It runs in Node (vitest globalSetup for the workerd suite, or an e2e test itself), on a 127.0.0.1 port.
import { createECDH, randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { decrypt } from "http_ece";
import { decodeProtectedHeader, importJWK, jwtVerify } from "jose";

/** One push the service received for a registered browser, as a test reads it back. */
export interface ReceivedPush {
  token: string;
  receivedAt: string;
  /** The request's headers that matter to a push service; names lower-cased. */
  headers: { ttl: string | null; urgency: string | null; contentEncoding: string | null; contentType: string | null; topic: string | null };
  /** The decrypted payload as UTF-8, or null when it could not be decrypted. */
  payload: string | null;
  /** The VAPID token's claims when it verified, else null. */
  vapid: { aud: string; exp: number; sub: string } | null;
  /** Why the push was refused (VAPID, encryption, headers), or null. */
  problem: string | null;
  /** The status the service answered. */
  status: number;
}

/** An answer queued for the next push to one browser. */
export interface ScriptedPushAnswer {
  status: number;
  /** A `Retry-After` header, in seconds. */
  retryAfter?: number;
}

/** What a test gives to register a browser: its key pair (JWK private scalar `d` and public point) and auth secret. */
export interface BrowserKeys {
  /** The uncompressed public point, unpadded base64url (the subscription's `p256dh`). */
  publicKey: string;
  /** The private scalar, unpadded base64url. */
  privateKey: string;
  /** The 16-byte auth secret, unpadded base64url. */
  auth: string;
}

interface Browser extends BrowserKeys {
  received: ReceivedPush[];
  script: ScriptedPushAnswer[];
}

const MAX_VAPID_LIFETIME_S = 24 * 60 * 60;

/** Checks `Authorization: vapid t=…, k=…` as RFC 8292 says a push service does; answers the claims or throws why not. */
async function verifyVapid(header: string | undefined, origin: string, subscribedKey: string): Promise<{ aud: string; exp: number; sub: string }> {
  const match = /^vapid t=([\w-]+\.[\w-]+\.[\w-]+),\s*k=([\w-]+)$/.exec(header ?? "");
  if (!match) throw new Error(`Authorization is not "vapid t=…, k=…": ${header ?? "(none)"}`);
  const [, token = "", key = ""] = match;
  if (key !== subscribedKey) throw new Error("k is not the key the browser subscribed with");
  if (decodeProtectedHeader(token).alg !== "ES256") throw new Error("the token is not ES256");
  const point = Buffer.from(key, "base64url");
  if (point.length !== 65 || point[0] !== 4) throw new Error("k is not an uncompressed P-256 point");
  const jwk = { kty: "EC", crv: "P-256", x: point.subarray(1, 33).toString("base64url"), y: point.subarray(33).toString("base64url") };
  const { payload } = await jwtVerify(token, await importJWK(jwk, "ES256"), { algorithms: ["ES256"], audience: origin });
  const now = Math.floor(Date.now() / 1000);
  if (typeof payload.exp !== "number" || payload.exp <= now) throw new Error("exp is missing or past");
  if (payload.exp > now + MAX_VAPID_LIFETIME_S) throw new Error("exp is more than 24 hours ahead");
  if (typeof payload.sub !== "string" || !/^(mailto:|https:)/.test(payload.sub)) throw new Error("sub is not a mailto: or https: URL");
  return { aud: String(payload.aud), exp: payload.exp, sub: payload.sub };
}

export class PushServiceStandIn {
  private readonly browsers = new Map<string, Browser>();
  private server: Server | undefined;
  private origin = "";

  /** `vapidPublicKey`: the application server key browsers subscribe with (Herald's VAPID_PUBLIC_KEY). */
  constructor(private readonly vapidPublicKey: string) {}

  /** Listens on `host` and answers this service's origin, `http://host:port`. */
  async start(host = "127.0.0.1"): Promise<string> {
    const server = createServer((req, res) => {
      this.handle(req, res).catch((error: unknown) => {
        if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
        res.end(error instanceof Error ? error.message : String(error));
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, host, () => resolve());
    });
    this.server = server;
    this.origin = `http://${host}:${(server.address() as AddressInfo).port}`;
    return this.origin;
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Registers a browser with its keys and answers its endpoint, as a push service assigns one on subscribe. */
  register(keys: BrowserKeys): { token: string; endpoint: string } {
    const token = randomBytes(12).toString("base64url");
    this.browsers.set(token, { ...keys, received: [], script: [] });
    return { token, endpoint: `${this.origin}/push/${token}` };
  }

  received(token: string): ReceivedPush[] {
    return this.browsers.get(token)?.received ?? [];
  }

  script(token: string, answers: ScriptedPushAnswer[]): void {
    this.browsers.get(token)?.script.push(...answers);
  }

  /** The push endpoint, and the control API the workerd tests use (test/peers.ts), under /control/push. */
  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? "/", this.origin).pathname;
    const body = await readBody(req);
    const push = /^\/push\/([\w-]+)$/.exec(path);
    if (req.method === "POST" && push) return this.receive(push[1] ?? "", req, body, res);

    const control = /^\/control\/push\/browsers(?:\/([\w-]+)\/(received|script))?$/.exec(path);
    if (!control) return sendJson(res, 404, { error: `no route ${req.method} ${path}` });
    const [, token, what] = control;
    if (!token && req.method === "POST") return sendJson(res, 200, this.register(parseKeys(body)));
    if (token && !this.browsers.has(token)) return sendJson(res, 404, { error: "no such browser" });
    if (token && what === "received" && req.method === "GET") return sendJson(res, 200, this.received(token));
    if (token && what === "script" && req.method === "POST") {
      this.script(token, parseScript(body));
      return sendJson(res, 200, { ok: true });
    }
    return sendJson(res, 404, { error: `no route ${req.method} ${path}` });
  }

  private async receive(token: string, req: IncomingMessage, body: Buffer, res: ServerResponse): Promise<void> {
    const browser = this.browsers.get(token);
    // A push service answers 404 (or 410) for a subscription it does not know.
    if (!browser) return sendJson(res, 404, { error: "no such subscription" });
    const header = (name: string) => (typeof req.headers[name] === "string" ? (req.headers[name] as string) : null);
    const record: ReceivedPush = {
      token,
      receivedAt: new Date().toISOString(),
      headers: {
        ttl: header("ttl"),
        urgency: header("urgency"),
        contentEncoding: header("content-encoding"),
        contentType: header("content-type"),
        topic: header("topic"),
      },
      payload: null,
      vapid: null,
      problem: null,
      status: 201,
    };
    const answer = await this.check(browser, record, header("authorization") ?? undefined, body);
    // Recorded once decided, so a test that sees the push also sees what was made of it.
    record.status = answer.status;
    browser.received.push(record);
    const headers: Record<string, string> = { "content-type": "text/plain" };
    if (answer.status === 201) headers.location = `${this.origin}/message/${randomBytes(8).toString("base64url")}`;
    if (answer.retryAfter !== undefined) headers["retry-after"] = String(answer.retryAfter);
    res.writeHead(answer.status, headers);
    res.end(record.problem ?? (answer.status === 201 ? "" : `scripted ${answer.status}`));
  }

  /**
   * What a push service makes of a push: the VAPID token (403 when it does not verify), a TTL (400 without), the body
   * decrypted (400 when it cannot be); then the scripted answer, else 201. Fills in `record` as it goes.
   */
  private async check(browser: Browser, record: ReceivedPush, authorization: string | undefined, body: Buffer): Promise<ScriptedPushAnswer> {
    try {
      record.vapid = await verifyVapid(authorization, this.origin, this.vapidPublicKey);
    } catch (error) {
      record.problem = `VAPID: ${error instanceof Error ? error.message : String(error)}`;
      return { status: 403 };
    }
    // RFC 8030: a push without a TTL header is refused.
    if (record.headers.ttl === null || !/^\d+$/.test(record.headers.ttl)) {
      record.problem = "TTL header missing or not a number";
      return { status: 400 };
    }
    try {
      if (record.headers.contentEncoding !== "aes128gcm") throw new Error(`Content-Encoding is ${record.headers.contentEncoding}`);
      const ecdh = createECDH("prime256v1");
      ecdh.setPrivateKey(Buffer.from(browser.privateKey, "base64url"));
      record.payload = decrypt(body, { version: "aes128gcm", privateKey: ecdh, authSecret: browser.auth }).toString("utf8");
    } catch (error) {
      record.problem = `encryption: ${error instanceof Error ? error.message : String(error)}`;
      return { status: 400 };
    }
    return browser.script.shift() ?? { status: 201 };
  }
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(value));
}

function parseKeys(body: Buffer): BrowserKeys {
  const value: unknown = JSON.parse(body.toString("utf8"));
  const { publicKey, privateKey, auth } = (value ?? {}) as Record<string, unknown>;
  if (typeof publicKey !== "string" || typeof privateKey !== "string" || typeof auth !== "string") {
    throw new Error("push browsers: expected {publicKey, privateKey, auth}, each base64url");
  }
  return { publicKey, privateKey, auth };
}

function parseScript(body: Buffer): ScriptedPushAnswer[] {
  const value: unknown = JSON.parse(body.toString("utf8"));
  if (!Array.isArray(value)) throw new Error("push script: expected an array of {status, retryAfter?}");
  return value.map((entry: unknown) => {
    const { status, retryAfter } = (entry ?? {}) as Record<string, unknown>;
    if (typeof status !== "number" || status < 200 || status > 599) throw new Error("push script: status must be an HTTP status");
    if (retryAfter !== undefined && typeof retryAfter !== "number") throw new Error("push script: retryAfter must be seconds");
    return retryAfter === undefined ? { status } : { status, retryAfter };
  });
}
