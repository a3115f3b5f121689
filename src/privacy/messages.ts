/**
 * The messages of the export (docs/privacy.md, "The export"). Written once here and imported by the code that answers
 * with them, the route's description that quotes them and the tests.
 */
export const PrivacyMessages = {
  /** Another user's export holds their audit entries too: only who may read both reads it (an owner). */
  othersExport: "Only an owner may export another user's data.",
} as const;
