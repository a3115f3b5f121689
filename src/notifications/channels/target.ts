import { and, eq } from "drizzle-orm";
import { database } from "../../db/client";
import { type NotificationTargetRow, notificationTargets, type TargetKind } from "../../db/schema";
import { checkOutboundUrl } from "../../outbound/allow-list";
import { TargetReasons } from "../../targets/messages";
import { discordPayload, slackPayload, type TargetContent, teamsPayload } from "../../targets/payloads";
import { openSigningSecret, openUrl } from "../../targets/secrets";
import { VERIFICATION_EVENT } from "../../targets/template";
import { TARGET_VERIFICATION_TEMPLATE_ID } from "../templates";
import { postJson } from "./post";
import { type Channel, type DeliveryContext, DeliveryError } from "./types";
import { signWebhook, webhookBody } from "./webhook";

/** How the message log names each kind's receiver. */
const RECEIVERS: Record<TargetKind, string> = { webhook: "webhook", slack: "Slack", teams: "Microsoft Teams", discord: "Discord" };

/**
 * Slack answers 404 (`no_service`) or 410 (`channel_is_archived`) for a webhook that was removed or whose channel was
 * archived; Discord answers 404 (`Unknown Webhook`) for a deleted one. Permanent, as every other 4xx is, with a
 * reason that tells the user what to do (docs/targets.md, "Delivery").
 */
function deletedWebhook(kind: TargetKind): ((status: number, excerpt: string) => string | undefined) | undefined {
  if (kind !== "slack" && kind !== "discord") return undefined;
  return (status, excerpt) => (status === 404 || status === 410 ? TargetReasons.deleted(RECEIVERS[kind], status, excerpt) : undefined);
}

/** The target a copy goes to: the row's destination, and only if it still belongs to the message's recipient. */
async function targetOf(ctx: DeliveryContext): Promise<NotificationTargetRow> {
  const { env, message } = ctx;
  const id = message.destination ?? "";
  const [target] = await database(env.DB)
    .select()
    .from(notificationTargets)
    .where(and(eq(notificationTargets.id, id), eq(notificationTargets.userId, message.userId)))
    .limit(1);
  if (!target) throw new DeliveryError(TargetReasons.gone, false);
  return target;
}

/**
 * Posts one copy to a user's own target (docs/targets.md, "Delivery"): the target must exist and be verified (its
 * verification message excepted), its URL must still pass the outbound allow-list, and the body is the service's
 * own shape. The answer is classified as the deployment webhook's is (src/notifications/channels/post.ts).
 */
export const sendTarget: Channel = async (ctx) => {
  const { config, message, rendered, payload, deadline } = ctx;
  const target = await targetOf(ctx);
  const verification = ctx.template.id === TARGET_VERIFICATION_TEMPLATE_ID;
  if (!verification && target.verifiedAt === null) throw new DeliveryError(TargetReasons.unverified, false);

  const url = await openUrl(config.SECRET_KEY, target.id, target.urlSealed).catch(() => {
    throw new DeliveryError(TargetReasons.unreadable, false);
  });
  // Checked again at each send: the deployment's list may have changed since the target was added.
  const allowed = checkOutboundUrl(target.kind, url, config.OUTBOUND_ALLOWED_ORIGINS);
  if (!allowed.ok) throw new DeliveryError(TargetReasons.notAllowed(allowed.reason), false);

  const headers = new Headers({ "Content-Type": "application/json", "X-Message-Id": message.id });
  let body: string;
  if (target.kind === "webhook") {
    // The deployment webhook's body and signature, under the target's own secret; its verification is an event of its own.
    const labels = (payload.labels ?? {}) as Record<string, string>;
    body = verification
      ? webhookBody(message.id, { code: labels.code ?? "" }, rendered, VERIFICATION_EVENT)
      : webhookBody(message.id, payload, rendered);
    const secret = await openSigningSecret(config.SECRET_KEY, target.id, target.secretSealed ?? "").catch(() => {
      throw new DeliveryError(TargetReasons.unreadable, false);
    });
    await signWebhook(headers, secret, message.id, body);
  } else {
    const base = config.ACCESS_URL.replace(/\/$/, "");
    const content: TargetContent = {
      title: rendered.title,
      body: rendered.body,
      actions: rendered.actions,
      createdAt: message.createdAt,
      // The verification code is entered on the account page; a notification is read in the inbox.
      link: `${base}/#/${verification ? "account" : "inbox"}`,
    };
    const build = { slack: slackPayload, teams: teamsPayload, discord: discordPayload }[target.kind];
    body = JSON.stringify(build(content));
  }
  await postJson({
    url,
    body,
    headers,
    deadline,
    receiver: RECEIVERS[target.kind],
    redirectAdvice: TargetReasons.redirect,
    explain: deletedWebhook(target.kind),
  });
};
