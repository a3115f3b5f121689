// SMTP servers that behave like the ones Herald meets in the field, started on demand by the workerd tests through
// the control API (test/peers.ts: `labServer()`). Each is a real smtp-server on its own 127.0.0.1 port, configured the
// way Postfix and friends are: AUTH PLAIN LOGIN advertised but optional, STARTTLS offered with a certificate from a
// private test CA (test/peers/tls, trusted by workerd through NODE_EXTRA_CA_CERTS), CRAM-MD5 only, greylisting,
// slow final replies, scripted per-recipient replies. Time-based behaviour (greylisting) follows a clock the tests
// set, so "two minutes later" costs no real minutes.
import { readFileSync } from "node:fs";
import { type AddressInfo, createServer, type Server, Socket } from "node:net";
import path from "node:path";
import { TLSSocket } from "node:tls";
import { SMTPServer, type SMTPServerAddress, type SMTPServerDataStream, type SMTPServerSession } from "smtp-server";

const TLS_DIR = path.join(import.meta.dirname, "tls");
const read = (name: string) => readFileSync(path.join(TLS_DIR, name));
const CERTS = {
  good: "server.pem",
  expired: "expired.pem",
  "wrong-name": "wrong-name.pem",
  "unknown-issuer": "unknown-issuer.pem",
} as const;

type CertName = keyof typeof CERTS;

/** How one lab server behaves; every field is optional and defaults to a plain, permissive relay. */
export interface LabProfile {
  /** `none`: no AUTH advertised; `optional`: advertised, not required (Postfix with SASL on a combined relay); `required`. */
  auth?: "none" | "optional" | "required";
  authMethods?: ("PLAIN" | "LOGIN" | "CRAM-MD5")[];
  /** Credentials that `required` (and any AUTH attempt) accepts. */
  username?: string;
  password?: string;
  /** Accept any username and password (PLAIN and LOGIN), recording the username. */
  acceptAnyCredentials?: boolean;
  starttls?: boolean;
  implicitTls?: boolean;
  cert?: CertName;
  /** 451 to RCPT for a sender/recipient pair first seen less than this long ago (by the lab clock). */
  greylistMs?: number;
  /** Wait this long before answering the end of DATA. */
  finalReplyDelayMs?: number;
  /** Scripted RCPT replies by recipient address, e.g. {"ops-550@x.test": {code: 451, message: "try later"}}. */
  rcptReplies?: Record<string, { code: number; message: string }>;
  /** Refuse a HELO/EHLO name that is not a fully-qualified domain or an address literal (Postfix's check). */
  rejectNonFqdnHelo?: boolean;
  /**
   * The first connection is cut at this TLS stage by a scripted front (`CuttingFront`); later connections pass
   * through to the server as configured. The STARTTLS stages need `starttls`, the implicit one `implicitTls`.
   */
  cutFirstAt?: CutStage;
  /** How many connections, from the first, are cut at `cutFirstAt` (default 1). */
  cutConnections?: number;
}

/**
 * Where the first connection dies: 5 ms after STARTTLS's 220; once the client's ClientHello arrives (mid-handshake);
 * as soon as the handshake completes; with a 421 to the EHLO said under TLS; and, with implicit TLS, when the
 * ClientHello arrives, before any certificate is sent.
 */
export type CutStage = "after-starttls-reply" | "during-handshake" | "after-handshake" | "ehlo-421-after-tls" | "implicit-before-handshake";

/** What a lab server saw of one accepted message. */
export interface LabEmail {
  mailFrom: string;
  rcptTo: string[];
  /** RCPT parameters such as NOTIFY, by recipient. */
  rcptArgs: Record<string, Record<string, string>>;
  raw: string;
  helo: string;
  authUser: string | null;
  authMethod: string | null;
  secure: boolean;
  receivedAt: string;
}

class SmtpError extends Error {
  constructor(
    readonly responseCode: number,
    message: string,
  ) {
    super(message);
  }
}

interface SessionState {
  authUser?: string;
  authMethod?: string;
}

export class LabServer {
  readonly emails: LabEmail[] = [];
  /** Connections accepted, counting those that never got to send. */
  connections = 0;
  private server: SMTPServer | undefined;
  private readonly sockets = new Set<Socket>();
  private readonly sessions = new Map<string, SessionState>();
  private readonly firstSeen = new Map<string, number>();
  port = 0;

  constructor(
    readonly profile: LabProfile,
    private readonly clock: () => number,
  ) {}

  /** Listens on a free port the first time, and on the same port after a stop. */
  async start(): Promise<number> {
    if (this.server) return this.port;
    const p = this.profile;
    const auth = p.auth ?? "none";
    const tls = p.implicitTls || p.starttls ? { key: read("server-key.pem"), cert: read(CERTS[p.cert ?? "good"]) } : {};
    const server = new SMTPServer({
      ...tls,
      secure: p.implicitTls ?? false,
      disabledCommands: [...(auth === "none" ? ["AUTH"] : []), ...(p.starttls || p.implicitTls ? [] : ["STARTTLS"])],
      hideSTARTTLS: !p.starttls,
      allowInsecureAuth: true,
      authOptional: auth !== "required",
      authMethods: p.authMethods ?? ["PLAIN", "LOGIN"],
      disableReverseLookup: true,
      logger: false,
      onAuth: (login, session, callback) => {
        const ok = p.acceptAnyCredentials
          ? login.method !== "CRAM-MD5"
          : login.method === "CRAM-MD5"
            ? login.username === p.username && login.validatePassword(p.password ?? "")
            : login.username === p.username && login.password === p.password;
        if (!ok) {
          callback(new SmtpError(535, "5.7.8 Error: authentication failed: bad username or password"));
          return;
        }
        this.sessions.set(session.id, { authUser: login.username ?? "", authMethod: login.method });
        callback(null, { user: login.username });
      },
      onMailFrom: (_address, session, callback) => {
        if (p.rejectNonFqdnHelo && !/^(\[[0-9.:a-fA-F]+\]|[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+)$/.test(session.hostNameAppearsAs)) {
          callback(new SmtpError(504, `5.5.2 <${session.hostNameAppearsAs}>: Helo command rejected: need fully-qualified hostname`));
          return;
        }
        callback();
      },
      onRcptTo: (address, session, callback) => this.onRcpt(address, session, callback),
      onData: (stream, session, callback) => {
        this.collect(stream, session).then(
          () => setTimeout(() => callback(), p.finalReplyDelayMs ?? 0),
          (error: unknown) => callback(error instanceof Error ? error : new Error(String(error))),
        );
      },
      onClose: (session) => this.sessions.delete(session.id),
    });
    server.server.on("connection", (socket: Socket) => {
      this.connections++;
      this.sockets.add(socket);
      socket.once("close", () => this.sockets.delete(socket));
    });
    server.on("error", () => {});
    this.server = server;
    this.port = await new Promise<number>((resolve, reject) => {
      server.server.once("error", reject);
      server.server.listen(this.port, "127.0.0.1", () => resolve((server.server.address() as AddressInfo).port));
    });
    return this.port;
  }

  /** Cuts open sessions and closes the port, so clients see a refused connection, not a hanging one. */
  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
    await closed;
  }

  private onRcpt(address: SMTPServerAddress, session: SMTPServerSession, callback: (error?: Error) => void): void {
    const scripted = this.profile.rcptReplies?.[address.address];
    if (scripted) {
      callback(new SmtpError(scripted.code, scripted.message));
      return;
    }
    if (this.profile.greylistMs) {
      const key = `${session.envelope.mailFrom ? session.envelope.mailFrom.address : ""}|${address.address}`;
      const now = this.clock();
      const first = this.firstSeen.get(key) ?? now;
      this.firstSeen.set(key, first);
      if (now - first < this.profile.greylistMs) {
        callback(new SmtpError(451, "4.7.1 Greylisted, see https://postgrey.schweikert.ch/help/"));
        return;
      }
    }
    callback();
  }

  private async collect(stream: SMTPServerDataStream, session: SMTPServerSession): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(chunk as Buffer);
    const state = this.sessions.get(session.id) ?? {};
    const rcptArgs: Record<string, Record<string, string>> = {};
    for (const r of session.envelope.rcptTo) rcptArgs[r.address] = stringArgs(r.args);
    this.emails.push({
      mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
      rcptTo: session.envelope.rcptTo.map((r) => r.address),
      rcptArgs,
      raw: Buffer.concat(chunks).toString("utf8"),
      helo: session.hostNameAppearsAs,
      authUser: state.authUser ?? null,
      authMethod: state.authMethod ?? null,
      secure: session.secure,
      receivedAt: new Date().toISOString(),
    });
  }
}

function stringArgs(args: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (args && typeof args === "object") {
    for (const [key, value] of Object.entries(args)) out[key.toUpperCase()] = String(value);
  }
  return out;
}

/**
 * A front on its own port for a lab server whose first connection must die at a TLS stage (`LabProfile.cutFirstAt`).
 * It plays that first session itself, with the lab's good certificate, so the cut falls exactly where asked, then
 * pipes every later connection to the real server unchanged.
 */
class CuttingFront {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  /** Connections the front accepted, the cut one included. */
  connections = 0;
  port = 0;

  constructor(
    private readonly stage: CutStage,
    private readonly count: number,
    private readonly backend: LabServer,
  ) {}

  async start(): Promise<number> {
    const server = createServer((socket) => {
      this.sockets.add(socket);
      socket.once("close", () => this.sockets.delete(socket));
      socket.on("error", () => {});
      this.connections++;
      if (this.connections <= this.count) this.script(socket);
      else this.pipe(socket);
    });
    this.server = server;
    this.port = await new Promise<number>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => resolve((server.address() as AddressInfo).port));
    });
    return this.port;
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const socket of this.sockets) socket.destroy();
    await closed;
  }

  private pipe(client: Socket): void {
    const upstream = new Socket();
    upstream.on("error", () => client.destroy());
    client.on("error", () => upstream.destroy());
    upstream.connect(this.backend.port, "127.0.0.1", () => {
      client.pipe(upstream);
      upstream.pipe(client);
    });
    client.once("close", () => upstream.destroy());
    upstream.once("close", () => client.destroy());
  }

  private script(socket: Socket): void {
    if (this.stage === "implicit-before-handshake") {
      socket.once("data", () => socket.destroy());
      return;
    }
    socket.write("220 lab.test ESMTP scripted\r\n");
    let buffer = "";
    const onData = (chunk: Buffer) => {
      buffer += chunk.toString("latin1");
      for (let end = buffer.indexOf("\n"); end >= 0; end = buffer.indexOf("\n")) {
        const line = buffer.slice(0, end).trim().toUpperCase();
        buffer = buffer.slice(end + 1);
        if (line.startsWith("EHLO")) socket.write("250-lab.test\r\n250-PIPELINING\r\n250 STARTTLS\r\n");
        else if (line === "STARTTLS") {
          socket.off("data", onData);
          socket.write("220 2.0.0 Ready to start TLS\r\n");
          this.afterStarttls(socket);
          return;
        } else socket.write("502 5.5.2 not scripted\r\n");
      }
    };
    socket.on("data", onData);
  }

  private afterStarttls(socket: Socket): void {
    if (this.stage === "after-starttls-reply") {
      setTimeout(() => socket.destroy(), 5);
      return;
    }
    if (this.stage === "during-handshake") {
      socket.once("data", () => socket.destroy());
      return;
    }
    const secure = new TLSSocket(socket, { isServer: true, key: read("server-key.pem"), cert: read(CERTS.good) });
    secure.on("error", () => socket.destroy());
    secure.once("secure", () => {
      if (this.stage === "after-handshake") {
        secure.destroy();
        return;
      }
      secure.once("data", () => {
        secure.end("421 4.3.2 lab.test Service shutting down, closing transmission channel\r\n");
      });
    });
  }
}

/** Every lab server of a run, by id, and the clock they share. */
export class SmtpLab {
  private readonly servers = new Map<string, LabServer>();
  private readonly fronts: CuttingFront[] = [];
  private next = 1;
  /** Epoch ms set by the tests; real time until they set it. */
  private now: number | undefined;

  clock = (): number => this.now ?? Date.now();

  setClock(now: number | null): void {
    this.now = now ?? undefined;
  }

  async create(profile: LabProfile): Promise<{ id: string; port: number }> {
    const id = String(this.next++);
    const server = new LabServer(profile, this.clock);
    this.servers.set(id, server);
    const port = await server.start();
    if (!profile.cutFirstAt) return { id, port };
    const front = new CuttingFront(profile.cutFirstAt, profile.cutConnections ?? 1, server);
    this.fronts.push(front);
    return { id, port: await front.start() };
  }

  get(id: string): LabServer | undefined {
    return this.servers.get(id);
  }

  async stopAll(): Promise<void> {
    await Promise.all([...this.servers.values()].map((s) => s.stop()));
    await Promise.all(this.fronts.map((f) => f.stop()));
  }
}
