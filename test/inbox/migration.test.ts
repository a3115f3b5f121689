/**
 * An inbox that existed before item states and the sequence (docs/inbox.md, "Exact counts": the backfill in
 * drizzle/inbox/0001_states_and_events.sql) keeps every notification and gets counters that match its rows when the
 * object next starts. The object is put back into its earlier shape — the 0001 tables, columns and counters dropped,
 * the migration's journal row removed — then evicted, so its constructor migrates it as a deployed object would be.
 */
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createUser } from "../helpers";
import { deliver, inbox, list, TEMPLATE_A, TEMPLATE_B } from "./inbox-helpers";

/** The schema as 0000_inbox.sql left it, with the rows and the unread counter it kept (later migrations undone too). */
const BACK_TO_0000 = [
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
