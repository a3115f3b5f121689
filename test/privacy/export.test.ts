import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { database } from "../../src/db/client";
import { Messages } from "../../src/http/errors";
import { EXPORT_PAGE_ROWS, INBOX_EXCLUDED, INBOX_SECTIONS } from "../../src/inbox/export";
import type { UserInbox } from "../../src/inbox/user-inbox";
import { D1_EXCLUDED, D1_SECTIONS, type D1Section } from "../../src/privacy/catalogue";
import { type Columns, exportedColumns, exportValue, isWithheld } from "../../src/privacy/columns";
import { EXPORT_FORMAT, exportDocument, exportStream } from "../../src/privacy/export";
import { PrivacyMessages } from "../../src/privacy/messages";
import { call, createUser, expectError, json, owner } from "../helpers";
import { inbox } from "../inbox/inbox-helpers";
import { type FullUser, fullUser } from "./privacy-helpers";

// docs/privacy.md, "The export": GET /users/{user}/export holds everything Herald stores about the user — every D1
// table's rows about them and every table of their inbox object, each column as stored, but for secrets and what is
// someone else's — and no secret. The tables and columns are read from the databases themselves, so a table or a
// column added without a decision in src/privacy/catalogue.ts or src/inbox/export.ts fails here.

type Row = Record<string, unknown>;
type ExportDoc = Record<string, unknown> & { inbox: Record<string, Row[]> };

const INTERNAL = (name: string) => name.startsWith("_cf_") || name.startsWith("sqlite_") || name === "__drizzle_migrations";
const db = () => database(env.DB);

async function d1Tables(): Promise<string[]> {
  const rows = await env.DB.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all<{ name: string }>();
  return rows.results.map((r) => r.name).filter((name) => !INTERNAL(name));
}

async function d1Columns(table: string): Promise<string[]> {
  const rows = await env.DB.prepare(`SELECT name FROM pragma_table_info('${table}') ORDER BY name`).all<{ name: string }>();
  return rows.results.map((r) => r.name);
}

/** The object's tables and each one's columns, read inside the object. */
function objectSchema(userId: string): Promise<Record<string, string[]>> {
  return runInDurableObject(inbox(userId), (_: UserInbox, state) => {
    const tables = state.storage.sql
      .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table'")
      .toArray()
      .map((r) => r.name)
      .filter((name) => !INTERNAL(name));
    return Object.fromEntries(
      tables.map((t) => [
        t,
        state.storage.sql
          .exec<{ name: string }>(`SELECT name FROM pragma_table_info('${t}')`)
          .toArray()
          .map((r) => r.name)
          .sort(),
      ]),
    );
  });
}

/** A stored row as the export must show it: its exported columns, converted. */
function expected(columns: Columns, row: Row): Row {
  return Object.fromEntries(exportedColumns(columns).map(({ column, field, spec }) => [field, exportValue(spec, row[column])]));
}

/** The user's rows of one section, read with the section's own parts, in its order. */
async function sectionRows(section: D1Section, userId: string): Promise<Row[]> {
  const order = sql.raw(section.order.join(", "));
  const rows: Row[] = [];
  for (const part of section.parts)
    rows.push(...(await db().all<Row>(sql`SELECT * FROM ${sql.raw(section.table)} WHERE ${part(userId)} ORDER BY ${order}`)));
  return rows;
}

const asArray = (value: unknown): Row[] => (value === null ? [] : Array.isArray(value) ? (value as Row[]) : [value as Row]);

let user: FullUser;
let text: string;
let exported: ExportDoc;

beforeAll(async () => {
  user = await fullUser();
  const res = await call("GET", `/users/${user.id}/export`, { token: user.token });
  expect(res.status, await res.clone().text()).toBe(200);
  expect(res.headers.get("Content-Disposition")).toBe(`attachment; filename="herald-export-${user.id}.json"`);
  text = await res.text();
  exported = JSON.parse(text) as ExportDoc;
}, 120_000);

describe('docs/privacy.md, "The export": every table is exported or left out with a reason', () => {
  it("every D1 table is a section of the export or a documented exclusion, and every column of it is exported or withheld", async () => {
    const sections = new Map<string, D1Section[]>();
    for (const section of D1_SECTIONS) sections.set(section.table, [...(sections.get(section.table) ?? []), section]);
    for (const table of await d1Tables()) {
      const covering = sections.get(table);
      if (!covering) {
        expect(D1_EXCLUDED[table], `${table} is neither exported nor excluded`).toBeTruthy();
        continue;
      }
      const columns = await d1Columns(table);
      for (const section of covering) expect(Object.keys(section.columns).sort(), `${section.key} (${table})`).toEqual(columns);
    }
    for (const table of [...sections.keys(), ...Object.keys(D1_EXCLUDED)]) expect(await d1Tables(), table).toContain(table);
  });

  it("every table of the inbox object is a section or a documented exclusion, and every column is exported", async () => {
    const schema = await objectSchema(user.id);
    for (const [table, columns] of Object.entries(schema)) {
      const section = INBOX_SECTIONS.find((s) => s.table === table);
      if (!section) {
        expect(INBOX_EXCLUDED[table], `${table} is neither exported nor excluded`).toBeTruthy();
        continue;
      }
      expect(Object.keys(section.columns).sort(), table).toEqual(columns);
    }
    for (const table of [...INBOX_SECTIONS.map((s) => s.table), ...Object.keys(INBOX_EXCLUDED)]) expect(Object.keys(schema), table).toContain(table);
  });
});

describe('docs/privacy.md, "The export": a user with every kind of data', () => {
  it("is one document of the documented format, about that user", () => {
    expect(exported.format).toBe(EXPORT_FORMAT);
    expect(exported.user_id).toBe(user.id);
    expect(exported.account).toMatchObject({ id: user.id, email: user.email, username: user.username, name: user.name });
  });

  it("holds each of their D1 rows, every exported column as stored; every kind of row is there", async () => {
    for (const section of D1_SECTIONS) {
      const stored = await sectionRows(section, user.id);
      const shown = asArray(exported[section.key]);
      expect(shown, section.key).toEqual(stored.map((row) => expected(section.columns, row)));
      // The fixture leaves out nothing: every section has rows, but the erasure of an account that is not deleted.
      if (section.key !== "erasure") expect(shown.length, `${section.key} has rows`).toBeGreaterThan(0);
    }
  });

  it("holds as many rows of each table as name the user, counted apart from the sections' own queries", async () => {
    for (const table of await d1Tables()) {
      if (D1_EXCLUDED[table]) continue;
      const columns = await d1Columns(table);
      // The organizations the user belongs to are found through their memberships.
      if (table === "organizations") continue;
      const owner = table === "users" ? "id" : columns.includes("user_id") ? "user_id" : columns.includes("created_by") ? "created_by" : undefined;
      expect(owner, `${table} names its user`).toBeDefined();
      const counted = await env.DB.prepare(`SELECT count(*) AS n FROM ${table} WHERE ${owner} = ?`).bind(user.id).first<{ n: number }>();
      const shown = D1_SECTIONS.filter((s) => s.table === table).flatMap((s) => asArray(exported[s.key]));
      const theirs = shown.filter((row) => (table === "users" ? row.id : (row.user_id ?? row.created_by)) === user.id);
      expect(theirs.length, table).toBe(counted?.n);
    }
  });

  it("holds every row of every table of their inbox object, with every column", async () => {
    const stored = await runInDurableObject(inbox(user.id), (_: UserInbox, state) =>
      Object.fromEntries(
        INBOX_SECTIONS.map((s) => [
          s.key,
          state.storage.sql.exec<Record<string, SqlStorageValue>>(`SELECT * FROM ${s.table} ORDER BY rowid`).toArray(),
        ]),
      ),
    );
    for (const section of INBOX_SECTIONS) {
      const rows = stored[section.key] ?? [];
      expect(exported.inbox[section.key], section.key).toEqual(rows.map((row) => expected(section.columns, row)));
      expect(rows.length, `${section.key} has rows`).toBeGreaterThan(0);
    }
    const titles = (exported.inbox.notifications ?? []).map((n) => n.title);
    for (const title of user.titles.filter((t) => !t.startsWith("Old item"))) expect(titles).toContain(title);
    // The item retention removed is gone from the items; its trace, kept for list cursors, is exported.
    expect(titles.filter((t) => String(t).startsWith("Old item"))).toEqual([]);
    expect(exported.inbox.removed).toHaveLength(1);
  });

  it("holds no secret: no password, token, code, key or capability URL the test made, and no withheld value", async () => {
    for (const secret of user.secrets) expect(text.includes(secret), `a secret of ${secret.length} characters`).toBe(false);
    for (const section of D1_SECTIONS) {
      const withheld = Object.entries(section.columns).filter(([, spec]) => isWithheld(spec) && !spec.derived);
      for (const row of await sectionRows(section, user.id)) {
        for (const [column] of withheld) {
          const value = row[column];
          if (typeof value === "string" && value.length >= 8) expect(text.includes(value), `${section.key}.${column}`).toBe(false);
        }
      }
    }
  });

  it("is the same document whoever of those allowed asks: the owner may export it too", async () => {
    const admin = await owner();
    const res = await call("GET", `/users/${user.id}/export`, { token: admin.token });
    expect(res.status).toBe(200);
    const byOwner = await json<ExportDoc>(res);
    expect(byOwner.inbox.notifications).toEqual(exported.inbox.notifications);
    expect(byOwner.account).toEqual(exported.account);
  });
});

describe('docs/privacy.md, "The export": written as it is read', () => {
  it("reads the inbox a page at a time, and the next page only once the client has taken what came before", async () => {
    const asked: number[] = [];
    // The user's inbox object as the export reaches it, with each page it is asked for written down.
    const counting = new Proxy(env.USER_INBOX, {
      get(target, property) {
        if (property === "get") {
          return (id: DurableObjectId) => {
            const stub = target.get(id);
            return new Proxy(stub, {
              get(s, name) {
                if (name === "exportPage") {
                  return (key: "notifications", after: number) => {
                    if (key === "notifications") asked.push(after);
                    return s.exportPage(key, after);
                  };
                }
                const value = Reflect.get(s, name);
                return typeof value === "function" ? value.bind(s) : value;
              },
            });
          };
        }
        const value = Reflect.get(target, property);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const stream = exportStream(exportDocument({ ...env, USER_INBOX: counting }, db(), user.id));
    const reader = stream.getReader();
    let text = "";
    // Up to the first page of notifications: the items section has begun, and nothing more has been read for it.
    while (!text.includes('"notifications":[{')) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    expect(asked).toEqual([0]);
    await reader.read();
    expect(asked.length).toBeLessThanOrEqual(2);
    await reader.cancel();
    // Read whole: each page once, in order, the last one short (the fixture's inbox holds more than one page).
    asked.length = 0;
    const whole = await new Response(exportStream(exportDocument({ ...env, USER_INBOX: counting }, db(), user.id))).text();
    const items = (JSON.parse(whole) as ExportDoc).inbox.notifications ?? [];
    expect(items).toEqual(exported.inbox.notifications);
    expect(items.length).toBeGreaterThan(EXPORT_PAGE_ROWS);
    expect(asked).toHaveLength(Math.floor(items.length / EXPORT_PAGE_ROWS) + 1);
    expect(asked[0]).toBe(0);
  });
});

describe('docs/privacy.md, "The export": who may export (the step-up it needs: test/auth/step-up.test.ts)', () => {
  it("a user-admin, an auditor or a member may not export another user's data; a member may export their own", async () => {
    const [member, userAdmin, auditor] = await Promise.all([createUser(), createUser({ roles: ["user-admin"] }), createUser({ roles: ["auditor"] })]);
    for (const caller of [userAdmin, auditor]) {
      const refused = await expectError(await call("GET", `/users/${member.id}/export`, { token: caller.token }), 403, Messages.forbidden);
      expect(refused.detail).toBe(PrivacyMessages.othersExport);
    }
    const other = await call("GET", `/users/${user.id}/export`, { token: member.token });
    expect([403, 404]).toContain(other.status);
    const own = await call("GET", "/users/me/export", { token: member.token });
    expect(own.status).toBe(200);
    expect((await json<ExportDoc>(own)).user_id).toBe(member.id);
  });

  it("each export is audited, naming the account by id", async () => {
    const row = await env.DB.prepare("SELECT user_id, diff FROM audit_logs WHERE action = 'export' AND resource_id = ? ORDER BY time LIMIT 1")
      .bind(user.id)
      .first<{ user_id: string; diff: string }>();
    expect(row).toEqual({ user_id: user.id, diff: "{}" });
  });
});
