/**
 * The messages and details of the notification-target routes (docs/targets.md), and the message-log reasons of the
 * target channel. Clients compare these strings, so they are written once here and imported by the code that throws
 * them, the route descriptions that quote them and the tests.
 */
export const TargetMessages = {
  /** Only the user themself manages their targets, whoever else may see the user (docs/targets.md, "Who may do what"). */
  onlySelf: "Only the user themself can manage their notification targets.",
  tooMany: "Too many notification targets.",
  tooManyDetail: (cap: number) => `A user may hold at most ${cap} notification targets: remove one first.`,
  /** The 400 of a wrong verification code; the detail says how many tries are left. */
  incorrectCode: "Incorrect verification code.",
  triesLeft: (left: number) => `${left} ${left === 1 ? "try is" : "tries are"} left before the target is removed.`,
  /** The 400 of the last wrong code: the target is gone (docs/targets.md, "Verification"). */
  removedAfterTries: "Incorrect verification code: the target was removed after 5 incorrect codes.",
  removedDetail: "Add the target again to get a new code.",
  alreadyVerified: "This target is already verified.",
  codeFormat: "Must be the 6-digit code Herald sent to the target.",
} as const;

/** Why the target channel did not send a copy (docs/targets.md, "Delivery"): each is permanent. */
export const TargetReasons = {
  gone: "the target was removed",
  unverified: "the target is not verified: only a target whose code was entered receives notifications",
  unreadable: "the target's URL could not be opened (was SECRET_KEY changed?)",
  notAllowed: (reason: string) => `the target's URL is no longer allowed: it ${reason}`,
  deleted: (service: string, status: number, excerpt: string) =>
    `${service} answered ${status}${excerpt ? ` (${excerpt})` : ""}: the webhook was deleted or its channel archived; remove this target and add a new URL`,
  redirect: "remove this target and add the final URL",
} as const;
