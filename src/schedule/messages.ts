/**
 * The messages and details of the schedule routes (docs/schedule.md). Clients compare these strings, so they are
 * written once here and imported by the code that throws them and by the tests.
 */
export const ScheduleMessages = {
  forbidden: (action: string) => `You cannot ${action} this user's notification schedule.`,
  unknownZone: "Must be an IANA time-zone name the runtime knows, such as Europe/Berlin.",
  badTime: 'Must be a time "HH:MM" from "00:00" to "23:59".',
  badDay: 'Must be one of "mon", "tue", "wed", "thu", "fri", "sat", "sun".',
  noDays: "Must list from one to seven days.",
  dayTwice: "A day is listed twice.",
  tooManyRanges: "At most 7 quiet ranges.",
  badDigest: 'Must be "off", a duration from "1m" to "24h" such as "1h", or "daily@HH:MM".',
  /** The message-log reason of an e-mail held by quiet hours (docs/schedule.md, "Quiet hours"). */
  heldQuiet: "quiet hours",
  /** The message-log reason of a held e-mail whose inbox copy was read or archived before the range ended. */
  readDuringQuiet: "read in the inbox during quiet hours",
  /** The message-log reason of an e-mail copy held for the user's digest (docs/schedule.md, "Digests"). */
  heldDigest: "held for the digest",
  inDigest: (digestId: string) => `sent in the digest ${digestId}`,
  leftOutOfDigest: "read, archived or snoozed in the inbox before the digest",
  notInInbox: "not in the inbox when the digest was made: sent on its own",
  digestFailed: (digestId: string, reason: string) => `the digest ${digestId} failed: ${reason}`,
} as const;
