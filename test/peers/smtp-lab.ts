// SMTP servers that behave like the ones Herald meets in the field, started on demand by the workerd tests through
// the control API (test/peers.ts: `labServer()`). Each is a real smtp-server on its own 127.0.0.1 port, configured the
// way Postfix and friends are: AUTH PLAIN LOGIN advertised but optional, STARTTLS offered with a certificate from a
// private test CA (test/peers/tls, trusted by workerd through NODE_EXTRA_CA_CERTS), CRAM-MD5 only, greylisting,
// slow final replies, scripted per-recipient replies. Time-based behaviour (greylisting) follows a clock the tests
// set, so "two minutes later" costs no real minutes.
import { readFileSync } from "node:fs";
import type { AddressInfo, Socket } from "node:net";
import path from "node:path";
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
}

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

/** Every lab server of a run, by id, and the clock they share. */
export class SmtpLab {
  private readonly servers = new Map<string, LabServer>();
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
    return { id, port: await server.start() };
  }

  get(id: string): LabServer | undefined {
    return this.servers.get(id);
  }

  async stopAll(): Promise<void> {
    await Promise.all([...this.servers.values()].map((s) => s.stop()));
  }
}
