import * as z from "zod";
import { parseDuration } from "../config/duration";
import { DISPATCH_METHODS, MESSAGE_STATUSES } from "../db/schema";
import { uuid } from "../http/ids";
import { count, timestamp } from "../http/schemas";
import { described, exemplified, named } from "../openapi/registry";
import { displayed } from "../text/display";

const CUSTOM_TITLE_MAX = 120;
const CUSTOM_MESSAGE_MAX = 2000;

/**
 * The content of a custom notification or a broadcast: at least one of title/message non-empty after trimming; lengths
 * 120 / 2000. Both are displayed text (docs/api.md, "Displayed text"): the title is a single line (it becomes an
 * e-mail Subject, docs/email.md), the message is Markdown and may have line breaks (LF) and tabs.
 */
export const notificationContent = exemplified(
  [{ title: "Deploy finished", message: "See [the log](https://ci.example.com/42)." }],
  z
    .object({
      title: displayed(z.string().max(CUSTOM_TITLE_MAX, `title must be at most ${CUSTOM_TITLE_MAX} characters`), "title", "single").default(""),
      message: displayed(z.string().max(CUSTOM_MESSAGE_MAX, `message must be at most ${CUSTOM_MESSAGE_MAX} characters`), "message", "multi").default(
        "",
      ),
    })
    .refine((c) => c.title.trim() !== "" || c.message.trim() !== "", { message: "provide a non-empty title or message" }),
);

/** `POST /notifications/custom` (N1). */
export const customNotificationBody = named("CustomNotificationRequest", z.object({ content: notificationContent }));

/** The longest read-aware wait: what one delayed queue message can carry (docs/broadcasts.md). */
const READ_AWARE_MAX_MS = 24 * 60 * 60 * 1000;

/**
 * `email_when_unread_after` (docs/broadcasts.md): a duration such as "15m", up to 24 hours; "" (or zero) sends the e-mail at
 * once. Parsed to milliseconds.
 */
export const readAwareDelay = described(
  'How long the e-mail copy waits for the inbox copy to be read, e.g. `"15m"` (at most `"24h"`); `""` sends it at once.',
  // The example sits on the string, before the transform: the document shows what a client sends.
  exemplified(["15m"], z.string().max(32)).transform((text, ctx) => {
    const ms = text.trim() === "" ? 0 : parseDuration(text);
    if (ms === undefined || ms > READ_AWARE_MAX_MS) {
      ctx.addIssue({ code: "custom", message: 'must be a duration such as "15m", at most "24h", or "" for at once' });
      return z.NEVER;
    }
    return ms;
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

/** `GET|PUT /notifications/templates/{id}/settings` (docs/broadcasts.md, "Read-aware e-mail"). */
export const templateSettingsBody = named("NotificationTemplateSettingsRequest", z.object({ email_when_unread_after: readAwareDelay }));

/** Coder's `UpdateNotificationTemplateMethod`: the external method of one template, `""` for the deployment's default. */
export const templateMethodBody = named(
  "UpdateNotificationTemplateMethod",
  z.object({
    method: described(
      'How the template\'s messages leave Herald besides the inbox: `"smtp"`, `"webhook"`, or `""` for the deployment\'s `NOTIFICATIONS_METHOD`.',
      z.enum(["", "smtp", "webhook"]),
    ),
  }),
);

export const TemplateSettings = named(
  "NotificationTemplateSettings",
  z.strictObject({
    id: z.uuid(),
    email_when_unread_after: described('The wait, e.g. `"15m"`; `""` when the e-mail goes out at once.', z.string()),
  }),
);

export const templateIdParam = z.strictObject({ id: uuid });

export const NotificationMethodsResponse = named(
  "NotificationMethodsResponse",
  z.strictObject({ available: z.array(z.string()), default: z.enum(["smtp", "webhook"]) }),
);

/**
 * `GET /notifications/dispatch-methods/configured` (docs/api.md, Notifications): whether each external method has what
 * it needs to send, and nothing more — no host, port, address or credential (docs/security.md).
 */
export const NotificationMethodsConfigured = named(
  "NotificationMethodsConfigured",
  z.strictObject({
    smtp: described("Whether EMAIL_SMARTHOST is set. Without it every e-mail copy fails at once.", z.boolean()),
    webhook: described("Whether NOTIFICATIONS_WEBHOOK_URL is set. Without it every webhook copy fails.", z.boolean()),
  }),
  "Whether each dispatch method is configured; for owners and auditors, who may read the deployment's configuration.",
);

export const NotificationTemplate = named(
  "NotificationTemplate",
  z.strictObject({
    id: uuid,
    name: z.string(),
    title_template: z.string(),
    body_template: z.string(),
    actions: described("A JSON array of `{label, url}` templates, as a string.", z.string()),
    group: z.string(),
    method: described('"" when the template uses the deployment default.', z.enum(["", "smtp", "webhook"])),
    kind: z.enum(["system", "custom"]),
    enabled_by_default: z.boolean(),
  }),
);

export const NotificationPreference = named(
  "NotificationPreference",
  z.strictObject({ id: described("A template id.", uuid), disabled: z.boolean(), updated_at: timestamp }),
);

const NotificationMessage = named(
  "NotificationMessage",
  z.strictObject({
    id: uuid,
    notification_id: uuid,
    template_id: uuid,
    user_id: uuid,
    method: z.enum(DISPATCH_METHODS),
    destination: described(
      "The push subscription (`push`) or the user's own target (`target`) this copy went to; null for the other methods.",
      uuid.nullable(),
    ),
    status: z.enum(MESSAGE_STATUSES),
    status_reason: z.string(),
    attempts: count,
    created_by: z.string(),
    created_at: timestamp,
    updated_at: timestamp,
    sent_at: timestamp.nullable(),
    next_retry_after: timestamp.nullable(),
    targets: z.array(uuid),
  }),
);

export const ListNotificationMessagesResponse = named(
  "ListNotificationMessagesResponse",
  z.strictObject({ messages: z.array(NotificationMessage), count }),
);
