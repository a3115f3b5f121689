import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { BroadcastMessages } from "../../src/broadcasts/messages";
import { call, createUser, expectError, json, owner } from "../helpers";
import { broadcast, completed, type Progress, uniqueTitle } from "./broadcast-helpers";

// GET /notifications/broadcasts (docs/broadcasts.md, "The endpoints"): newest first, keyset-paged on (created_at, id),
// each item the progress GET /notifications/broadcasts/{id} answers plus the title; owners and user admins only.

type Item = Progress & { title: string };

async function list(query = "", token?: string): Promise<Item[]> {
  const res = await call("GET", `/notifications/broadcasts${query}`, { token: token ?? (await owner()).token });
  expect(res.status, await res.clone().text()).toBe(200);
  return (await json<{ broadcasts: Item[] }>(res)).broadcasts;
}

/** Every broadcast, page by page with `limit`, following `starting_before`. */
async function walk(limit: number): Promise<Item[]> {
  const all: Item[] = [];
  for (;;) {
    const last = all.at(-1);
    const page = await list(`?limit=${limit}${last ? `&starting_before=${last.id}` : ""}`);
    expect(page.length).toBeLessThanOrEqual(limit);
    all.push(...page);
    if (page.length < limit) return all;
  }
}

/** Stores a broadcast row (and its progress rows) directly, to fix its time and counts. */
async function stored(row: { id: string; createdAt: string; title: string; recipients: number; batches?: [number, number][]; completedAt?: string }) {
  const creator = (await owner()).id;
  await env.DB.batch([
    env.DB.prepare(
      "INSERT INTO broadcasts (id, created_by, created_at, audience, title, message, targets, email_when_unread_after_ms, recipients, completed_at) VALUES (?, ?, ?, '{\"all\":true}', ?, '', '[]', 0, ?, ?)",
    ).bind(row.id, creator, row.createdAt, row.title, row.recipients, row.completedAt ?? null),
    ...(row.batches ?? []).map(([delivered, failed], i) =>
      env.DB.prepare("INSERT INTO broadcast_batches (broadcast_id, batch, recipients, delivered, failed, updated_at) VALUES (?, ?, ?, ?, ?, ?)").bind(
        row.id,
        `b${i}`,
        delivered + failed,
        delivered,
        failed,
        row.createdAt,
      ),
    ),
  ]);
}

function newestFirst(items: Item[]): boolean {
  return items.every((item, i) => {
    const next = items[i + 1];
    return !next || item.created_at > next.created_at || (item.created_at === next.created_at && item.id > next.id);
  });
}

describe("GET /notifications/broadcasts", () => {
  it("lists broadcasts newest first, each with the progress GET /{id} answers and the title", async () => {
    const member = await createUser();
    const titles = [uniqueTitle(), uniqueTitle(), uniqueTitle()];
    const created = [];
    for (const title of titles) created.push(await broadcast({ audience: { user_ids: [member.id] }, content: { title } }));
    for (const c of created) await completed(c.id);
    const items = await list("?limit=100");
    expect(newestFirst(items)).toBe(true);
    const ours = items.filter((item) => titles.includes(item.title));
    expect(ours.map((item) => item.title)).toEqual([...titles].reverse());
    for (const item of ours) {
      const one = await call("GET", `/notifications/broadcasts/${item.id}`, { token: (await owner()).token });
      const { title, ...progress } = item;
      expect(progress).toEqual(await json(one));
      expect(item).toMatchObject({ recipients: 1, delivered: 1, failed: 0, pending: 0 });
      expect(item.completed_at).not.toBeNull();
    }
  });

  it("progress fields: delivered and failed are summed over the batches, pending is what is left", async () => {
    const id = crypto.randomUUID();
    const title = uniqueTitle();
    await stored({
      id,
      createdAt: "2001-02-03T04:05:06.007Z",
      title,
      recipients: 10,
      batches: [
        [3, 1],
        [2, 0],
      ],
    });
    const item = (await list("?limit=100")).find((b) => b.id === id);
    expect(item).toEqual({
      id,
      title,
      created_by: (await owner()).id,
      created_at: "2001-02-03T04:05:06.007Z",
      recipients: 10,
      delivered: 5,
      failed: 1,
      pending: 4,
      completed_at: null,
    });
  });

  it("pages with starting_before: every broadcast once, in order, also when several share a created_at", async () => {
    const at = "2000-01-01T00:00:00.000Z";
    const same = Array.from({ length: 5 }, () => crypto.randomUUID());
    for (const id of same) await stored({ id, createdAt: at, title: uniqueTitle(), recipients: 0, completedAt: at });
    await broadcast({ audience: { user_ids: [(await createUser()).id] } });
    const whole = await list("?limit=100");
    expect(whole.length).toBeLessThan(100);
    for (const limit of [1, 2, 3]) {
      const paged = await walk(limit);
      expect(paged.map((b) => b.id)).toEqual(whole.map((b) => b.id));
    }
    const tied = whole.filter((b) => b.created_at === at).map((b) => b.id);
    expect(tied).toEqual([...same].sort().reverse());
    // The oldest is the last: nothing comes after it.
    const oldest = whole.at(-1);
    expect(await list(`?starting_before=${oldest?.id}`)).toEqual([]);
  });

  it("limit defaults to 25", async () => {
    const base = Date.parse("1999-01-01T00:00:00.000Z");
    for (let i = 0; i < 26; i++) {
      await stored({ id: crypto.randomUUID(), createdAt: new Date(base + i).toISOString(), title: uniqueTitle(), recipients: 0 });
    }
    expect((await list()).length).toBe(25);
  });

  it("owners and user admins may list; an auditor and a member get 403; no credential 401", async () => {
    const [admin, auditor, member] = [await createUser({ roles: ["user-admin"] }), await createUser({ roles: ["auditor"] }), await createUser()];
    const created = await broadcast({ audience: { user_ids: [member.id] } });
    expect((await list("?limit=100", admin.token)).map((b) => b.id)).toContain(created.id);
    for (const user of [auditor, member]) {
      await expectError(await call("GET", "/notifications/broadcasts", { token: user.token }), 403);
    }
    await expectError(await call("GET", "/notifications/broadcasts"), 401);
  });

  it("a bad query is a 400 in the error shape naming the parameter", async () => {
    const token = (await owner()).token;
    const cases: [string, string][] = [
      ["limit=0", "limit"],
      ["limit=101", "limit"],
      ["limit=ten", "limit"],
      ["limit=2.5", "limit"],
      ["starting_before=not-a-uuid", "starting_before"],
      ["starting_before=", "starting_before"],
      ["unknown=1", "unknown"],
    ];
    for (const [query, field] of cases) {
      const body = await expectError(await call("GET", `/notifications/broadcasts?${query}`, { token }), 400);
      expect(
        body.validations?.map((v) => v.field),
        query,
      ).toContain(field);
    }
    // A well-formed id that names no broadcast (another kind of id, or none at all) is refused, not read as "from the start".
    const unknown = await expectError(await call("GET", `/notifications/broadcasts?starting_before=${crypto.randomUUID()}`, { token }), 400);
    expect(unknown.validations).toEqual([{ field: "starting_before", detail: BroadcastMessages.unknownStartingBefore }]);
  });
});
