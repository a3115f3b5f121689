import { LogLevel, WorkerMailer } from "worker-mailer";
import { emailText } from "../render";
import { DeliveryError, type DeliveryContext } from "./types";

const TIMEOUT_MS = 15_000;

/** SMTP replies 5xx are permanent refusals (bad recipient, rejected sender); connection trouble and 4xx are not. */
function classify(error: unknown): DeliveryError {
  const text = error instanceof Error ? error.message : String(error);
  const code = /\b([45])\d\d\b/.exec(text)?.[1];
  return new DeliveryError(`smtp: ${text.slice(0, 200)}`, code !== "5");
}

/** Multipart text + HTML through worker-mailer over cloudflare:sockets (SPEC §6). */
export async function sendEmail({ config, rendered, payload }: DeliveryContext): Promise<void> {
  const smarthost = config.EMAIL_SMARTHOST;
  if (!smarthost) throw new DeliveryError("e-mail delivery is not configured (EMAIL_SMARTHOST)", false);
  const to = typeof payload.user_email === "string" ? payload.user_email : "";
  if (!to) throw new DeliveryError("the recipient has no e-mail address", false);
  const [host = "", port = "25"] = smarthost.split(":");
  const from = config.EMAIL_FROM ?? `Herald <noreply@${new URL(config.ACCESS_URL).hostname}>`;
  let mailer: WorkerMailer | undefined;
  try {
    mailer = await WorkerMailer.connect({
      host,
      port: Number(port),
      secure: config.EMAIL_TLS === "tls",
      startTls: config.EMAIL_TLS === "starttls",
      ...(config.EMAIL_USERNAME && config.EMAIL_PASSWORD
        ? { credentials: { username: config.EMAIL_USERNAME, password: config.EMAIL_PASSWORD }, authType: ["plain", "login"] as ("plain" | "login")[] }
        : {}),
      // Its INFO log echoes the conversation (addresses, maybe a passcode link): errors reach our status instead.
      logLevel: LogLevel.NONE,
      socketTimeoutMs: TIMEOUT_MS,
      responseTimeoutMs: TIMEOUT_MS,
    });
    await mailer.send({ from, to, subject: rendered.title, text: emailText(rendered), html: rendered.html });
  } catch (error) {
    throw classify(error);
  } finally {
    await mailer?.close().catch(() => undefined);
  }
}
