import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { and, asc, eq, inArray, sql } from "drizzle-orm";
import * as fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { database } from "../../src/db/client";
import { users } from "../../src/db/schema";
import worker from "../../src/index";
import { UserMessages } from "../../src/users/messages";
import {
  backfillSearchKeys,
  foldForSearch,
  parseUserSearch,
  pendingSearchKeys,
  searchFilters,
  searchKeys,
  type UserSearch,
  writeSearchKeys,
} from "../../src/users/search";
import { NASTY_STRINGS } from "../fixtures/arbitraries";
import { call, json, owner } from "../helpers";

// `GET /users?q=` in Coder's search syntax (src/users/search.ts): space-separated terms, `key:value` or free text,
// quoted values, comma lists; unknown keys and values are errors that name them, never silently ignored. Free text is
// matched case-insensitively for every script, through keys Herald folds and stores (docs/api.md, Searching users).

// The first owner before any row is written directly: owner() creates it only while the table is empty.
beforeAll(async () => {
  await owner();
});

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
    expect(ok("ÉLODIE Ünal")).toEqual({ ...empty, text: "élodie ünal" });
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
    // As Herald writes them: with their search keys.
    await database(env.DB)
      .insert(users)
      .values(people.map((p) => ({ ...p, ...searchKeys(p), createdAt: now, updatedAt: now })));
  });

  const find = (q: string) => findAmong(ids, q);

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

  // SQLite's lower() folds ASCII only, so the name is compared through its stored, folded key (docs/api.md, Searching
  // users): lower("Élodie") would stay "Élodie" and never meet the folded query "élodie".
  it("a name with an upper-case non-ASCII letter is found by its own spelling (SQLite lower() folds ASCII only)", async () => {
    expect(await find("Élodie")).toEqual(["elodie"]);
    expect(await find("Ünal")).toEqual(["elodie"]);
  });

  it("non-ASCII letters match in any case, in the query and in the name", async () => {
    for (const q of ["ÉLODIE", "élodie", "ünal", "ÜNAL", "élodie ünal", "ÉLODIE ÜNAL"]) expect(await find(q), q).toEqual(["elodie"]);
    for (const q of ["JOSÉ", "NÚÑEZ", "josé núñez"]) expect(await find(q), q).toEqual(["jose"]);
  });

  it("an accent typed as a combining mark matches the composed letter, and the other way round", async () => {
    expect(await find("E\u0301lodie")).toEqual(["elodie"]);
    expect(await find("Jose\u0301")).toEqual(["jose"]);
  });
});

/** Usernames of the users among `ids` that `q` finds, as the list orders them. */
async function findAmong(ids: string[], q: string): Promise<string[]> {
  const rows = await database(env.DB)
    .select({ username: users.username })
    .from(users)
    .where(and(inArray(users.id, ids), eq(users.deleted, false), ...searchFilters(ok(q))))
    .orderBy(asc(sql`lower(${users.username})`));
  return rows.map((r) => r.username);
}

/** Rows written directly, a few per INSERT: D1 binds at most 100 parameters a statement. */
async function insertRows(rows: (typeof users.$inferInsert)[]): Promise<void> {
  const db = database(env.DB);
  const statements = [];
  for (let i = 0; i < rows.length; i += 6) statements.push(db.insert(users).values(rows.slice(i, i + 6)));
  const [first, ...rest] = statements;
  if (first) await db.batch([first, ...rest]);
}

const NOW = new Date(0).toISOString();
const row = (id: string, username: string, name: string, email: string) => ({
  id,
  username,
  name,
  email,
  loginType: "password" as const,
  createdAt: NOW,
  updatedAt: NOW,
});

describe("foldForSearch: how names, e-mails and the query are compared (docs/api.md, Searching users)", () => {
  it("is SQLite's lower() for ASCII", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary-ascii", maxLength: 40 }), (s) => {
        expect(foldForSearch(s)).toBe(s.replace(/[A-Z]/g, (c) => c.toLowerCase()));
      }),
    );
  });

  it("lower-cases every script, composes accents, and reads a final sigma as σ", () => {
    expect(foldForSearch("Élodie ÜNAL Øyvind Łukasz Ívar")).toBe("élodie ünal øyvind łukasz ívar");
    expect(foldForSearch("E\u0301LODIE")).toBe("élodie");
    expect(foldForSearch("ΟΔΥΣΣΕΥΣ")).toBe("οδυσσευσ");
    expect(foldForSearch("Ὀδυσσεύς")).toBe(foldForSearch("ὈΔΥΣΣΕΎΣ"));
  });

  it("property: a folded part of a text is a part of the folded text, so a query finds what it spells", () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.string({ unit: "grapheme", minLength: 1, maxLength: 1 }), fc.constantFrom("Σ", "ς", "É", "E\u0301", "İ", "ß")), {
          maxLength: 12,
        }),
        fc.nat(),
        fc.nat(),
        (graphemes, a, b) => {
          const [from, to] = [a % (graphemes.length + 1), b % (graphemes.length + 1)].sort((x, y) => x - y);
          expect(foldForSearch(graphemes.join(""))).toContain(foldForSearch(graphemes.slice(from, to).join("")));
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe("searching ASCII is unchanged: the keys give what lower() gave", () => {
  const word = fc.stringMatching(/^[A-Za-z0-9 ._@%-]{0,12}$/);
  const ids = Array.from({ length: 24 }, (_, i) => `ascii-${i}`);
  const model: { username: string; name: string; email: string }[] = [];

  beforeAll(async () => {
    const generated = fc.sample(fc.tuple(word, word), { numRuns: ids.length, seed: 7 });
    const rows = ids.map((id, i) => row(id, `ascii-user-${i}`, generated[i]?.[0] ?? "", `${generated[i]?.[1] ?? ""}${i}@Example.COM`));
    model.push(...rows);
    // Half as Herald writes them now, half as rows from before the keys: both must answer alike.
    await insertRows([...rows.slice(0, 12).map((r) => ({ ...r, ...searchKeys(r) })), ...rows.slice(12)]);
  });

  it("property: any ASCII query finds exactly the rows whose lower-cased username, name or e-mail holds it", async () => {
    await fc.assert(
      fc.asyncProperty(fc.stringMatching(/^[A-Za-z0-9._@%-]{1,4}$/), async (q) => {
        const needle = q.toLowerCase();
        const expected = model
          .filter((r) => [r.username, r.name, r.email].some((field) => field.toLowerCase().includes(needle)))
          .map((r) => r.username)
          .sort();
        expect((await findAmong(ids, q)).sort()).toEqual(expected);
      }),
      { numRuns: 60 },
    );
  });
});

describe("the keys are written with every user (docs/api.md, Searching users)", () => {
  it("the first owner and a created user have their keys, and the list finds a non-ASCII name in any case", async () => {
    const admin = await owner();
    const created = await call("POST", "/users", {
      token: admin.token,
      body: {
        email: `zoe-${crypto.randomUUID().slice(0, 8)}@herald.test`,
        username: `zoe-${crypto.randomUUID().slice(0, 8)}`,
        name: "Zoë ÅRGER",
        login_type: "none",
      },
    });
    expect(created.status).toBe(201);
    const { id, email } = await json<{ id: string; email: string }>(created);
    const keys = await env.DB.prepare("SELECT id, search_name, search_email FROM users WHERE id IN (?, ?)").bind(admin.id, id).all();
    expect(keys.results).toContainEqual({ id, search_name: "zoë årger", search_email: email });
    expect(keys.results).toContainEqual(expect.objectContaining({ id: admin.id, search_email: "owner@herald.test" }));
    for (const q of ["årger", "ZOË", "Zoë Årger"]) {
      const page = await json<{ users: { id: string }[]; count: number }>(
        await call("GET", `/users?q=${encodeURIComponent(q)}`, { token: admin.token }),
      );
      expect(
        page.users.map((u) => u.id),
        q,
      ).toEqual([id]);
      expect(page.count, q).toBe(1);
    }
  });
});

describe("rows from before the keys: the backfill (docs/api.md, Searching users)", () => {
  const legacy = [row("legacy-1", "ingrid", "Ingrid ÅSTRÖM", "INGRID@Example.ORG"), row("legacy-2", "oscar", "Óscar Ibáñez", "oscar@example.org")];
  const ids = legacy.map((r) => r.id);

  beforeAll(async () => {
    await database(env.DB).insert(users).values(legacy);
  });

  it("before its keys a row is searched as before them; the backfill writes them, once", async () => {
    expect(await findAmong(ids, "INGRID")).toEqual(["ingrid"]);
    expect(await findAmong(ids, "example.org")).toEqual(["ingrid", "oscar"]);
    expect(await findAmong(ids, "åström")).toEqual([]);

    expect(await backfillSearchKeys(database(env.DB))).toBeGreaterThanOrEqual(2);
    expect(await findAmong(ids, "åström")).toEqual(["ingrid"]);
    expect(await findAmong(ids, "ÓSCAR")).toEqual(["oscar"]);
    const rows = await env.DB.prepare("SELECT id, search_name, search_email FROM users WHERE id IN (?, ?) ORDER BY id")
      .bind(...ids)
      .all();
    expect(rows.results).toEqual(legacy.map((r) => ({ id: r.id, search_name: foldForSearch(r.name), search_email: foldForSearch(r.email) })));

    expect(await backfillSearchKeys(database(env.DB))).toBe(0);
  });

  it("works in batches of 250, as many as it is told, and picks up where the last run stopped", async () => {
    const many = Array.from({ length: 260 }, (_, i) => row(`bulk-${String(i).padStart(3, "0")}`, `bulk-${i}`, `BULK Ä${i}`, `bulk${i}@example.org`));
    await insertRows(many);
    const db = database(env.DB);
    expect(await backfillSearchKeys(db, 1)).toBe(250);
    expect(await backfillSearchKeys(db, 1)).toBe(10);
    expect(await backfillSearchKeys(db, 1)).toBe(0);
    expect(await findAmong(["bulk-000", "bulk-259"], "BULK Ä259")).toEqual(["bulk-259"]);
  });

  it("a row whose name or e-mail changed since it was read is left alone, for the next run", async () => {
    await database(env.DB)
      .insert(users)
      .values(row("legacy-race", "race", "RENÉE New", "race@example.org"));
    const db = database(env.DB);
    expect(await writeSearchKeys(db, [{ id: "legacy-race", name: "RENÉE Old", email: "race@example.org" }])).toBe(0);
    expect(await writeSearchKeys(db, [{ id: "legacy-race", name: "RENÉE New", email: "RACE@example.org" }])).toBe(0);
    expect(await findAmong(["legacy-race"], "renée")).toEqual([]);
    expect(await writeSearchKeys(db, [{ id: "legacy-race", name: "RENÉE New", email: "race@example.org" }])).toBe(1);
    expect(await findAmong(["legacy-race"], "renée")).toEqual(["race"]);
  });

  it("the cron runs it", async () => {
    await database(env.DB)
      .insert(users)
      .values(row("legacy-cron", "cron-user", "ÆSIR", "aesir@example.org"));
    const ctx = createExecutionContext();
    await worker.scheduled(createScheduledController({ cron: "* * * * *" }), env, ctx);
    await waitOnExecutionContext(ctx);
    expect(await findAmong(["legacy-cron"], "æsir")).toEqual(["cron-user"]);
  });

  it("finds the pending rows through their own index, and the list still walks users_username_live in order", async () => {
    const db = database(env.DB);
    const plan = async (query: { toSQL(): { sql: string; params: unknown[] } }) => {
      const { sql: text, params } = query.toSQL();
      const { results } = await env.DB.prepare(`EXPLAIN QUERY PLAN ${text}`)
        .bind(...params)
        .all<{ detail: string }>();
      return results.map((r) => r.detail);
    };
    expect(await plan(pendingSearchKeys(db, ""))).toEqual(["SEARCH users USING INDEX users_search_pending (id>?)"]);
    // The list of GET /users?q= (src/users/routes.ts): a page in username order, without sorting the table.
    const list = db
      .select()
      .from(users)
      .where(and(eq(users.deleted, false), ...searchFilters(ok("Élodie status:active"))))
      .orderBy(asc(sql`lower(${users.username})`))
      .limit(50)
      .offset(0);
    expect(await plan(list)).toEqual(["SCAN users USING INDEX users_username_live"]);
  });
});
