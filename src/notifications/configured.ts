import type { Config } from "../config/config";

/**
 * Whether each external method has the server it sends to (docs/api.md, Notifications). Only yes or no: the Notifier
 * page warns with it, and nothing about the server itself (host, port, credentials) leaves the configuration.
 */
export function methodsConfigured(config: Config): { smtp: boolean; webhook: boolean } {
  return { smtp: Boolean(config.EMAIL_SMARTHOST), webhook: Boolean(config.NOTIFICATIONS_WEBHOOK_URL) };
}

/**
 * Whether a password-reset passcode can leave Herald at all: by the passcode template's own method when an owner set
 * one (`PUT /notifications/templates/{id}/method`), else by the deployment's default, which must be configured
 * (docs/api.md, "Password reset by one-time passcode"). The same for every address, so it tells nobody whether an
 * account exists.
 */
export function passcodeDeliverable(config: Config, templateMethod: "" | "smtp" | "webhook" = ""): boolean {
  return methodsConfigured(config)[templateMethod || config.NOTIFICATIONS_METHOD];
}
