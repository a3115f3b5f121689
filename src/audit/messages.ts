/** The keys `q` accepts (docs/security.md, "The audit log"), in the order the messages list them. */
export const AUDIT_SEARCH_KEYS = ["action", "resource_type", "resource_id", "username", "email", "ip", "date_from", "date_to"] as const;

/**
 * The messages of `GET /audit` (docs/security.md, "The audit log"). Written once here and imported by the code that
 * answers with them, the route's description that quotes them and the tests.
 */
export const AuditMessages = {
  invalidSearch: "Invalid audit log search query.",
  /** The search problems, each the `detail` of a `q` validation (src/audit/search.ts). Terms are quoted cut short. */
  searchNoKey: (term: string) => `"${term}" has no key: write key:value with one of ${AUDIT_SEARCH_KEYS.join(", ")}.`,
  searchUnknownKey: (key: string) => `"${key}" is not a search key: use one of ${AUDIT_SEARCH_KEYS.join(", ")}.`,
  searchTwice: (key: string) => `"${key}:" is given more than once.`,
  searchNeedsValue: (key: string) => `"${key}:" needs a value.`,
  searchTooLong: (key: string, max: number) => `The value of "${key}:" is longer than ${max} characters.`,
  searchBadDate: (key: string) => `The value of "${key}:" must be a date written YYYY-MM-DD.`,
  searchDatesReversed: "date_from is after date_to.",
} as const;
