/**
 * The messages of the broadcast routes (docs/broadcasts.md). Written once here and imported by the code that answers
 * with them, the route descriptions that quote them and the tests.
 */
export const BroadcastMessages = {
  unknownOrganization: "no organization has this id",
  unknownUser: "no user has this id",
  unknownStartingBefore: "no broadcast has this id",
} as const;
