import type { Config } from "../config/config";
import type { MessageRow, NotificationTargetRow, UserRow } from "../db/schema";
import { messagePayload } from "../notifications/enqueue";
import { seal } from "../notifications/sealed";
import { TARGET_VERIFICATION_TEMPLATE_ID } from "../notifications/templates";
import { TARGET_VERIFICATION_TEMPLATE } from "./template";

/**
 * The verification message's row in the message log: method `target`, destination the target, and the target's own
 * id as its id, so the target finds it by primary key to say how its delivery is doing. The code is sealed in the row
 * (opened only to send, dropped once the message is finished), as a passcode is.
 */
export async function verificationMessage(
  config: Config,
  target: Pick<NotificationTargetRow, "id" | "name">,
  user: Pick<UserRow, "id" | "email" | "name" | "username">,
  code: string,
  now: string,
): Promise<MessageRow> {
  return {
    id: target.id,
    notificationId: target.id,
    templateId: TARGET_VERIFICATION_TEMPLATE_ID,
    userId: user.id,
    method: "target",
    destination: target.id,
    status: "pending",
    statusReason: null,
    payload: {
      ...messagePayload(TARGET_VERIFICATION_TEMPLATE, user, { labels: { target_name: target.name } }),
      sealed_labels: await seal(config.SECRET_KEY, { code }),
    },
    targets: [],
    createdBy: user.id,
    attempts: 0,
    nextRetryAfter: null,
    leasedUntil: null,
    createdAt: now,
    updatedAt: now,
    sentAt: null,
    sendIfUnread: false,
  };
}
