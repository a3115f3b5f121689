import * as z from "zod";
import { MESSAGE_STATUSES, TARGET_KINDS } from "../db/schema";
import { uuid } from "../http/ids";
import { count, timestamp } from "../http/schemas";
import { described, exemplified, named } from "../openapi/registry";
import { displayed } from "../text/display";
import { userPath } from "../users/schemas";
import { TargetMessages } from "./messages";

/**
 * The notification-target routes' request and response schemas (docs/api.md, "Notification targets";
 * docs/targets.md). The URL is only bounded here: whether Herald may send to it is decided by the outbound allow-list
 * (src/outbound/allow-list.ts), whose refusal is a validation on `url` like any other.
 */

/** At most this many targets per user (docs/targets.md). */
export const TARGETS_MAX_PER_USER = 10;

/** Long enough for a Teams Workflows URL with its signature query, short enough to bound what is sealed and stored. */
const URL_MAX = 2048;

const kind = described(
  "`webhook` (any public https URL, signed with the target's own secret), `slack` (a Slack incoming webhook), `teams` (a Microsoft Teams Workflows webhook) or `discord` (a Discord webhook).",
  z.enum(TARGET_KINDS),
);

export const createTargetBody = named(
  "CreateNotificationTargetRequest",
  z.object({
    kind,
    url: exemplified(
      ["https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"],
      described(
        'Where Herald posts. Checked against the kind\'s services (docs/targets.md, "Outbound safety"); stored sealed, never shown again (only its origin).',
        z.string().min(1).max(URL_MAX),
      ),
    ),
    name: described("Shown in the user's list of targets, such as “Team channel”.", displayed(z.string().min(1).max(64), "name", "single")),
  }),
);

export const verifyTargetBody = named(
  "VerifyNotificationTargetRequest",
  z.object({
    code: exemplified(
      ["123456"],
      described("The 6-digit code of the verification message Herald sent to the target.", z.string().regex(/^[0-9]{6}$/, TargetMessages.codeFormat)),
    ),
  }),
);

const CodeDelivery = named(
  "TargetCodeDelivery",
  z.strictObject({
    status: described(
      'The verification message\'s state in the message log (docs/api.md, "Message states, retries, webhooks and SMTP").',
      z.enum(MESSAGE_STATUSES),
    ),
    status_reason: described("Why it failed or waits for a retry (what the target answered); empty otherwise.", z.string()),
    attempts: count,
    next_retry_after: described("When the next try is due, for a `temporary_failure`.", timestamp.nullable()),
  }),
  "How the verification message is doing: a target that was briefly unreachable is retried like every notification.",
);

const targetFields = {
  id: uuid,
  kind: z.enum(TARGET_KINDS),
  name: z.string(),
  url_origin: described(
    "The origin of the target's URL (`https://hooks.slack.com`): the rest of the URL is a credential and is never shown.",
    z.string(),
  ),
  verified: described("Whether the code sent to the target was entered; only verified targets receive notifications.", z.boolean()),
  created_at: timestamp,
  code_delivery: described("While the target is unverified: how its verification message is doing; `null` once verified.", CodeDelivery.nullable()),
};

export const NotificationTarget = named("NotificationTarget", z.strictObject(targetFields));

export const CreatedNotificationTarget = named(
  "CreatedNotificationTarget",
  z.strictObject({
    ...targetFields,
    secret: described(
      "`webhook` only, shown this once: the Standard Webhooks signing secret (`whsec_` and base64 of 32 random bytes) of the target's messages.",
      z.string(),
    ).optional(),
  }),
);

/** `{user}` and a target `{id}`, for the document. */
export const userTargetPath = userPath.extend({ id: described("The target's id (a UUID).", z.string()) });
