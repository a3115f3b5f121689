import { and, asc, gt, inArray, isNull, or, type SQL, sql } from "drizzle-orm";
import { ASSIGNABLE_SITE_ROLES } from "../authz/roles";
import type { Database } from "../db/client";
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
  /** Free text, folded by {@link foldForSearch}; "" when none. */
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
  search.text = foldForSearch(text.join(" ")).trim();
  return problems.length > 0 ? { ok: false, problems } : { ok: true, search };
}

/**
 * Text as user search compares it, the same for the query and for the stored `search_name` and `search_email`:
 * lower-cased by Unicode's rules (SQLite's lower() folds ASCII only); composed (NFC), so an é typed as an e and a
 * combining accent matches a stored é; and with the final sigma read as σ, the one letter whose lower case depends on
 * where it stands, so a part of a name folds as it does inside the whole. For ASCII it is SQLite's lower().
 */
export function foldForSearch(text: string): string {
  return text.toLowerCase().normalize("NFC").replace(/ς/g, "σ");
}

/** The stored search keys of a name and an e-mail: every write of either writes these with it. */
export function searchKeys(user: { name: string; email: string }): { searchName: string; searchEmail: string } {
  return { searchName: foldForSearch(user.name), searchEmail: foldForSearch(user.email) };
}

/** The search as conditions on `users`, each term narrowing (AND); the values of one key widen (OR). */
export function searchFilters(search: UserSearch): SQL[] {
  const filters: SQL[] = [];
  if (search.text) {
    // instr() rather than LIKE: no wildcard escaping, and D1 caps LIKE patterns at 50 bytes. Usernames are ASCII
    // (Coder's rule, src/users/schemas.ts), so lower() folds them whole. A row the backfill has not reached yet has
    // no keys and is compared as before them: the same for ASCII; a non-ASCII capital matches once it has its keys.
    const needle = search.text;
    const text = or(
      sql`instr(lower(${users.username}), ${needle}) > 0`,
      sql`instr(coalesce(${users.searchName}, lower(${users.name})), ${needle}) > 0`,
      sql`instr(coalesce(${users.searchEmail}, lower(${users.email})), ${needle}) > 0`,
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

/** Rows per backfill statement: their names and e-mails travel as one JSON parameter, well under D1's 2 MB. */
const BACKFILL_BATCH = 250;

/** Rows without search keys after `after`, in id order: what the partial index `users_search_pending` holds. */
export function pendingSearchKeys(db: Database, after: string) {
  return db
    .select({ id: users.id, name: users.name, email: users.email })
    .from(users)
    .where(and(or(isNull(users.searchName), isNull(users.searchEmail)), gt(users.id, after)))
    .orderBy(asc(users.id))
    .limit(BACKFILL_BATCH);
}

/**
 * Writes the keys of these rows in one statement, each only if the row's name and e-mail are still the ones given, so
 * a write that raced the reader keeps its own keys. Answers how many rows were written.
 */
export async function writeSearchKeys(db: Database, rows: { id: string; name: string; email: string }[]): Promise<number> {
  const keyed = JSON.stringify(rows.map((row) => ({ ...row, ...searchKeys(row) })));
  const result = await db.run(sql`
    UPDATE ${users}
    SET search_name = json_extract(r.value, '$.searchName'), search_email = json_extract(r.value, '$.searchEmail')
    FROM json_each(${keyed}) AS r
    WHERE ${users.id} = json_extract(r.value, '$.id')
      AND ${users.name} = json_extract(r.value, '$.name')
      AND ${users.email} = json_extract(r.value, '$.email')`);
  return result.meta.changes;
}

/**
 * Gives the rows that have no search keys (those from before the keys existed) theirs: a SQL migration cannot fold
 * non-ASCII case, so the application does, up to `batches` batches a run (the cron runs it every minute; docs/api.md,
 * Searching users). The pending rows are found in id order through their own partial index, so once all have keys the
 * check reads nothing. A row whose name or e-mail changed after it was read is skipped (`writeSearchKeys`) and taken
 * up again on the next run; it never holds up the rows after it. Answers how many rows were given keys.
 */
export async function backfillSearchKeys(db: Database, batches = 8): Promise<number> {
  let written = 0;
  let after = "";
  for (let i = 0; i < batches; i++) {
    const pending = await pendingSearchKeys(db, after);
    const last = pending.at(-1);
    if (!last) break;
    written += await writeSearchKeys(db, pending);
    if (pending.length < BACKFILL_BATCH) break;
    after = last.id;
  }
  return written;
}
