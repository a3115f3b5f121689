import { connect } from "cloudflare:sockets";
import { base64Text, chooseMechanism, cramMd5Response } from "./sasl";
import { CertificateCollector, clientHello, describeCertificate } from "./tls-diagnosis";

/**
 * A small SMTP submission client over `cloudflare:sockets` (RFC 5321, 3207, 4954), written for how relays really
 * behave: AUTH only when credentials are configured, STARTTLS required when asked for, DSN left to the server, and
 * every failure carrying the reply code of the command that failed. docs/email.md has the choices and their reasons.
 */

type TlsMode = "starttls" | "tls" | "none";

export interface SmtpOptions {
  host: string;
  port: number;
  tls: TlsMode;
  /** The EHLO name: a domain, or an address literal such as `[192.0.2.1]`. */
  hello: string;
  credentials?: { username: string; password: string };
  /** Epoch ms by which the whole transaction must be over, whatever the per-command timeouts allow. */
  deadline: number;
  /**
   * Called as each stage of the transaction is reached (connected, greeted, TLS up, each command answered). It may
   * throw to abandon the transaction before the next command: the dispatcher renews the message's lease here and
   * stops a send whose lease was lost (docs/email.md, "Never lose, never duplicate").
   */
  onProgress?: (stage: string) => Promise<void>;
}

export interface Envelope {
  /** Bare address for MAIL FROM. */
  from: string;
  /** Bare address for RCPT TO. */
  to: string;
}

/**
 * RFC 5321 §4.5.3.2 timeouts. Commands it does not name (EHLO, STARTTLS, AUTH, QUIT) get the command default of
 * five minutes.
 */
const SMTP_TIMEOUTS = {
  greeting: 5 * 60_000,
  command: 5 * 60_000,
  mail: 5 * 60_000,
  rcpt: 5 * 60_000,
  dataInit: 2 * 60_000,
  dataBlock: 3 * 60_000,
  dataEnd: 10 * 60_000,
} as const;

export type SmtpFailureKind = "reply" | "network" | "timeout" | "tls" | "policy";

/**
 * Why a transaction failed. `reply` failures carry the server's code for the command that failed; the channel
 * classifies by that code alone (4xx temporary, 5xx permanent), never by digits found elsewhere in the text.
 */
export class SmtpFailure extends Error {
  override name = "SmtpFailure";
  constructor(
    readonly kind: SmtpFailureKind,
    message: string,
    readonly command?: string,
    readonly code?: number,
  ) {
    super(message);
  }
}

interface Reply {
  code: number;
  lines: string[];
}

const CRLF = "\r\n";
const encoder = new TextEncoder();
/**
 * A socket whose `closed` promise is observed. A refused or dropped connection rejects `closed` as well as the read
 * or `opened` that reports it; nothing else awaits `closed`, and an unobserved rejection would surface as an
 * uncaught "Network connection lost" in the runtime's log.
 */
function observed(socket: Socket): Socket {
  socket.closed.catch(() => undefined);
  return socket;
}

function dial(address: { hostname: string; port: number }, options: Parameters<typeof connect>[1]): Socket {
  return observed(connect(address, options));
}

/** A reply line longer than this is not SMTP (RFC 5321 §4.5.3.1.5 allows 512); stop reading rather than buffer it. */
const MAX_REPLY_LINE = 4096;

/** One line-oriented connection: replies read with a timeout, commands written as CRLF-terminated lines. */
class Connection {
  private reader: ReadableStreamDefaultReader<Uint8Array>;
  private writer: WritableStreamDefaultWriter<Uint8Array>;
  private decoder = new TextDecoder();
  private buffer = "";

  constructor(
    private socket: Socket,
    private readonly deadline: number,
  ) {
    this.reader = socket.readable.getReader();
    this.writer = socket.writable.getWriter();
  }

  /** Settles when the socket is connected; for an upgraded socket, when the TLS handshake has completed. */
  get opened(): Promise<unknown> {
    return this.socket.opened;
  }

  get secure(): boolean {
    return this.socket.secureTransport === "on" || this.socket.upgraded;
  }

  /**
   * RFC 3207: after the server's 220 to STARTTLS, the same connection continues under TLS. The certificate is checked
   * against the host name given to connect() (workerd ignores `expectedServerHostname`).
   */
  upgrade(): void {
    this.reader.releaseLock();
    this.writer.releaseLock();
    this.socket = observed(this.socket.startTls());
    this.reader = this.socket.readable.getReader();
    this.writer = this.socket.writable.getWriter();
    this.decoder = new TextDecoder();
    this.buffer = "";
  }

  async write(text: string): Promise<void> {
    await this.writer.write(encoder.encode(text));
  }

  /** Raw bytes, for the TLS diagnosis's own handshake after STARTTLS. */
  async writeBytes(bytes: Uint8Array): Promise<void> {
    await this.writer.write(bytes);
  }

  async readBytes(): Promise<Uint8Array | undefined> {
    const { value, done } = await this.reader.read();
    return done ? undefined : value;
  }

  /** Reads one complete reply (all its continuation lines) or fails with a timeout. */
  async reply(command: string, timeoutMs: number): Promise<Reply> {
    return withTimeout(this.readReply(command), Math.min(timeoutMs, this.deadline - Date.now()), command);
  }

  private async readReply(command: string): Promise<Reply> {
    const lines: string[] = [];
    for (;;) {
      const line = await this.line(command);
      const match = /^(\d{3})([ -]?)(.*)$/.exec(line);
      if (!match) throw new SmtpFailure("network", `the server answered ${command} with something that is not SMTP`, command);
      lines.push(match[3] ?? "");
      if (match[2] !== "-") return { code: Number(match[1]), lines };
    }
  }

  private async line(command: string): Promise<string> {
    for (;;) {
      const end = this.buffer.indexOf("\n");
      if (end >= 0) {
        const line = this.buffer.slice(0, end).replace(/\r$/, "");
        this.buffer = this.buffer.slice(end + 1);
        return line;
      }
      if (this.buffer.length > MAX_REPLY_LINE) throw new SmtpFailure("network", `the reply to ${command} is too long`, command);
      const { value, done } = await this.reader.read();
      if (done) throw new SmtpFailure("network", `the server closed the connection during ${command}`, command);
      this.buffer += this.decoder.decode(value, { stream: true });
    }
  }

  async close(): Promise<void> {
    await this.socket.close().catch(() => undefined);
  }
}

/** Sends a command and returns the reply, which must have one of the expected codes. */
async function command(conn: Connection, line: string, expect: number[], timeoutMs: number, label = line.split(" ")[0] ?? line): Promise<Reply> {
  await conn.write(`${line}${CRLF}`);
  const reply = await conn.reply(label, timeoutMs);
  if (!expect.includes(reply.code)) throw replyFailure(label, reply);
  return reply;
}

function replyFailure(label: string, reply: Reply): SmtpFailure {
  const text = reply.lines.join(" ").trim();
  return new SmtpFailure("reply", `${label} answered ${reply.code}${text ? ` ${text}` : ""}`, label, reply.code);
}

/** EHLO, falling back to HELO for servers that predate it (RFC 5321 §3.2); returns the extension keywords. */
async function hello(conn: Connection, name: string): Promise<Map<string, string>> {
  await conn.write(`EHLO ${name}${CRLF}`);
  const reply = await conn.reply("EHLO", SMTP_TIMEOUTS.command);
  if (reply.code === 250) {
    const extensions = new Map<string, string>();
    for (const line of reply.lines.slice(1)) {
      const [keyword = "", ...rest] = line.trim().split(/[\s=]+/);
      extensions.set(keyword.toUpperCase(), rest.join(" "));
    }
    return extensions;
  }
  if (reply.code >= 500) {
    await command(conn, `HELO ${name}`, [250], SMTP_TIMEOUTS.command);
    return new Map();
  }
  throw replyFailure("EHLO", reply);
}

async function authenticate(conn: Connection, extensions: Map<string, string>, credentials: { username: string; password: string }): Promise<void> {
  const offered =
    extensions
      .get("AUTH")
      ?.split(/\s+/)
      .filter((m) => m !== "") ?? [];
  if (offered.length === 0) {
    throw new SmtpFailure("policy", "credentials are configured (EMAIL_USERNAME) but the server does not offer AUTH");
  }
  const mechanism = chooseMechanism(offered, conn.secure);
  if (!mechanism) throw new SmtpFailure("policy", `the server offers AUTH ${offered.join(" ")}; Herald speaks PLAIN, LOGIN and CRAM-MD5`);
  const { username, password } = credentials;
  const timeout = SMTP_TIMEOUTS.command;
  if (mechanism === "PLAIN") {
    await command(conn, `AUTH PLAIN ${base64Text(`\u0000${username}\u0000${password}`)}`, [235], timeout, "AUTH PLAIN");
  } else if (mechanism === "LOGIN") {
    await command(conn, "AUTH LOGIN", [334], timeout, "AUTH LOGIN");
    await command(conn, base64Text(username), [334], timeout, "AUTH LOGIN");
    await command(conn, base64Text(password), [235], timeout, "AUTH LOGIN");
  } else {
    const challenge = await command(conn, "AUTH CRAM-MD5", [334], timeout, "AUTH CRAM-MD5");
    await command(conn, await cramMd5Response(username, password, challenge.lines[0] ?? ""), [235], timeout, "AUTH CRAM-MD5");
  }
}

/** RFC 5321 §4.5.2: a line that starts with a dot gets one more, so no line of the message can end DATA early. */
export function dotStuff(data: string): string {
  const normalised = data.replace(/\r?\n/g, CRLF);
  const stuffed = normalised.replace(/(^|\r\n)\./g, "$1..");
  return stuffed.endsWith(CRLF) ? stuffed : `${stuffed}${CRLF}`;
}

/** How long the certificate diagnosis may take, on top of the failed send. */
const DIAGNOSIS_MS = 30_000;

/**
 * A TLS handshake that did not complete. workerd reports a refused certificate and a connection cut during the
 * handshake as the same opaque error (`internal error; reference = …` after STARTTLS, `proxy request failed, cannot
 * connect to the specified address` with implicit TLS), so this alone says nothing about the certificate.
 */
class HandshakeFailed extends Error {
  override name = "HandshakeFailed";
}

/**
 * After two handshakes failed on two connections: a refused certificate is refused every time, a cut connection
 * rarely twice. A TLS 1.2 handshake of our own fetches the certificate (tls-diagnosis.ts): if one arrives, the
 * runtime refused it, and the reason names the check it fails (permanent). If none arrives, the server cut the
 * handshake itself and nothing shows that the certificate was at fault: temporary.
 */
async function handshakeFailure(options: SmtpOptions): Promise<SmtpFailure> {
  const reason = await diagnoseCertificate(options);
  if (reason) return new SmtpFailure("tls", `the TLS handshake with ${options.host}:${options.port} failed: ${reason}`);
  return new SmtpFailure(
    "network",
    `the TLS handshake with ${options.host}:${options.port} failed twice and the server sent no certificate to examine (the connection was cut)`,
  );
}

async function diagnoseCertificate(options: SmtpOptions): Promise<string | undefined> {
  const socket = dial({ hostname: options.host, port: options.port }, { secureTransport: "off", allowHalfOpen: false });
  const conn = new Connection(socket, Date.now() + DIAGNOSIS_MS);
  const diagnose = async (): Promise<string | undefined> => {
    await socket.opened;
    if (options.tls === "starttls") {
      const greeting = await conn.reply("the greeting", DIAGNOSIS_MS);
      if (greeting.code !== 220) return undefined;
      await hello(conn, options.hello);
      await command(conn, "STARTTLS", [220], DIAGNOSIS_MS);
    }
    await conn.writeBytes(clientHello(options.host));
    const collector = new CertificateCollector();
    for (;;) {
      const chunk = await conn.readBytes();
      if (!chunk) return undefined;
      const der = collector.push(chunk);
      if (der === null) return undefined;
      if (der) return describeCertificate(der, options.host, Date.now());
    }
  };
  try {
    return await withTimeout(diagnose(), DIAGNOSIS_MS, "the certificate diagnosis");
  } catch {
    return undefined;
  } finally {
    await conn.close();
  }
}

/** Whether a plain TCP connection to the server opens, to tell a refused certificate from a server that is down. */
async function reachable(options: SmtpOptions): Promise<boolean> {
  const socket = dial({ hostname: options.host, port: options.port }, { secureTransport: "off", allowHalfOpen: false });
  try {
    await withTimeout(socket.opened, Math.min(30_000, options.deadline - Date.now()), "connect");
    return true;
  } catch {
    return false;
  } finally {
    await socket.close().catch(() => undefined);
  }
}

async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new SmtpFailure("timeout", `no answer to ${what} within ${Math.round(ms / 1000)} s`, what)), Math.max(0, ms));
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * One complete transaction: connect, greet, (STARTTLS), (AUTH), MAIL, RCPT, DATA, QUIT. Throws SmtpFailure; the
 * connection is always closed. A failed TLS handshake is tried once more at once on a new connection (nothing has
 * been sent yet): a connection cut during the handshake then goes through, and a certificate the runtime refuses is
 * refused again and diagnosed (docs/email.md, "What it does").
 */
export async function sendMail(options: SmtpOptions, envelope: Envelope, data: string): Promise<void> {
  try {
    await transaction(options, envelope, data);
  } catch (error) {
    if (!(error instanceof HandshakeFailed)) throw error;
    try {
      await transaction(options, envelope, data);
    } catch (second) {
      if (!(second instanceof HandshakeFailed)) throw second;
      throw await handshakeFailure(options);
    }
  }
}

async function transaction(options: SmtpOptions, envelope: Envelope, data: string): Promise<void> {
  // What onProgress throws is the caller's own decision and reaches it unchanged.
  let stopped: { error: unknown } | undefined;
  const progress = async (stage: string): Promise<void> => {
    try {
      await options.onProgress?.(stage);
    } catch (error) {
      stopped = { error };
      throw error;
    }
  };
  let conn: Connection | undefined;
  try {
    const socket = dial(
      { hostname: options.host, port: options.port },
      { secureTransport: options.tls === "tls" ? "on" : options.tls === "starttls" ? "starttls" : "off", allowHalfOpen: false },
    );
    try {
      // With implicit TLS, `opened` settles after the handshake, so a refusal here is a dead server, a cut handshake
      // or a refused certificate; a plain TCP connection tells the first apart.
      await withTimeout(socket.opened, Math.min(SMTP_TIMEOUTS.greeting, options.deadline - Date.now()), "connect");
    } catch (error) {
      await socket.close().catch(() => undefined);
      if (options.tls === "tls" && !(error instanceof SmtpFailure) && (await reachable(options))) throw new HandshakeFailed();
      const reason = error instanceof SmtpFailure ? error.message : "the connection was refused or the host is unreachable";
      throw new SmtpFailure("network", `connection to ${options.host}:${options.port} failed (${reason})`);
    }
    conn = new Connection(socket, options.deadline);
    await progress("connected");
    const greeting = await conn.reply("the greeting", SMTP_TIMEOUTS.greeting);
    if (greeting.code !== 220) throw replyFailure("the greeting", greeting);
    await progress("greeted");
    let extensions = await hello(conn, options.hello);

    if (options.tls === "starttls") {
      if (!extensions.has("STARTTLS")) {
        throw new SmtpFailure("policy", "the server does not offer STARTTLS, and EMAIL_TLS=starttls refuses to authenticate or send in clear");
      }
      await command(conn, "STARTTLS", [220], SMTP_TIMEOUTS.command);
      conn.upgrade();
      // Only the handshake itself can be a certificate's fault: once it has completed, a close, a reset or a 421 is
      // the connection's trouble like anywhere else.
      await withTimeout(conn.opened, Math.min(SMTP_TIMEOUTS.command, options.deadline - Date.now()), "the TLS handshake").catch((error: unknown) => {
        throw error instanceof SmtpFailure ? error : new HandshakeFailed();
      });
      await progress("TLS");
      extensions = await hello(conn, options.hello);
    }
    await progress("EHLO");

    if (options.credentials) await authenticate(conn, extensions, options.credentials);

    // No SIZE, BODY or NOTIFY parameters: the message is 7-bit, and DSN stays at the server's default so bounces
    // reach the envelope sender.
    await command(conn, `MAIL FROM:<${envelope.from}>`, [250], SMTP_TIMEOUTS.mail, "MAIL FROM");
    await progress("MAIL FROM");
    await command(conn, `RCPT TO:<${envelope.to}>`, [250, 251], SMTP_TIMEOUTS.rcpt, "RCPT TO");
    await progress("RCPT TO");
    await command(conn, "DATA", [354], SMTP_TIMEOUTS.dataInit);
    await progress("DATA");
    await conn.write(dotStuff(data));
    await command(conn, ".", [250], SMTP_TIMEOUTS.dataEnd, "the end of DATA");
    // The message is accepted; a failed QUIT changes nothing.
    await command(conn, "QUIT", [221], SMTP_TIMEOUTS.command).catch(() => undefined);
  } catch (error) {
    if (error instanceof SmtpFailure || error instanceof HandshakeFailed || (stopped && stopped.error === error)) throw error;
    const text = error instanceof Error ? error.message : String(error);
    throw new SmtpFailure("network", `the connection to ${options.host}:${options.port} failed (${text.slice(0, 120)})`);
  } finally {
    await conn?.close();
  }
}
