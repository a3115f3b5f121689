import { inArray, or, type SQL, sql } from "drizzle-orm";
import { ASSIGNABLE_SITE_ROLES } from "../authz/roles";
import { users } from "../db/schema";
import { UserMessages } from "./messages";

/**
 * `GET /users?q=` in Coder's search syntax, which Coder's web client sends (its default is `status:active`):
 * space-separated terms, each `key:value` or free text; a value may be quoted (`search:"Ada Lovelace"`) and may list
 * several values with commas (`status:active,suspended`). Keys: `status`, `role`, `login_type`, and `search` (the
 * same as free text, matched case-insensitively anywhere in the username, name or e-mail). Any other key, or a value
 * that is not one of the key's values, is an error naming it, never silently ignored.
 */
export interface UserSearch {
  /** Free text, lower-cased; "" when none. */
  text: string;
  statuses: ("active" | "suspended")[];
  /** Site roles; `member` matches everyone. */
  roles: string[];
  loginTypes: ("password" | "oidc" | "github" | "none")[];
}

export type UserSearchResult = { ok: true; search: UserSearch } | { ok: false; problems: string[] };

const STATUSES = ["active", "suspended"] as const;
const ROLES = ["member", ...ASSIGNABLE_SITE_ROLES] as const;
const LOGIN_TYPES = ["password", "oidc", "github", "none"] as const;

/** Splits on spaces outside double quotes; quotes are removed. */
function terms(query: string): string[] {
  const out: string[] = [];
  let current = "";
  let quoted = false;
  for (const char of query) {
    if (char === '"') quoted = !quoted;
    else if (/\s/.test(char) && !quoted) {
      if (current) out.push(current);
      current = "";
    } else current += char;
  }
  if (current) out.push(current);
  return out;
}

function oneOf<T extends string>(key: string, value: string, allowed: readonly T[], problems: string[]): T[] {
  const values = value
    .toLowerCase()
    .split(",")
    .filter((v) => v !== "");
  if (values.length === 0) problems.push(UserMessages.searchNeedsValue(key, allowed));
  const known = values.filter((v): v is T => (allowed as readonly string[]).includes(v));
  for (const v of values) if (!known.includes(v as T)) problems.push(UserMessages.searchBadValue(v, key, allowed));
  return known;
}

export function parseUserSearch(query: string): UserSearchResult {
  const search: UserSearch = { text: "", statuses: [], roles: [], loginTypes: [] };
  const text: string[] = [];
  const problems: string[] = [];
  for (const term of terms(query)) {
    const colon = term.indexOf(":");
    if (colon <= 0) {
      text.push(term);
      continue;
    }
    const key = term.slice(0, colon).toLowerCase();
    const value = term.slice(colon + 1);
    if (key === "search") text.push(value);
    else if (key === "status") search.statuses.push(...oneOf(key, value, STATUSES, problems));
    else if (key === "role") search.roles.push(...oneOf(key, value, ROLES, problems));
    else if (key === "login_type") search.loginTypes.push(...oneOf(key, value, LOGIN_TYPES, problems));
    else problems.push(UserMessages.searchUnknownKey(key));
  }
  search.text = text.join(" ").trim().toLowerCase();
  return problems.length > 0 ? { ok: false, problems } : { ok: true, search };
}

/** The search as conditions on `users`, each term narrowing (AND); the values of one key widen (OR). */
export function searchFilters(search: UserSearch): SQL[] {
  const filters: SQL[] = [];
  if (search.text) {
    // instr() rather than LIKE: no wildcard escaping, and D1 caps LIKE patterns at 50 bytes.
    const needle = search.text;
    const text = or(
      sql`instr(lower(${users.username}), ${needle}) > 0`,
      sql`instr(lower(${users.name}), ${needle}) > 0`,
      sql`instr(lower(${users.email}), ${needle}) > 0`,
    );
    if (text) filters.push(text);
  }
  if (search.statuses.length > 0) filters.push(inArray(users.status, search.statuses));
  if (search.loginTypes.length > 0) filters.push(inArray(users.loginType, search.loginTypes));
  // Every user is a member, so `role:member` narrows nothing.
  if (search.roles.length > 0 && !search.roles.includes("member")) {
    const roles = sql.join(
      search.roles.map((role) => sql`${role}`),
      sql`, `,
    );
    filters.push(sql`EXISTS (SELECT 1 FROM json_each(${users.roles}) WHERE value IN (${roles}))`);
  }
  return filters;
}
