/** Stable ids of the catalogue (docs/api.md, Notification delivery), for producers that send a specific template. */
export const TEMPLATE_IDS = {
  test: "c425f63e-716a-4bf4-ae24-78348f706c3f",
  custom: "39b1e189-c857-4b0c-877a-511144c18516",
  broadcast: "e9b4efe4-cf44-4038-8d36-187f0011cb5f",
  oneTimePasscode: "62f86a30-2330-4b61-a26d-311ff3b608cf",
  userCreated: "4e19c0ac-94e1-4532-9515-d1801aa283b2",
  userDeleted: "f44d9314-ad03-4bc8-95d0-5cad491da6b6",
  userSuspended: "b02ddd82-4733-4d02-a2d7-c36f3598997d",
  userActivated: "9f5af851-8408-4e73-a7a1-c6502ba46689",
  yourAccountSuspended: "6a2f0609-9b69-4d36-a989-9f5925b6cbff",
  yourAccountActivated: "1a6a6bea-ee0a-43e2-9e7c-eabdb53730e4",
  passwordChanged: "3c5f6a1e-8b2d-4f7a-9e0c-1d2b3a4c5e6f",
  loginMethodChanged: "7e9d1b3a-5c2f-4e8d-a6b0-9f1e2d3c4b5a",
  newSignIn: "ec4cc453-1ecf-435a-aca8-ee07b61086fe",
  factorAdded: "702cdb7d-f645-4ffb-b80e-80ee935cfcec",
  factorRemoved: "d365c7e7-92a6-467f-9bc4-e80f1a071a0f",
  recoveryCodesRegenerated: "77538dde-1d71-4c6c-9625-572cbda0e24b",
  recoveryCodesLow: "301ab727-1bf2-42b5-bb6c-ead0c19be4ae",
  apiTokenCreated: "bb7dfcb1-91a1-4df2-8ade-264739e7bcf1",
  sessionsEnded: "17044c55-0743-41f6-8d72-7a30e1da5ec5",
  siteRolesChanged: "9731e3af-8f93-4af1-ae30-ad5366160076",
  compromiseReported: "b569231e-7a16-4deb-8ea5-f822e0cb2dd7",
  channelAdded: "285b4739-a14f-4d28-918d-d3abda6ad6e0",
} as const;

/**
 * The templates whose `mandatory` column is set: the passcode and every security notice (docs/security.md,
 * "Security notices"). No preference turns them off, and the dashboard shows them locked.
 */
export const MANDATORY_TEMPLATE_IDS: readonly string[] = [
  TEMPLATE_IDS.oneTimePasscode,
  TEMPLATE_IDS.passwordChanged,
  TEMPLATE_IDS.loginMethodChanged,
  TEMPLATE_IDS.newSignIn,
  TEMPLATE_IDS.factorAdded,
  TEMPLATE_IDS.factorRemoved,
  TEMPLATE_IDS.recoveryCodesRegenerated,
  TEMPLATE_IDS.recoveryCodesLow,
  TEMPLATE_IDS.apiTokenCreated,
  TEMPLATE_IDS.sessionsEnded,
  TEMPLATE_IDS.siteRolesChanged,
  TEMPLATE_IDS.compromiseReported,
  TEMPLATE_IDS.channelAdded,
];

/**
 * The digest e-mail's template id in the message log (docs/schedule.md, "Digests"). The digest is written by Herald's
 * code (src/schedule/digest.ts), not from a stored template, so no template row has this id and no preference can
 * turn it off: a user who does not want digests turns them off in the schedule.
 */
export const DIGEST_TEMPLATE_ID = "5d0f7a8e-3c1b-4f2a-9e6d-8b7c6a5f4e3d";
export const DIGEST_TEMPLATE_NAME = "Notification digest";

/**
 * The verification message of a user's own target (docs/targets.md, "Verification"). Like the digest it is written
 * by Herald's code (src/targets/verification.ts), never stored, never in a list, and no preference turns it off.
 */
export const TARGET_VERIFICATION_TEMPLATE_ID = "334f5861-3a98-4011-9904-1cddebad1703";
export const TARGET_VERIFICATION_TEMPLATE_NAME = "Target verification";
