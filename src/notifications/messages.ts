/**
 * The messages and details of the notification routes (sending, templates, preferences). Clients compare these
 * strings, so they are written once here and imported by the code that throws them, the route descriptions that
 * quote them and the tests; docs/api.md (Conventions) describes the error shape they go in. (Not to be confused with
 * `notificationMessages`, the table of the delivery log.)
 */
export const NotificationsMessages = {
  /** The 400 message of `POST /notifications/custom`'s validator, in place of `Validation failed.` (Coder's wording). */
  invalidCustomBody: "Invalid request body",
  /**
   * A system user sending a custom notification gets the interface's own wording, `Forbidden` without the full stop
   * every other 403 has: clients written against the interface compare it (docs/api.md, Notifications).
   */
  systemUserForbidden: "Forbidden",
  systemUserCustom: "System users cannot send custom notifications.",
  templatesFailed: (kind: string) => `Failed to retrieve ${kind} notification templates.`,
  ownerSendsTest: "Only an owner can send test notifications.",
  preferencesForbidden: (action: string) => `You cannot ${action} this user's notification preferences.`,
  templateGivenTwice: "This template id is given twice, with different values.",
  unknownTemplate: "No notification template has this id.",
  mandatoryTemplate: (name: string) => `"${name}" is mandatory and cannot be disabled.`,
  invalidTemplateMethod: "Invalid request to update notification template method",
  templateMethodUpdated: "Successfully updated notification template method.",
  readAwareSystemOnly: "Read-aware e-mail is set per system template; a broadcast sets its own.",
  readAwareNeedsInbox: (name: string) => `"${name}" is never delivered to the inbox, so its e-mail cannot wait for the inbox copy to be read.`,
} as const;
