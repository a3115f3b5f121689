// A TCP proxy in front of a real SMTP server that cuts one connection at a chosen STARTTLS stage and passes every
// other one through untouched (docs/email.md, "What it does"). It reads only the clear
// text before STARTTLS and counts what crosses it afterwards, so the server's TLS is the real one.
import { type AddressInfo, createServer, type Server, Socket } from "node:net";

/**
 * When the client's ClientHello arrives (the server never sees it); when the server's first handshake bytes come back;
 * after the handshake has completed. Each is a point in the conversation, never a delay: with TLS session resumption a
 * whole transaction takes about 13 ms on loopback, so a cut on a timer can land anywhere in it, even between the final
 * dot and its 250, where no client can tell a delivered message from a lost one (docs/email.md, "Never lose, never
 * duplicate").
 */
export type ProxyCut = "at-client-hello" | "during-handshake" | "after-handshake";

export class CuttingProxy {
  private server: Server | undefined;
  private armed: ProxyCut | undefined;
  private readonly sockets = new Set<Socket>();
  /** Connections cut so far. */
  cuts = 0;
  port = 0;

  constructor(private readonly upstreamPort: number) {}

  async start(): Promise<number> {
    const server = createServer((client) => this.accept(client));
    this.server = server;
    this.port = await new Promise<number>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => resolve((server.address() as AddressInfo).port));
    });
    return this.port;
  }

  /** The next connection is cut at `stage`; later ones pass. */
  arm(stage: ProxyCut): void {
    this.armed = stage;
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private accept(client: Socket): void {
    const stage = this.armed;
    this.armed = undefined;
    const upstream = new Socket();
    for (const s of [client, upstream]) {
      this.sockets.add(s);
      s.once("close", () => this.sockets.delete(s));
      s.on("error", () => {});
    }
    const cut = () => {
      this.cuts++;
      client.destroy();
      upstream.destroy();
    };
    client.once("close", () => upstream.destroy());
    upstream.once("close", () => client.destroy());
    // Before STARTTLS: clear text, watched for the 220 that answers it. After: TLS records, counted per direction.
    let starttlsSent = false;
    let upgraded = false;
    let clientChunksAfter = 0;
    client.on("data", (chunk: Buffer) => {
      if (!upgraded && /^STARTTLS\r?\n/im.test(chunk.toString("latin1"))) starttlsSent = true;
      if (upgraded) clientChunksAfter++;
      if (stage === "at-client-hello" && upgraded) return cut();
      upstream.write(chunk);
    });
    upstream.on("data", (chunk: Buffer) => {
      if (!stage) return void client.write(chunk);
      if (!upgraded) {
        client.write(chunk);
        if (starttlsSent && /^220 /m.test(chunk.toString("latin1"))) {
          upgraded = true;
        }
        return;
      }
      if (stage === "during-handshake") return cut();
      // The client's second flight (its Finished) ends the handshake; whatever the server says after it is past it.
      if (stage === "after-handshake" && clientChunksAfter >= 2) return cut();
      client.write(chunk);
    });
    upstream.connect(this.upstreamPort, "127.0.0.1");
  }
}
