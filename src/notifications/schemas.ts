import { z } from "zod";
import { named } from "../openapi/registry";
import { DISPATCH_METHODS, MESSAGE_STATUSES } from "../db/schema";
import { uuid } from "../http/ids";

const CUSTOM_TITLE_MAX = 120;
const CUSTOM_MESSAGE_MAX = 2000;

/**
 * `POST /notifications/custom`: at least one of title/message non-empty after trimming; lengths 120 / 2000. The title becomes an e-mail Subject,
 * so it may hold no control character at all (line breaks and tabs included); the message is Markdown and may have
 * line breaks (docs/email.md).
 */
export const customNotificationBody = named(
  "CustomNotificationRequest",
  z
    .object({
      content: z.object({
        title: z
          .string()
          .max(CUSTOM_TITLE_MAX, `title must be at most ${CUSTOM_TITLE_MAX} characters`)
          .regex(/^[^\u0000-\u001f\u007f-\u009f]*$/, "title must not contain control characters such as line breaks or tabs")
          .default(""),
        message: z.string().max(CUSTOM_MESSAGE_MAX, `message must be at most ${CUSTOM_MESSAGE_MAX} characters`).default(""),
      }),
    })
    .refine((b) => b.content.title.trim() !== "" || b.content.message.trim() !== "", {
      path: ["content"],
      message: "provide a non-empty title or message",
    }),
);

export const settingsBody = named(
  "NotificationsSettings",
  z.object({ notifier_paused: z.boolean() }),
  "`notifier_paused` is true when the notifier is paused.",
);

export const preferencesBody = named(
  "UpdateUserNotificationPreferences",
  z.object({
    template_disabled_map: z.record(z.string().max(64), z.boolean()).refine((m) => Object.keys(m).length <= 200, "too many entries"),
  }),
  "`true` disables the template for the user.",
);

export const messagesQuery = z.strictObject({
  status: z.enum(MESSAGE_STATUSES).optional(),
  method: z.enum(DISPATCH_METHODS).optional(),
  user_id: uuid.optional(),
  template_id: uuid.optional(),
  limit: z.coerce.number().int().min(1).max(100).default(50),
  offset: z.coerce.number().int().min(0).max(1_000_000).default(0),
});
