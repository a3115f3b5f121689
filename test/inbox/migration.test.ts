/**
 * Inboxes from before a migration that backfills, upgraded as a deployed object would be: the object is put back into
 * its earlier shape (the later tables, columns and counters dropped, the later journal rows removed), then evicted,
 * so its constructor migrates it when it next starts.
 *
 * - Before item states and the sequence (docs/inbox.md, "Exact counts": the backfill in
 *   drizzle/inbox/0001_states_and_events.sql): every notification is kept, and the counters match the rows.
 * - Before the filter indexes (docs/inbox.md, "Indexes": the backfill in drizzle/inbox/0003_filter_indexes.sql): every
 *   notification's targets are in inbox_targets, so the targets filter answers as before, in the list and in bulk.
 */
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createUser, json } from "../helpers";
import { bulk, deliver, inbox, list, TEMPLATE_A, TEMPLATE_B } from "./inbox-helpers";

/** The schema as 0000_inbox.sql left it, with the rows and the unread counter it kept (later migrations undone too). */
const BACK_TO_0000 = [
  "DROP TABLE digest_entries",
  "DROP TABLE digest_windows",
  "DROP INDEX inbox_removable",
  "DROP TABLE inbox_removed",
  "DROP TABLE inbox_retention",
  "DROP TABLE inbox_targets",
  "DROP INDEX inbox_template",
  "DROP TABLE email_decisions",
  "DROP INDEX inbox_visible",
  "DROP INDEX inbox_snoozed",
  "ALTER TABLE inbox_notifications DROP COLUMN archived_at",
  "ALTER TABLE inbox_notifications DROP COLUMN snoozed_until",
  "DROP TABLE inbox_events",
  "DROP TABLE inbox_template_counts",
  "DELETE FROM inbox_counters WHERE name <> 'unread'",
  "DELETE FROM __drizzle_migrations WHERE created_at > (SELECT min(created_at) FROM __drizzle_migrations)",
];

describe("an inbox from before item states", () => {
  it("keeps every notification and is backfilled: total and per-template counts from its rows, seq 0", async () => {
    const user = await createUser();
    const a1 = await deliver(user.id, { templateId: TEMPLATE_A });
    await deliver(user.id, { templateId: TEMPLATE_A });
    await deliver(user.id, { templateId: TEMPLATE_B });
    const stub = inbox(user.id);
    await stub.setReadStatus(a1.id, true);
    const before = (await list(user.token)).notifications;

    await runInDurableObject(stub, (_instance, state) => {
      for (const statement of BACK_TO_0000) state.storage.sql.exec(statement);
      const columns = state.storage.sql.exec("SELECT name FROM pragma_table_info('inbox_notifications')").toArray();
      expect(columns.map((c) => c.name)).not.toContain("archived_at");
    });
    await evictDurableObject(stub);

    expect(await stub.counts()).toEqual({
      unread: 2,
      archived: 0,
      snoozed: 0,
      total: 3,
      by_template: [
        { template_id: TEMPLATE_B, unread: 1, total: 1 },
        { template_id: TEMPLATE_A, unread: 1, total: 2 },
      ].sort((x, y) => x.template_id.localeCompare(y.template_id)),
      seq: 0,
    });
    const after = await list(user.token);
    expect(after.notifications).toEqual(before.map((n) => ({ ...n, archived_at: null, snoozed_until: null })));
    expect(after.seq).toBe(0);
    // And it works as any inbox from then on: the next change is seq 1.
    await stub.setArchived(a1.id, true);
    expect((await stub.counts()).seq).toBe(1);
  });
});

/**
 * The schema as 0002_email_decisions.sql left it: no inbox_targets, no inbox_template, and nothing of 0004 either;
 * the journal rows after the first three removed.
 */
const BACK_TO_0002 = [
  "DROP TABLE digest_entries",
  "DROP TABLE digest_windows",
  "DROP INDEX inbox_removable",
  "DROP TABLE inbox_removed",
  "DROP TABLE inbox_retention",
  "DROP TABLE inbox_targets",
  "DROP INDEX inbox_template",
  "DELETE FROM __drizzle_migrations WHERE created_at > (SELECT created_at FROM __drizzle_migrations ORDER BY created_at LIMIT 1 OFFSET 2)",
];

describe("an inbox from before the filter indexes", () => {
  it("is backfilled: the targets filter finds the same items after the upgrade, in the list, paged, and in bulk", async () => {
    const user = await createUser();
    const [t1, t2, t3] = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
    const both = await deliver(user.id, { targets: [t1, t2] });
    const onlyT1 = await deliver(user.id, { targets: [t1], templateId: TEMPLATE_B });
    // A target listed twice is one row, and the item is listed once.
    const twice = await deliver(user.id, { targets: [t2, t2] });
    await deliver(user.id);
    const archived = await deliver(user.id, { targets: [t1, t3] });
    const sameTime = await deliver(user.id, { targets: [t1], createdAt: archived.createdAt });
    const stub = inbox(user.id);
    await stub.setReadStatus(onlyT1.id, true);
    await stub.setArchived(archived.id, true);

    const queries = [
      `targets=${t1}`,
      `targets=${t1},${t2}`,
      `targets=${t2}&read_status=unread`,
      `targets=${t1}&templates=${TEMPLATE_B}&read_status=read`,
      `targets=${t1}&archived=include`,
      `targets=${t3}&archived=only`,
    ];
    const listed = async () => Promise.all(queries.map(async (q) => (await list(user.token, `?${q}`)).notifications.map((n) => n.id)));
    // One item a page, so every page starts after a cursor (two of them share a created_at).
    const pagedT1 = async () => {
      const ids: string[] = [];
      for (;;) {
        const cursor = ids.at(-1);
        const page = await list(user.token, `?targets=${t1}&archived=include&limit=1${cursor ? `&starting_before=${cursor}` : ""}`);
        if (page.notifications.length === 0) return ids;
        ids.push(...page.notifications.map((n) => n.id));
      }
    };
    const before = await listed();
    const pagedBefore = await pagedT1();
    const newestFirst = [sameTime, archived, onlyT1, both].sort((a, b) =>
      a.createdAt === b.createdAt ? (a.id < b.id ? 1 : -1) : a.createdAt < b.createdAt ? 1 : -1,
    );
    expect(pagedBefore).toEqual(newestFirst.map((n) => n.id));
    expect(before).toEqual([
      [sameTime.id, onlyT1.id, both.id],
      [both.id],
      [twice.id, both.id],
      [onlyT1.id],
      newestFirst.map((n) => n.id),
      [archived.id],
    ]);

    await runInDurableObject(stub, (_instance, state) => {
      for (const statement of BACK_TO_0002) state.storage.sql.exec(statement);
      const tables = state.storage.sql.exec("SELECT name FROM sqlite_master WHERE name IN ('inbox_targets', 'inbox_template')").toArray();
      expect(tables).toEqual([]);
    });
    await evictDurableObject(stub);

    expect(await listed()).toEqual(before);
    expect(await pagedT1()).toEqual(pagedBefore);
    await runInDurableObject(stub, (_instance, state) => {
      // Exactly one row per distinct (target, notification): 2 + 1 + 1 + 2 + 1.
      expect(state.storage.sql.exec("SELECT count(*) AS n FROM inbox_targets").one().n).toBe(7);
      expect(state.storage.sql.exec("SELECT name FROM sqlite_master WHERE name = 'inbox_template'").toArray()).toEqual([{ name: "inbox_template" }]);
    });
    // A bulk action selects through the same table: the unread items that carry t1 (not the archived one).
    expect(await json(await bulk(user.token, { action: "read", filter: { targets: [t1] } }))).toEqual({ updated: 2, unread_count: 2 });
    expect((await list(user.token, `?targets=${t1}&read_status=unread`)).notifications).toEqual([]);
    // And deliveries after the upgrade are found beside the backfilled ones.
    const later = await deliver(user.id, { targets: [t2, t1] });
    expect((await list(user.token, `?targets=${t1},${t2}`)).notifications.map((n) => n.id)).toEqual([later.id, both.id]);
  });
});
