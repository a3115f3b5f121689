// Workerd-side helpers for the protocol peers started by test/peers/global-setup.ts (SMTP server + webhook receiver).
// Everything goes through the peers' HTTP control API at env.PEER_URL with plain fetch: the peers live in the Node
// process that runs vitest, so there is no shared memory with the tests running here.
//
// The peers are shared by every test file of a run (vitest may run files in parallel), so tests should identify
// their own messages (unique recipients, subjects, ids) rather than assume they are the only sender.
import { env } from "cloudflare:workers";
import PostalMime, { type Address } from "postal-mime";
import type { RecordedEmail, RecordedWebhook, ScriptedResponse } from "./peers/global-setup";
import type { ReceivedPush, ScriptedPushAnswer } from "./peers/push-service";
import type { LabEmail, LabProfile } from "./peers/smtp-lab";

/** A message the SMTP peer accepted, with its envelope and the parsed RFC 822 content. */
export interface ReceivedEmail {
  /** Envelope sender (MAIL FROM); "" for the null sender. */
  mailFrom: string;
  /** Envelope recipients (RCPT TO). */
  rcptTo: string[];
  /** Username of the SMTP AUTH the sender performed, null if it did not authenticate. */
  authUser: string | null;
  /** From header address. */
  from: string;
  /** To header addresses (groups flattened). */
  to: string[];
  subject: string;
  text: string;
  html: string;
  /** Header values by lower-cased name (first occurrence), e.g. headers["message-id"]. */
  headers: Record<string, string>;
  /** The message exactly as received after DATA. */
  raw: string;
  receivedAt: string;
}

/** A request the webhook receiver got on /webhook. */
export interface ReceivedWebhook {
  method: string;
  /** Lower-cased header names. */
  headers: Record<string, string>;
  body: string;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  json: unknown;
  receivedAt: string;
}

export type { ScriptedResponse };

async function control(method: "GET" | "POST", path: string, body?: unknown): Promise<Response> {
  const init: RequestInit = body === undefined ? { method } : { method, headers: { "content-type": "application/json" }, body: JSON.stringify(body) };
  const res = await fetch(`${env.PEER_URL}${path}`, init);
  if (!res.ok) throw new Error(`peer control ${method} ${path} failed: ${res.status} ${await res.text()}`);
  return res;
}

/** Every email the SMTP peer accepted since the last reset, oldest first. */
export async function emails(): Promise<ReceivedEmail[]> {
  const recorded = await (await control("GET", "/control/emails")).json<RecordedEmail[]>();
  return Promise.all(recorded.map(parseEmail));
}

/** Every call the webhook receiver got since the last reset, oldest first. */
export async function webhooks(): Promise<ReceivedWebhook[]> {
  const recorded = await (await control("GET", "/control/webhooks")).json<RecordedWebhook[]>();
  return recorded.map(({ method, headers, body, receivedAt }) => ({ method, headers, body, json: parseJson(body), receivedAt }));
}

/** Queues answers for the next webhook calls (one per call, in order); afterwards the receiver answers 200 "ok". */
export async function scriptWebhook(responses: ScriptedResponse[]): Promise<void> {
  await (await control("POST", "/control/webhook-responses", responses)).body?.cancel();
}

/** Closes the SMTP peer: open sessions are cut and new connections are refused. Resolves once the port is closed. */
export async function stopSmtp(): Promise<void> {
  await (await control("POST", "/control/smtp/stop")).body?.cancel();
}

/** Listens again on the same SMTP port. Resolves once it accepts connections. */
export async function startSmtp(): Promise<void> {
  await (await control("POST", "/control/smtp/start")).body?.cancel();
}

/**
 * Polls `probe` every 50 ms until it returns something other than undefined, and returns that. A probe that throws
 * (e.g. a failing `expect`) counts as "not yet"; if time runs out, its last error is rethrown so the failure says what
 * was still wrong. Delivery happens in the queue consumer, asynchronously to the request that caused it, hence polling.
 */
export async function waitFor<T>(probe: () => Promise<T | undefined>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() >= deadline) {
      if (lastError !== undefined) throw lastError;
      throw new Error(`waitFor: nothing after ${timeoutMs} ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function parseEmail(recorded: RecordedEmail): Promise<ReceivedEmail> {
  const parsed = await PostalMime.parse(recorded.raw);
  const headers: Record<string, string> = {};
  for (const { key, value } of parsed.headers) headers[key] ??= value;
  return {
    mailFrom: recorded.mailFrom,
    rcptTo: recorded.rcptTo,
    authUser: recorded.authUser,
    from: parsed.from ? (mailboxes([parsed.from])[0] ?? "") : "",
    to: mailboxes(parsed.to ?? []),
    subject: parsed.subject ?? "",
    text: parsed.text ?? "",
    html: parsed.html ?? "",
    headers,
    raw: recorded.raw,
    receivedAt: recorded.receivedAt,
  };
}

function mailboxes(addresses: Address[]): string[] {
  return addresses.flatMap((a) => (a.group ? a.group.map((m) => m.address) : [a.address]));
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

export type { LabProfile };

/** A message a lab server accepted, as it saw it, plus the parsed content. */
interface LabMessage extends LabEmail {
  parsed: ReceivedEmail;
}

export interface LabHandle {
  id: string;
  port: number;
  /** Everything the server accepted, oldest first, and how many connections it took. */
  state(): Promise<{ connections: number; emails: LabMessage[] }>;
  stop(): Promise<void>;
  start(): Promise<void>;
}

/** Starts a lab SMTP server with the given behaviour on its own port. */
export async function labServer(profile: LabProfile): Promise<LabHandle> {
  const { id, port } = await (await control("POST", "/control/lab/servers", profile)).json<{ id: string; port: number }>();
  const state = async (suffix = "") => {
    const { connections, emails: recorded } = await (await control(suffix ? "POST" : "GET", `/control/lab/servers/${id}${suffix}`)).json<{
      connections: number;
      emails: LabEmail[];
    }>();
    const parsed = await Promise.all(recorded.map(async (e) => ({ ...e, parsed: await parseEmail(e) })));
    return { connections, emails: parsed };
  };
  return {
    id,
    port,
    state: () => state(),
    stop: async () => void (await state("/stop")),
    start: async () => void (await state("/start")),
  };
}

/** Sets the clock the lab servers judge time by (greylisting); null returns them to real time. */
export async function setLabClock(now: number | null): Promise<void> {
  await (await control("POST", "/control/lab/clock", { now })).body?.cancel();
}

/** A browser subscribed at the Web Push service stand-in (test/peers/push-service.ts). */
export interface PushBrowser {
  /** The stand-in's name for it, to read what it received and script its answers. */
  token: string;
  /** The subscription as `PushSubscription.toJSON()` would give it to Herald. */
  subscription: { endpoint: string; keys: { p256dh: string; auth: string } };
}

export type { ReceivedPush, ScriptedPushAnswer };

const base64url = (bytes: ArrayBuffer | Uint8Array) =>
  btoa(String.fromCharCode(...new Uint8Array(bytes)))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");

/**
 * A new browser, as `pushManager.subscribe()` makes one: its own P-256 key pair and auth secret, generated here, and
 * an endpoint at the stand-in, which keeps the private key to decrypt what is pushed to it.
 */
export async function subscribeBrowser(): Promise<PushBrowser> {
  const pair = (await crypto.subtle.generateKey({ name: "ECDH", namedCurve: "P-256" }, true, ["deriveBits"])) as CryptoKeyPair;
  const publicKey = base64url((await crypto.subtle.exportKey("raw", pair.publicKey)) as ArrayBuffer);
  const { d } = (await crypto.subtle.exportKey("jwk", pair.privateKey)) as JsonWebKey;
  const auth = base64url(crypto.getRandomValues(new Uint8Array(16)));
  const res = await fetch(`${env.PUSH_SERVICE_URL}/control/push/browsers`, {
    method: "POST",
    body: JSON.stringify({ publicKey, privateKey: d, auth }),
  });
  if (!res.ok) throw new Error(`push stand-in: ${res.status} ${await res.text()}`);
  const { token, endpoint } = await res.json<{ token: string; endpoint: string }>();
  return { token, subscription: { endpoint, keys: { p256dh: publicKey, auth } } };
}

/** Every push the stand-in received for `browser`, oldest first, decrypted. */
export async function receivedPushes(browser: PushBrowser): Promise<ReceivedPush[]> {
  const res = await fetch(`${env.PUSH_SERVICE_URL}/control/push/browsers/${browser.token}/received`);
  if (!res.ok) throw new Error(`push stand-in: ${res.status} ${await res.text()}`);
  return res.json<ReceivedPush[]>();
}

/** Queues the stand-in's answers to the next pushes to `browser`; afterwards it answers 201. */
export async function scriptPushService(browser: PushBrowser, answers: ScriptedPushAnswer[]): Promise<void> {
  const res = await fetch(`${env.PUSH_SERVICE_URL}/control/push/browsers/${browser.token}/script`, { method: "POST", body: JSON.stringify(answers) });
  if (!res.ok) throw new Error(`push stand-in: ${res.status} ${await res.text()}`);
  await res.body?.cancel();
}
