/**
 * The messages of "This wasn't me". Clients compare these strings, so they are written
 * once here and imported by the code that throws them, the route descriptions that quote them and the tests;
 * docs/security.md ("This wasn't me") describes the rules behind them.
 */
export const SecurityMessages = {
  /** The one 400 for every link that does not work: forged, expired, already used, or for an account that is gone. */
  badNotMeLink: "This link is not valid: it may have been used already or have expired.",
  badNotMeLinkDetail: "Each link works once, for 7 days. A later notice carries a new one.",
} as const;
