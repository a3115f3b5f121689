import { userInbox } from "../../inbox/address";
import { inboxLimits } from "../../inbox/retention";
import type { DeliveryContext } from "./types";

/**
 * Into the user's inbox object; idempotent there on the notification id, so a retry never duplicates. The object gets
 * the deployment's retention limits with it (docs/inbox.md, "Retention").
 */
export async function sendToInbox({ env, config, message, template, rendered }: DeliveryContext): Promise<void> {
  const inbox = userInbox(env, message.userId);
  await inbox.deliver(
    {
      id: message.notificationId,
      userId: message.userId,
      templateId: message.templateId,
      templateGroup: template.group,
      targets: message.targets,
      title: rendered.titleMarkdown,
      content: rendered.bodyMarkdown,
      icon: "",
      actions: rendered.actions,
      createdAt: message.createdAt,
    },
    inboxLimits(config),
  );
}
