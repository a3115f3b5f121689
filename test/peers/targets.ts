// Stand-ins for the services a user's own targets post to (docs/targets.md): Slack incoming webhooks, Microsoft Teams
// Workflows, Discord webhooks and a user's own webhook receiver, as one real HTTP server on 127.0.0.1. Each service's
// path takes what Herald posts, checks it against what the service documents (Slack's Block Kit limits, Discord's
// embed limits, an Adaptive Card 1.5 parsed by Microsoft's own `adaptivecards` library), records it, and answers as
// the service would: a body that breaks a rule gets the service's 400, otherwise the next scripted answer (200, 204,
// 404, 429, 500…) or the service's usual success. A webhook's Standard Webhooks signature is checked by the
// `standardwebhooks` package, when the test asks, with the target's secret.
//
// Runs in Node: started by test/peers/global-setup.ts for the workerd suite (its origin is that suite's
// OUTBOUND_ALLOWED_ORIGINS), and by the end-to-end tests for the Herald they start. Tests talk to it through the
// control API below (test/targets/stand-ins.ts on the workerd side).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import type * as AdaptiveCards from "adaptivecards";
import { Webhook } from "standardwebhooks";

/** The services, by the first segment of their path on the stand-in. */
type StandInKind = "slack" | "teams" | "discord" | "webhook";

/** One POST a stand-in took. */
export interface TargetDelivery {
  kind: StandInKind;
  /** The path it was posted to, e.g. /slack/T1/B1/abc: each test uses paths of its own. */
  path: string;
  /** Request headers, lower-cased names. */
  headers: Record<string, string>;
  body: string;
  /** What broke the service's documented rules; empty for a body the service would take. */
  problems: string[];
  /** The status the stand-in answered. */
  status: number;
  receivedAt: string;
  /** For a webhook read with its secret: whether `standardwebhooks` verified the signature, or why not. */
  signature?: "valid" | string;
}

export interface ScriptedAnswer {
  status: number;
  body?: string;
}

// ---------------------------------------------------------------------------------------------------------------
// What each service documents
// ---------------------------------------------------------------------------------------------------------------

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value);

/** A Block Kit text object of `type`, 1 to `max` characters. */
function textObject(value: unknown, types: readonly string[], max: number, where: string, problems: string[]): string | undefined {
  if (!isObject(value)) return void problems.push(`${where}: not a text object`);
  if (!types.includes(String(value.type))) problems.push(`${where}.type: ${String(value.type)} is not ${types.join(" or ")}`);
  if (typeof value.text !== "string" || value.text.length < 1) return void problems.push(`${where}.text: empty`);
  if ([...value.text].length > max) problems.push(`${where}.text: ${[...value.text].length} characters, more than ${max}`);
  return value.type === "mrkdwn" ? value.text : undefined;
}

/** Slack's markup: `&`, `<` and `>` must arrive escaped, or they start an entity, a link or a mention. */
function escapedMrkdwn(text: string, where: string, problems: string[]): void {
  if (/[<>]/.test(text)) problems.push(`${where}: an unescaped < or >`);
  if (/&(?!amp;|lt;|gt;)/.test(text)) problems.push(`${where}: an unescaped &`);
}

/** Slack's Block Kit limits for incoming webhooks: at most 50 blocks; headers, sections and action buttons. */
function slackProblems(body: unknown): string[] {
  const problems: string[] = [];
  if (!isObject(body)) return ["the body is not a JSON object"];
  if (typeof body.text !== "string" || body.text === "") problems.push("text: missing (the fallback notifications show)");
  else escapedMrkdwn(body.text, "text", problems);
  if (!Array.isArray(body.blocks)) return [...problems, "blocks: not an array"];
  if (body.blocks.length > 50) problems.push(`blocks: ${body.blocks.length}, more than 50`);
  for (const [i, block] of (body.blocks as unknown[]).entries()) {
    const where = `blocks[${i}]`;
    if (!isObject(block)) {
      problems.push(`${where}: not an object`);
      continue;
    }
    switch (block.type) {
      case "header":
        textObject(block.text, ["plain_text"], 150, `${where}.text`, problems);
        break;
      case "section": {
        const mrkdwn = textObject(block.text, ["mrkdwn", "plain_text"], 3000, `${where}.text`, problems);
        if (mrkdwn !== undefined) escapedMrkdwn(mrkdwn, `${where}.text.text`, problems);
        break;
      }
      case "actions": {
        if (!Array.isArray(block.elements) || block.elements.length < 1 || block.elements.length > 25) {
          problems.push(`${where}.elements: must hold 1 to 25 elements`);
          break;
        }
        const ids = new Set<string>();
        for (const [j, element] of (block.elements as unknown[]).entries()) {
          const at = `${where}.elements[${j}]`;
          if (!isObject(element) || element.type !== "button") {
            problems.push(`${at}: not a button`);
            continue;
          }
          textObject(element.text, ["plain_text"], 75, `${at}.text`, problems);
          if (typeof element.url !== "string" || element.url.length > 3000 || !URL.canParse(element.url)) {
            problems.push(`${at}.url: not a URL of at most 3000 characters`);
          }
          if (typeof element.action_id === "string") {
            if (element.action_id.length > 255 || ids.has(element.action_id)) problems.push(`${at}.action_id: too long or repeated`);
            ids.add(element.action_id);
          }
        }
        break;
      }
      default:
        problems.push(`${where}.type: ${String(block.type)} is not a block Herald should send`);
    }
  }
  return problems;
}

/** Discord's embed limits: title 256, description 4096, all of an embed's text 6000, at most 10 embeds. */
function discordProblems(body: unknown): string[] {
  const problems: string[] = [];
  if (!isObject(body)) return ["the body is not a JSON object"];
  if (!Array.isArray(body.embeds) || body.embeds.length < 1) {
    if (typeof body.content !== "string" || body.content === "") problems.push("neither content nor embeds");
    return problems;
  }
  if (body.embeds.length > 10) problems.push(`embeds: ${body.embeds.length}, more than 10`);
  for (const [i, embed] of (body.embeds as unknown[]).entries()) {
    const where = `embeds[${i}]`;
    if (!isObject(embed)) {
      problems.push(`${where}: not an object`);
      continue;
    }
    const length = (value: unknown) => (typeof value === "string" ? [...value].length : 0);
    if (length(embed.title) > 256) problems.push(`${where}.title: more than 256 characters`);
    if (length(embed.description) > 4096) problems.push(`${where}.description: more than 4096 characters`);
    if (embed.title === undefined && embed.description === undefined) problems.push(`${where}: neither title nor description`);
    if (embed.url !== undefined && (typeof embed.url !== "string" || !URL.canParse(embed.url))) problems.push(`${where}.url: not a URL`);
    if (embed.timestamp !== undefined && (typeof embed.timestamp !== "string" || Number.isNaN(Date.parse(embed.timestamp)))) {
      problems.push(`${where}.timestamp: not ISO 8601`);
    }
    const footer = isObject(embed.footer) ? length(embed.footer.text) : 0;
    const author = isObject(embed.author) ? length(embed.author.name) : 0;
    const fields = Array.isArray(embed.fields)
      ? embed.fields.reduce((n: number, f: unknown) => n + (isObject(f) ? length(f.name) + length(f.value) : 0), 0)
      : 0;
    const total = length(embed.title) + length(embed.description) + footer + author + fields;
    if (total > 6000) problems.push(`${where}: ${total} characters in all, more than 6000`);
  }
  return problems;
}

/**
 * Microsoft's Adaptive Cards library (MIT), loaded from its UMD bundle: the package's ES build does not load in Node as
 * shipped (its imports name files without extensions). The bundle is the same code, with the package's own types.
 */
const adaptiveCards = createRequire(import.meta.url)("adaptivecards/dist/adaptivecards.js") as typeof AdaptiveCards;

/**
 * A Teams Workflows message (`type: "message"`, one Adaptive Card attachment) whose card Microsoft's own parser reads
 * as version 1.5 without a complaint: unknown elements or actions, bad property values and missing required
 * properties all show up as its parse and validation events.
 */
function teamsProblems(body: unknown): string[] {
  const problems: string[] = [];
  if (!isObject(body)) return ["the body is not a JSON object"];
  if (body.type !== "message") problems.push(`type: ${String(body.type)} is not "message"`);
  if (!Array.isArray(body.attachments) || body.attachments.length !== 1) return [...problems, "attachments: must hold one card"];
  const attachment: unknown = body.attachments[0];
  if (!isObject(attachment)) return [...problems, "attachments[0]: not an object"];
  if (attachment.contentType !== "application/vnd.microsoft.card.adaptive") problems.push("attachments[0].contentType: not an Adaptive Card");
  const card = attachment.content;
  if (!isObject(card)) return [...problems, "attachments[0].content: not an object"];
  if (card.type !== "AdaptiveCard") problems.push(`content.type: ${String(card.type)}`);
  if (card.version !== "1.5") problems.push(`content.version: ${String(card.version)} is not "1.5"`);
  const parsed = new adaptiveCards.AdaptiveCard();
  const context = new adaptiveCards.SerializationContext(adaptiveCards.Versions.v1_5);
  parsed.parse(card as AdaptiveCards.PropertyBag, context);
  for (let i = 0; i < context.eventCount; i++) problems.push(`parse: ${context.getEventAt(i).message}`);
  for (const event of parsed.validateProperties().validationEvents) problems.push(`validate: ${event.message}`);
  return problems;
}

// ---------------------------------------------------------------------------------------------------------------
// The server
// ---------------------------------------------------------------------------------------------------------------

/** What each service answers a body it takes, and one that breaks its rules. */
const SERVICES: Record<StandInKind, { ok: ScriptedAnswer; refused: ScriptedAnswer; problems: (body: unknown) => string[] }> = {
  slack: { ok: { status: 200, body: "ok" }, refused: { status: 400, body: "invalid_blocks" }, problems: slackProblems },
  teams: { ok: { status: 202, body: "" }, refused: { status: 400, body: '{"error":{"code":"InvalidRequestContent"}}' }, problems: teamsProblems },
  discord: {
    ok: { status: 204, body: "" },
    refused: { status: 400, body: '{"message": "Invalid Form Body", "code": 50035}' },
    problems: discordProblems,
  },
  webhook: { ok: { status: 200, body: "ok" }, refused: { status: 400, body: "bad payload" }, problems: () => [] },
};

/** The kind a path belongs to; Discord's webhooks live under /api/webhooks/ as on discord.com. */
function kindOf(path: string): StandInKind | undefined {
  if (path.startsWith("/slack/")) return "slack";
  if (path.startsWith("/teams/")) return "teams";
  if (path.startsWith("/api/webhooks/")) return "discord";
  if (path.startsWith("/webhook/")) return "webhook";
  return undefined;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Whether `standardwebhooks` verifies the delivery with `secret`: "valid", or what it said. */
function checkSignature(delivery: TargetDelivery, secret: string): string {
  try {
    new Webhook(secret).verify(delivery.body, {
      "webhook-id": delivery.headers["webhook-id"] ?? "",
      "webhook-timestamp": delivery.headers["webhook-timestamp"] ?? "",
      "webhook-signature": delivery.headers["webhook-signature"] ?? "",
    });
    return "valid";
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

export class TargetStandIns {
  private readonly deliveries: TargetDelivery[] = [];
  /** Answers queued per path, used in order; then the service's usual success. */
  private readonly scripts = new Map<string, ScriptedAnswer[]>();

  private constructor(
    private readonly server: Server,
    /** http://127.0.0.1:<port> */
    readonly origin: string,
  ) {}

  static async start(host = "127.0.0.1"): Promise<TargetStandIns> {
    let standIns: TargetStandIns | undefined;
    const server = createServer((req, res) => {
      standIns?.handle(req, res).catch((error: unknown) => {
        if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
        res.end(error instanceof Error ? error.message : String(error));
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, host, () => resolve());
    });
    standIns = new TargetStandIns(server, `http://${host}:${(server.address() as AddressInfo).port}`);
    return standIns;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Queues answers for the next POSTs to `path`. */
  script(path: string, answers: readonly ScriptedAnswer[]): void {
    this.scripts.set(path, [...(this.scripts.get(path) ?? []), ...answers]);
  }

  /** What was posted to `path`, oldest first; with `secret`, each checked for its Standard Webhooks signature. */
  received(path: string, secret?: string): TargetDelivery[] {
    return this.deliveries.filter((d) => d.path === path).map((d) => (secret === undefined ? d : { ...d, signature: checkSignature(d, secret) }));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://stand-in");
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    const send = (status: number, body: string, type = "text/plain") => {
      res.writeHead(status, { "content-type": type });
      res.end(body);
    };
    const json = (status: number, value: unknown) => send(status, JSON.stringify(value), "application/json");

    if (url.pathname.startsWith("/control/")) {
      const body = parseJson(text);
      const path = isObject(body) && typeof body.path === "string" ? body.path : url.searchParams.get("path");
      switch (`${req.method} ${url.pathname}`) {
        case "POST /control/script": {
          const answers = isObject(body) && Array.isArray(body.answers) ? (body.answers as ScriptedAnswer[]) : undefined;
          if (!path || !answers || answers.some((a) => !Number.isInteger(a.status) || a.status < 200 || a.status > 599)) {
            return send(400, "script: {path, answers: [{status, body?}]}");
          }
          this.script(path, answers);
          return json(200, { ok: true });
        }
        case "POST /control/received": {
          if (!path) return send(400, "received: {path, secret?}");
          const secret = isObject(body) && typeof body.secret === "string" ? body.secret : undefined;
          return json(200, this.received(path, secret));
        }
        default:
          return send(404, `no control route ${req.method} ${url.pathname}`);
      }
    }

    const kind = kindOf(url.pathname);
    if (req.method !== "POST" || kind === undefined) return send(404, "not found");
    const service = SERVICES[kind];
    const parsed = parseJson(text);
    const problems = parsed === undefined ? ["the body is not JSON"] : service.problems(parsed);
    if (req.headers["content-type"] !== "application/json") problems.push(`content-type: ${String(req.headers["content-type"])}`);
    // A body the service would refuse is refused whatever was scripted: a scripted answer is for a body it takes.
    const answer = problems.length > 0 ? service.refused : (this.scripts.get(url.pathname)?.shift() ?? service.ok);
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(", ") : value;
    this.deliveries.push({
      kind,
      path: url.pathname,
      headers,
      body: text,
      problems,
      status: answer.status,
      receivedAt: new Date().toISOString(),
    });
    send(answer.status, answer.body ?? "");
  }
}
