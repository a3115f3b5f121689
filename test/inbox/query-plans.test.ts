/**
 * docs/inbox.md, "Indexes": every list filter reaches its rows through an index, so a filter that matches nothing
 * reads nothing, and the default list keeps walking `inbox_visible`. Checked on SQLite's own plan (EXPLAIN QUERY PLAN)
 * for the exact statement list() runs (`listStatement`), in a real inbox object's database: a change to the SQL, the
 * schema or SQLite's choices that brings back a walk of the whole inbox fails here, whatever the inbox's size.
 */
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { listStatement } from "../../src/inbox/list-sql";
import type { ListFilter } from "../../src/inbox/model";
import { DELETE_SWEPT_TARGETS, OLDEST_REMOVABLE } from "../../src/inbox/store";
import { createUser } from "../helpers";
import { deliver, inbox, TEMPLATE_A, TEMPLATE_B } from "./inbox-helpers";

const DEFAULT: ListFilter = { targets: [], templates: [], readStatus: "all", archived: "exclude", snoozed: "exclude" };
const [T1, T2, T3] = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
/** A template and a target that no notification carries. */
const NO_TEMPLATE = crypto.randomUUID();
const NO_TARGET = crypto.randomUUID();
const CURSOR = { createdAt: "2026-01-01T00:00:00.000Z", id: crypto.randomUUID() };

const VISIBLE = "SCAN n USING INDEX inbox_visible";
const TEMPLATE = "SEARCH n USING INDEX inbox_template (template_id=?)";
const TEMPLATE_PAGED = "SEARCH n USING INDEX inbox_template (template_id=? AND (created_at,id)<(?,?))";
const TARGET = "SEARCH t USING COVERING INDEX sqlite_autoindex_inbox_targets_1 (target=?)";
const TARGET_PAGED = "SEARCH t USING COVERING INDEX sqlite_autoindex_inbox_targets_1 (target=? AND (created_at,notification_id)<(?,?))";
const OTHER_TARGET = "SEARCH u0 USING COVERING INDEX sqlite_autoindex_inbox_targets_1 (target=? AND created_at=? AND notification_id=?)";
const ROW_BY_ID = "SEARCH n USING INDEX sqlite_autoindex_inbox_notifications_1 (id=?)";

/** How the page's rows are read: the plan's lines for the inbox tables (not the page's own JSON assembly). */
async function access(userId: string, filter: ListFilter, paged: boolean): Promise<string[]> {
  const { text, params } = listStatement(filter, paged ? CURSOR : undefined, 25);
  const plan = await runInDurableObject(inbox(userId), (_instance, state) =>
    state.storage.sql.exec<{ detail: string }>(`EXPLAIN QUERY PLAN ${text}`, ...params).toArray(),
  );
  return plan.map((row) => row.detail).filter((detail) => /^(SCAN|SEARCH) (n|t|u\d+)\b/.test(detail) || detail === "USE TEMP B-TREE FOR ORDER BY");
}

describe("list filters read through indexes (docs/inbox.md, Indexes)", () => {
  const cases: [string, ListFilter, boolean, string[]][] = [
    ["the default list: inbox_visible, newest first", DEFAULT, false, [VISIBLE]],
    ["the default list after a cursor: from the cursor on", DEFAULT, true, ["SEARCH n USING INDEX inbox_visible ((created_at,id)<(?,?))"]],
    ["a template that matches nothing", { ...DEFAULT, templates: [NO_TEMPLATE] }, false, [TEMPLATE]],
    ["a template, read, after a cursor", { ...DEFAULT, templates: [NO_TEMPLATE], readStatus: "read" }, true, [TEMPLATE_PAGED]],
    [
      // The unread rows' index would be SQLite's choice here without the unary + in the statement (src/inbox/list-sql.ts).
      "several templates, unread, after a cursor: the templates' index, not inbox_unread",
      { ...DEFAULT, templates: [TEMPLATE_A, TEMPLATE_B, NO_TEMPLATE], readStatus: "unread" },
      true,
      // Ordered per template; SQLite's ORDER BY … LIMIT sorter stops each template's walk once it cannot make the page.
      [TEMPLATE_PAGED, "USE TEMP B-TREE FOR ORDER BY"],
    ],
    ["archived only, one template", { ...DEFAULT, templates: [TEMPLATE_A], archived: "only" }, false, [TEMPLATE]],
    ["a target that matches nothing", { ...DEFAULT, targets: [NO_TARGET] }, false, [TARGET, ROW_BY_ID]],
    ["a target, snoozed included, after a cursor", { ...DEFAULT, targets: [NO_TARGET], snoozed: "include" }, true, [TARGET_PAGED, ROW_BY_ID]],
    [
      "two targets, templates and unread, after a cursor: the other target is checked before the row is read",
      { ...DEFAULT, targets: [T1, NO_TARGET], templates: [TEMPLATE_A, TEMPLATE_B], readStatus: "unread" },
      true,
      [TARGET_PAGED, OTHER_TARGET, ROW_BY_ID],
    ],
    ["a target asked for twice is one lookup", { ...DEFAULT, targets: [NO_TARGET, NO_TARGET] }, false, [TARGET, ROW_BY_ID]],
  ];

  it.each(cases)("%s", async (_name, filter, paged, expected) => {
    const user = await createUser();
    await deliver(user.id, { targets: [T1, T2] });
    await deliver(user.id, { templateId: TEMPLATE_B, targets: [T3] });
    expect(await access(user.id, filter, paged)).toEqual(expected);
  });
});

describe('retention reads through indexes (docs/inbox.md, "Retention")', () => {
  const plan = (userId: string, text: string, ...params: (string | number)[]) =>
    runInDurableObject(inbox(userId), (_instance, state) =>
      state.storage.sql
        .exec<{ detail: string }>(`EXPLAIN QUERY PLAN ${text}`, ...params)
        .toArray()
        .map((row) => row.detail),
    );

  it("the oldest items that may give way come off inbox_removable in order, whatever number of unread ones there are", async () => {
    const user = await createUser();
    await deliver(user.id);
    expect(await plan(user.id, OLDEST_REMOVABLE, 500)).toEqual(["SCAN inbox_notifications USING INDEX inbox_removable"]);
  });

  it("a removed item's targets rows are found by their key", async () => {
    const user = await createUser();
    await deliver(user.id, { targets: [T1] });
    const detail = await plan(user.id, DELETE_SWEPT_TARGETS, JSON.stringify([crypto.randomUUID()]));
    // The tables' lines (the rest is the ids' JSON): each targets row by its whole key, each notification by its id.
    expect(detail.filter((d) => /^(SCAN|SEARCH) (inbox_targets|n)\b/.test(d))).toEqual([
      "SEARCH inbox_targets USING COVERING INDEX sqlite_autoindex_inbox_targets_1 (target=? AND created_at=? AND notification_id=?)",
      "SEARCH n USING INDEX sqlite_autoindex_inbox_notifications_1 (id=?)",
    ]);
  });
});
