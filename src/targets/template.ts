import type { TemplateRow } from "../db/schema";
import { TARGET_VERIFICATION_TEMPLATE_ID, TARGET_VERIFICATION_TEMPLATE_NAME } from "../notifications/templates";

/**
 * The verification message a new target receives at once (docs/targets.md, "Verification"): the 6-digit code in its
 * text. It is written by code rather than stored, so no list shows it and no preference turns it off; mandatory, so it
 * travels the urgent lane; external only, since the code must reach the target and nowhere else.
 */
export const TARGET_VERIFICATION_TEMPLATE: TemplateRow = {
  id: TARGET_VERIFICATION_TEMPLATE_ID,
  name: TARGET_VERIFICATION_TEMPLATE_NAME,
  titleTemplate: "Herald verification code {{.Labels.code}}",
  bodyTemplate: [
    "**{{.UserUsername}}** added this channel to Herald ({{base_url}}) as “{{.Labels.target_name}}”.",
    "",
    "Verification code: **{{.Labels.code}}**",
    "",
    "Enter it in Herald to receive notifications here. If you did not expect this message, ignore it: nothing more is sent here unless the code is entered.",
  ].join("\n"),
  actions: "[]",
  group: "Notification Events",
  method: "",
  kind: "system",
  enabledByDefault: true,
  mandatory: true,
  externalOnly: true,
  emailWhenUnreadAfterMs: 0,
};

/** The event type of a `webhook` target's verification body (docs/targets.md, "Verification"). */
export const VERIFICATION_EVENT = "target.verification";
