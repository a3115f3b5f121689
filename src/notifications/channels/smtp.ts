import { markdownToPlaintext } from "../../markdown/plaintext";
import { domainOf, isAddress } from "../email/address";
import { composeEmail } from "../email/mime";
import { SmtpFailure, sendMail } from "../email/smtp-client";
import { emailText } from "../render";
import { type DeliveryContext, DeliveryError } from "./types";

/**
 * SMTP failures by what they mean for a retry: a reply code of the command that failed decides (4xx temporary,
 * 5xx permanent); connection trouble and timeouts are temporary; TLS failures and policy refusals (no STARTTLS, no
 * usable AUTH) are configuration problems that no retry fixes.
 */
function classifySmtpFailure(error: SmtpFailure): DeliveryError {
  const retryable =
    error.kind === "reply" ? error.code !== undefined && error.code >= 400 && error.code < 500 : error.kind === "network" || error.kind === "timeout";
  return new DeliveryError(`smtp: ${error.message.slice(0, 300)}`, retryable);
}

/** The Message-ID of a message: its log id on the sender's domain, so every retry carries the same one. */
export function messageIdFor(messageId: string, fromAddress: string): string {
  return `${messageId}@${domainOf(fromAddress)}`;
}

/** Multipart text + HTML to the recipient through the configured smarthost (docs/email.md). */
export async function sendEmail({ config, message, rendered, payload, deadline, progress }: DeliveryContext): Promise<void> {
  const smarthost = config.EMAIL_SMARTHOST;
  if (!smarthost) throw new DeliveryError("e-mail delivery is not configured (EMAIL_SMARTHOST)", false);
  const to = typeof payload.user_email === "string" ? payload.user_email : "";
  if (!to) throw new DeliveryError("the recipient has no e-mail address", false);
  if (!isAddress(to)) throw new DeliveryError("the recipient's e-mail address cannot be used in SMTP", false);
  const separator = smarthost.lastIndexOf(":");
  const from = config.emailFrom;
  const data = composeEmail({
    from,
    to,
    // The title's words only: a link's target spelled out in a Subject reads as noise, or as bait (docs/email.md).
    subject: markdownToPlaintext(rendered.titleMarkdown, { targets: false }),
    text: emailText(rendered),
    html: rendered.html,
    messageId: messageIdFor(message.id, from.address),
    date: new Date(),
  });
  const credentials = config.EMAIL_USERNAME ? { username: config.EMAIL_USERNAME, password: config.EMAIL_PASSWORD ?? "" } : undefined;
  try {
    await sendMail(
      {
        host: smarthost.slice(0, separator),
        port: Number(smarthost.slice(separator + 1)),
        tls: config.EMAIL_TLS,
        hello: config.emailHello,
        ...(credentials ? { credentials } : {}),
        deadline,
        ...(progress ? { onProgress: progress } : {}),
      },
      { from: from.address, to },
      data,
    );
  } catch (error) {
    if (!(error instanceof SmtpFailure)) throw error;
    throw classifySmtpFailure(error);
  }
}
