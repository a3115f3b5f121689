import { env } from "cloudflare:workers";
import { and, asc, eq, inArray } from "drizzle-orm";
import * as fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { database } from "../../src/db/client";
import { users } from "../../src/db/schema";
import { UserMessages } from "../../src/users/messages";
import { parseUserSearch, searchFilters, type UserSearch } from "../../src/users/search";
import { NASTY_STRINGS } from "../fixtures/arbitraries";

// `GET /users?q=` in Coder's search syntax (src/users/search.ts): space-separated terms, `key:value` or free text,
// quoted values, comma lists; unknown keys and values are errors that name them, never silently ignored.

const ok = (q: string): UserSearch => {
  const result = parseUserSearch(q);
  if (!result.ok) throw new Error(`expected ${JSON.stringify(q)} to parse, got ${JSON.stringify(result.problems)}`);
  return result.search;
};
const problems = (q: string): string[] => {
  const result = parseUserSearch(q);
  if (result.ok) throw new Error(`expected ${JSON.stringify(q)} to be refused, got ${JSON.stringify(result.search)}`);
  return result.problems;
};
const empty: UserSearch = { text: "", statuses: [], roles: [], loginTypes: [] };

describe("parseUserSearch: free text", () => {
  it("an empty or blank query searches for nothing in particular", () => {
    for (const q of ["", " ", "\t\n", "   "]) expect(ok(q)).toEqual(empty);
  });

  it("free text is lower-cased, and its words are joined by one space", () => {
    expect(ok("Ada")).toEqual({ ...empty, text: "ada" });
    expect(ok("  Ada    Lovelace  ")).toEqual({ ...empty, text: "ada lovelace" });
    expect(ok("ada\tlovelace\nx")).toEqual({ ...empty, text: "ada lovelace x" });
  });

  it("`search:` is the same as free text, and both add up", () => {
    expect(ok("search:Ada")).toEqual({ ...empty, text: "ada" });
    expect(ok("Ada search:Lovelace")).toEqual({ ...empty, text: "ada lovelace" });
    expect(ok("SEARCH:x")).toEqual({ ...empty, text: "x" });
  });

  it("a quoted value keeps its spaces; the quotes go", () => {
    expect(ok('search:"Ada  Lovelace"')).toEqual({ ...empty, text: "ada  lovelace" });
    expect(ok('"ada lovelace" status:active')).toEqual({ ...empty, text: "ada lovelace", statuses: ["active"] });
    expect(ok('a"b c"d')).toEqual({ ...empty, text: "ab cd" });
  });

  it("an unterminated quote runs to the end of the query", () => {
    expect(ok('search:"Ada Lovelace')).toEqual({ ...empty, text: "ada lovelace" });
    expect(ok('"status:active')).toEqual({ ...empty, statuses: ["active"] });
  });

  it("a colon in a search value is kept; a term starting with a colon is free text", () => {
    expect(ok("search:a:b")).toEqual({ ...empty, text: "a:b" });
    expect(ok(":foo")).toEqual({ ...empty, text: ":foo" });
    expect(ok('search:"10:30"')).toEqual({ ...empty, text: "10:30" });
  });

  it("SQL and LIKE metacharacters are plain text", () => {
    for (const q of ["%", "_", "\\", "' OR '1'='1' --", "%' OR 1=1 --"]) expect(ok(q).text).toBe(q.toLowerCase().replace(/\s+/g, " "));
  });

  it("`search:` without a value is no text, not an error", () => {
    expect(ok("search:")).toEqual(empty);
    expect(ok('search:""')).toEqual(empty);
  });
});

describe("parseUserSearch: filters", () => {
  it("status, role and login_type, each with one or more comma-separated values", () => {
    expect(ok("status:active")).toEqual({ ...empty, statuses: ["active"] });
    expect(ok("status:active,suspended")).toEqual({ ...empty, statuses: ["active", "suspended"] });
    expect(ok("role:owner,auditor")).toEqual({ ...empty, roles: ["owner", "auditor"] });
    expect(ok("role:member")).toEqual({ ...empty, roles: ["member"] });
    expect(ok("role:user-admin")).toEqual({ ...empty, roles: ["user-admin"] });
    expect(ok("login_type:password,oidc,github,none")).toEqual({ ...empty, loginTypes: ["password", "oidc", "github", "none"] });
  });

  it("keys and values are case-insensitive; values come back lower-case", () => {
    expect(ok("STATUS:Active Role:OWNER Login_Type:GitHub")).toEqual({ ...empty, statuses: ["active"], roles: ["owner"], loginTypes: ["github"] });
  });

  it("empty list items are skipped", () => {
    expect(ok("status:active,,suspended,")).toEqual({ ...empty, statuses: ["active", "suspended"] });
  });

  it("a quoted filter value is read without its quotes", () => {
    expect(ok('status:"suspended"')).toEqual({ ...empty, statuses: ["suspended"] });
  });

  it("Coder's web client default (`status:active`) plus text", () => {
    expect(ok("status:active ada")).toEqual({ ...empty, text: "ada", statuses: ["active"] });
  });

  it("terms combine; repeating a key adds its values", () => {
    expect(ok("status:active status:suspended role:auditor x")).toEqual({
      text: "x",
      statuses: ["active", "suspended"],
      roles: ["auditor"],
      loginTypes: [],
    });
  });
});

describe("parseUserSearch: errors name what is wrong", () => {
  // The values each key takes, as the problems list them.
  const STATUSES = ["active", "suspended"];
  const ROLES = ["member", "owner", "user-admin", "auditor"];

  it("an unknown key", () => {
    expect(problems("name:ada")).toEqual([UserMessages.searchUnknownKey("name")]);
  });

  it("a key with no value lists the values it takes", () => {
    expect(problems("status:")).toEqual([UserMessages.searchNeedsValue("status", STATUSES)]);
    expect(problems("role:,")).toEqual([UserMessages.searchNeedsValue("role", ROLES)]);
  });

  it("every unknown value is named, and known values next to it do not save the query", () => {
    expect(problems("role:superuser,owner,root")).toEqual([
      UserMessages.searchBadValue("superuser", "role", ROLES),
      UserMessages.searchBadValue("root", "role", ROLES),
    ]);
    expect(problems("status:deleted")).toEqual([UserMessages.searchBadValue("deleted", "status", STATUSES)]);
    expect(problems("login_type:saml")).toEqual([UserMessages.searchBadValue("saml", "login_type", ["password", "oidc", "github", "none"])]);
  });

  it("all problems of a query are reported at once", () => {
    expect(problems("foo:1 status:x role:y")).toHaveLength(3);
  });

  it("a quoted value with a space is one value, and not a valid one", () => {
    expect(problems('status:"active suspended"')).toEqual([UserMessages.searchBadValue("active suspended", "status", STATUSES)]);
  });

  it("organization roles are not site roles", () => {
    expect(problems("role:organization-admin")).toHaveLength(1);
  });

  it("prototype names are neither keys nor values", () => {
    for (const q of [
      "__proto__:x",
      "constructor:x",
      "toString:x",
      "status:__proto__",
      "role:constructor",
      "login_type:toString",
      "role:hasOwnProperty",
    ]) {
      expect(problems(q), q).toHaveLength(1);
    }
  });

  it("text with a colon that is not a key is refused, not silently searched (so `10:30` must be quoted)", () => {
    expect(problems("10:30")).toEqual([UserMessages.searchUnknownKey("10")]);
    expect(problems("https://example.com")).toHaveLength(1);
  });
});

describe("parseUserSearch: properties", () => {
  const query = fc.oneof(
    fc.string({ unit: "binary", maxLength: 60 }),
    fc.constantFrom(...NASTY_STRINGS),
    fc
      .array(
        fc.oneof(
          fc.constantFrom("status:", "role:", "login_type:", "search:", "STATUS:", '"', ",", " ", "active", "owner", "member", "oidc", "x:", ":"),
          fc.string({ maxLength: 6 }),
        ),
        { maxLength: 10 },
      )
      .map((p) => p.join("")),
  );

  it("never throws; a parsed search holds only known, lower-case values and trimmed, lower-case text", () => {
    fc.assert(
      fc.property(query, (q) => {
        const result = parseUserSearch(q);
        if (!result.ok) {
          expect(result.problems.length).toBeGreaterThan(0);
          for (const p of result.problems) expect(typeof p).toBe("string");
          return;
        }
        const { text, statuses, roles, loginTypes } = result.search;
        expect(text).toBe(text.trim());
        expect(text).toBe(text.toLowerCase());
        for (const s of statuses) expect(["active", "suspended"]).toContain(s);
        for (const r of roles) expect(["member", "owner", "user-admin", "auditor"]).toContain(r);
        for (const l of loginTypes) expect(["password", "oidc", "github", "none"]).toContain(l);
      }),
      { numRuns: 1000 },
    );
  });

  it("any words without colons or quotes are free text", () => {
    fc.assert(
      fc.property(fc.array(fc.stringMatching(/^[A-Za-z0-9@._%-]{1,10}$/), { minLength: 1, maxLength: 6 }), (words) => {
        expect(ok(words.join(" "))).toEqual({ ...empty, text: words.join(" ").toLowerCase() });
      }),
    );
  });
});

describe("searchFilters against D1", () => {
  const now = new Date(0).toISOString();
  const people = [
    {
      id: "s-1",
      username: "ada",
      name: "Ada Lovelace",
      email: "ada@analytical.example",
      loginType: "password" as const,
      status: "active" as const,
      roles: ["owner"],
    },
    {
      id: "s-2",
      username: "grace",
      name: "Grace Hopper",
      email: "grace@navy.example",
      loginType: "oidc" as const,
      status: "suspended" as const,
      roles: ["auditor"],
    },
    {
      id: "s-3",
      username: "alan",
      name: "Alan 100% Turing",
      email: "alan_t@bletchley.example",
      loginType: "github" as const,
      status: "active" as const,
      roles: [],
    },
    {
      id: "s-4",
      username: "elodie",
      name: "Élodie Ünal",
      email: "elodie@example.org",
      loginType: "password" as const,
      status: "active" as const,
      roles: ["user-admin", "auditor"],
    },
    {
      id: "s-5",
      username: "jose",
      name: "José Núñez",
      email: "jose@example.org",
      loginType: "none" as const,
      status: "suspended" as const,
      roles: [],
    },
  ];
  const ids = people.map((p) => p.id);

  beforeAll(async () => {
    await database(env.DB)
      .insert(users)
      .values(people.map((p) => ({ ...p, createdAt: now, updatedAt: now })));
  });

  const find = async (q: string): Promise<string[]> => {
    const rows = await database(env.DB)
      .select({ username: users.username })
      .from(users)
      .where(and(inArray(users.id, ids), eq(users.deleted, false), ...searchFilters(ok(q))))
      .orderBy(asc(users.username));
    return rows.map((r) => r.username);
  };

  it("free text matches anywhere in username, name or e-mail, case-insensitively", async () => {
    expect(await find("ADA")).toEqual(["ada"]);
    expect(await find("hopper")).toEqual(["grace"]);
    expect(await find("bletchley")).toEqual(["alan"]);
    expect(await find("a")).toEqual(["ada", "alan", "elodie", "grace", "jose"]);
    expect(await find("nobody-has-this")).toEqual([]);
  });

  it("LIKE wildcards in the text are literal", async () => {
    expect(await find("%")).toEqual(["alan"]);
    expect(await find("_t@")).toEqual(["alan"]);
    expect(await find("a%e")).toEqual([]);
  });

  it("status, login_type and role filters narrow; values of one key widen", async () => {
    expect(await find("status:suspended")).toEqual(["grace", "jose"]);
    expect(await find("status:active,suspended")).toEqual(["ada", "alan", "elodie", "grace", "jose"]);
    expect(await find("login_type:password")).toEqual(["ada", "elodie"]);
    expect(await find("login_type:github,oidc")).toEqual(["alan", "grace"]);
    expect(await find("role:auditor")).toEqual(["elodie", "grace"]);
    expect(await find("role:owner,user-admin")).toEqual(["ada", "elodie"]);
    expect(await find("role:auditor status:active")).toEqual(["elodie"]);
  });

  it("`role:member` matches everyone, also next to another role", async () => {
    expect(await find("role:member")).toEqual(["ada", "alan", "elodie", "grace", "jose"]);
    expect(await find("role:member,owner")).toEqual(["ada", "alan", "elodie", "grace", "jose"]);
  });

  it("non-ASCII letters match (lower-case ones, in any case of the ASCII letters around them)", async () => {
    expect(await find("NÚÑEZ".toLowerCase())).toEqual(["jose"]);
    expect(await find("José")).toEqual(["jose"]);
    expect(await find("lodie")).toEqual(["elodie"]);
  });

  // BUG: parseUserSearch lower-cases the text with JavaScript's full Unicode toLowerCase, but the SQL side uses
  // SQLite's lower(), which folds ASCII only. "Élodie" stays "Élodie" in lower(name), the needle is "élodie": no
  // match — not even when the user types the name exactly as stored. Every name with an upper-case non-ASCII letter
  // (Élodie, Ünal, Øyvind, Łukasz, Ívar…) is unfindable by that part of it.
  it.fails("a name with an upper-case non-ASCII letter is found by its own spelling (SQLite lower() folds ASCII only)", async () => {
    expect(await find("Élodie")).toEqual(["elodie"]);
    expect(await find("Ünal")).toEqual(["elodie"]);
  });
});
