import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { Messages } from "../../src/http/errors";
import { InboxMessages } from "../../src/inbox/messages";
import type { UserInbox } from "../../src/inbox/user-inbox";
import { call, createUser, expectError, json, owner } from "../helpers";
import {
  bulk,
  counts,
  countsOf,
  deliver,
  fromNow,
  type ItemBody,
  inbox,
  LIMITS,
  list,
  listAll,
  markAllRead,
  nextFrame,
  setArchived,
  setRead,
  snooze,
  TEMPLATE_A,
  TEMPLATE_B,
  watch,
} from "./inbox-helpers";

// Every rule checked here is a line of docs/inbox.md, "Item states"; each test names the one it checks.

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

async function item(res: Response): Promise<ItemBody> {
  expect(res.status).toBe(200);
  return json<ItemBody>(res);
}

const ids = async (token: string, query = "") => (await list(token, query)).notifications.map((n) => n.id);

/** When the inbox object's one alarm is set for (epoch ms), or null. */
const alarmOf = (userId: string) => runInDurableObject(inbox(userId), (_: UserInbox, state) => state.storage.getAlarm());

/** When retention lets an item created at `createdAt` go, once read or archived (docs/inbox.md, "Retention"). */
const retentionDue = (createdAt: string) => Date.parse(createdAt) + LIMITS.retentionMs;

/** A different millisecond: "an earlier read_at is kept" is only visible if the clock moved on. */
const tick = () => new Promise((r) => setTimeout(r, 5));

/** The counts endpoint agrees with what the list shows, at the same seq (docs/inbox.md, "Exact counts"). */
async function expectCountsMatchList(token: string) {
  const all = await listAll(token);
  expect(await counts(token)).toEqual(countsOf(all.notifications, all.seq));
}

describe("archive (docs/inbox.md, Item states)", () => {
  it("rule: archive of an unread item reads it; archived_at is set; the default list leaves it out", async () => {
    const user = await createUser();
    const a = await deliver(user.id);
    const b = await deliver(user.id);
    const body = await item(await setArchived(user.token, a.id, true));
    expect(body.message).toBe(InboxMessages.archived);
    expect(body.notification.id).toBe(a.id);
    expect(Date.parse(body.notification.archived_at ?? "")).toBeGreaterThan(0);
    // Archived items are read by definition.
    expect(body.notification.read_at).toBe(body.notification.archived_at);
    expect(body.notification.snoozed_until).toBeNull();
    expect(body.unread_count).toBe(1);
    expect(await ids(user.token)).toEqual([b.id]);
    await expectCountsMatchList(user.token);
  });

  it("rule: archive keeps an earlier read_at, and archiving twice keeps the first archived_at and writes nothing", async () => {
    const user = await createUser();
    const a = await deliver(user.id);
    const read = await item(await setRead(user.token, a.id, true));
    await tick();
    const archived = await item(await setArchived(user.token, a.id, true));
    expect(archived.notification.read_at).toBe(read.notification.read_at);
    expect(archived.notification.archived_at).not.toBe(read.notification.read_at);
    const seq = (await counts(user.token)).seq;
    await tick();
    const again = await item(await setArchived(user.token, a.id, true));
    expect(again.message).toBe(InboxMessages.archived);
    expect(again.notification).toEqual(archived.notification);
    // An action that changes nothing takes no seq (docs/inbox.md, Item states).
    expect((await counts(user.token)).seq).toBe(seq);
  });

  it("rule: unarchive clears archived_at and leaves read_at as it is", async () => {
    const user = await createUser();
    const a = await deliver(user.id);
    const archived = await item(await setArchived(user.token, a.id, true));
    const body = await item(await setArchived(user.token, a.id, false));
    expect(body.message).toBe(InboxMessages.unarchived);
    expect(body.notification.archived_at).toBeNull();
    expect(body.notification.read_at).toBe(archived.notification.read_at);
    expect(body.unread_count).toBe(0);
    expect(await ids(user.token)).toEqual([a.id]);
  });

  it("rule: unread of an archived item unarchives it (archived items are read), by read-status and by bulk", async () => {
    const user = await createUser();
    const a = await deliver(user.id);
    const b = await deliver(user.id);
    await setArchived(user.token, a.id, true);
    await setArchived(user.token, b.id, true);
    expect(await ids(user.token)).toEqual([]);
    const body = await item(await setRead(user.token, a.id, false));
    expect(body.message).toBe(InboxMessages.markedUnread);
    expect(body.notification).toMatchObject({ read_at: null, archived_at: null });
    expect(body.unread_count).toBe(1);
    const res = await bulk(user.token, { action: "unread", ids: [b.id] });
    expect(await json(res)).toEqual({ updated: 1, unread_count: 2 });
    expect(await ids(user.token)).toEqual([b.id, a.id]);
    expect((await list(user.token, "?archived=only")).notifications).toEqual([]);
    await expectCountsMatchList(user.token);
  });

  it("rule: archiving a snoozed item ends the snooze and reads it", async () => {
    const user = await createUser();
    const a = await deliver(user.id);
    await item(await snooze(user.token, a.id, fromNow(DAY)));
    const body = await item(await setArchived(user.token, a.id, true));
    expect(body.notification.snoozed_until).toBeNull();
    expect(body.notification.read_at).not.toBeNull();
    expect(body.notification.archived_at).not.toBeNull();
    expect(await counts(user.token)).toMatchObject({ unread: 0, archived: 1, snoozed: 0, total: 1 });
    // Nothing is left to wake: the one alarm is retention's, for when the archived item outlives INBOX_RETENTION
    // (docs/inbox.md, "Retention").
    expect(await alarmOf(user.id)).toBe(retentionDue(a.createdAt));
  });

  it("400 for a missing or mistyped is_archived, 401 without a credential", async () => {
    const user = await createUser();
    const a = await deliver(user.id);
    for (const body of [{}, { is_archived: "yes" }, { is_archived: null }]) {
      const err = await expectError(
        await call("PUT", `/notifications/inbox/${a.id}/archive-status`, { token: user.token, body }),
        400,
        Messages.validation,
      );
      expect(err.validations?.map((v) => v.field)).toContain("is_archived");
    }
    await expectError(await call("PUT", "/notifications/inbox/abc/archive-status", { token: user.token, body: { is_archived: true } }), 400);
    await expectError(await call("PUT", `/notifications/inbox/${a.id}/archive-status`, { body: { is_archived: true } }), 401);
    expect((await list(user.token)).notifications[0]?.archived_at).toBeNull();
  });
});

describe("the list's archived and snoozed parameters (docs/inbox.md, Item states: the list)", () => {
  it("rule: the list leaves archived and snoozed items out by default; include and only show them", async () => {
    const user = await createUser();
    const plain = await deliver(user.id);
    const archived = await deliver(user.id);
    const snoozed = await deliver(user.id);
    await setArchived(user.token, archived.id, true);
    await snooze(user.token, snoozed.id, fromNow(DAY));
    expect(await ids(user.token)).toEqual([plain.id]);
    expect(await ids(user.token, "?archived=exclude&snoozed=exclude")).toEqual([plain.id]);
    expect(await ids(user.token, "?archived=include")).toEqual([archived.id, plain.id]);
    expect(await ids(user.token, "?archived=only")).toEqual([archived.id]);
    expect(await ids(user.token, "?snoozed=include")).toEqual([snoozed.id, plain.id]);
    expect(await ids(user.token, "?snoozed=only")).toEqual([snoozed.id]);
    expect(await ids(user.token, "?archived=include&snoozed=include")).toEqual([snoozed.id, archived.id, plain.id]);
    expect(await ids(user.token, "?archived=only&snoozed=include")).toEqual([archived.id]);
    // No item is both archived and snoozed.
    expect(await ids(user.token, "?archived=only&snoozed=only")).toEqual([]);
    // They combine with the other filters.
    expect(await ids(user.token, "?archived=include&read_status=read")).toEqual([archived.id]);
    expect(await ids(user.token, `?archived=include&snoozed=include&templates=${TEMPLATE_B}`)).toEqual([]);
    // unread_count ignores the filters and never counts the snoozed item.
    expect((await list(user.token, "?snoozed=only")).unread_count).toBe(1);
    for (const query of ["?archived=all", "?snoozed=yes", "?archived="]) {
      const err = await expectError(await call("GET", `/notifications/inbox${query}`, { token: user.token }), 400, Messages.validation);
      expect(err.validations?.[0]?.field).toBe(query.slice(1, query.indexOf("=")));
    }
  });
});

describe("snooze (docs/inbox.md, Item states)", () => {
  it("rule: snooze sets snoozed_until and the item is not unread; unsnoozing (until: null) wakes it unread", async () => {
    const user = await createUser();
    const a = await deliver(user.id);
    const b = await deliver(user.id);
    await setRead(user.token, b.id, true);
    const until = fromNow(2 * 60 * MINUTE);
    const body = await item(await snooze(user.token, a.id, until));
    expect(body.message).toBe(InboxMessages.snoozed);
    expect(body.notification).toMatchObject({ id: a.id, snoozed_until: until, read_at: null, archived_at: null });
    expect(body.unread_count).toBe(0);
    expect(await counts(user.token)).toMatchObject({ unread: 0, snoozed: 1, total: 2 });
    // Snoozing a read item keeps read_at; waking makes it unread again, as if newly delivered.
    const readSnoozed = await item(await snooze(user.token, b.id, fromNow(DAY)));
    expect(readSnoozed.notification.read_at).not.toBeNull();
    const woken = await item(await snooze(user.token, b.id, null));
    expect(woken.message).toBe(InboxMessages.unsnoozed);
    expect(woken.notification).toMatchObject({ snoozed_until: null, read_at: null, archived_at: null });
    expect(woken.unread_count).toBe(1);
    expect(await ids(user.token)).toEqual([b.id]);
    await expectCountsMatchList(user.token);
  });

  it("rule: snoozing again moves the wake-up; the alarm follows the earliest snooze", async () => {
    const user = await createUser();
    const a = await deliver(user.id);
    const b = await deliver(user.id);
    const later = fromNow(DAY);
    const sooner = fromNow(60 * MINUTE);
    await snooze(user.token, a.id, later);
    expect(await alarmOf(user.id)).toBe(Date.parse(later));
    await snooze(user.token, b.id, sooner);
    expect(await alarmOf(user.id)).toBe(Date.parse(sooner));
    const moved = fromNow(2 * DAY);
    expect((await item(await snooze(user.token, b.id, moved))).notification.snoozed_until).toBe(moved);
    expect(await alarmOf(user.id)).toBe(Date.parse(later));
    await snooze(user.token, a.id, null);
    expect(await alarmOf(user.id)).toBe(Date.parse(moved));
    await setArchived(user.token, b.id, true);
    // No snooze left: the alarm is retention's, for the archived item (docs/inbox.md, "Retention").
    expect(await alarmOf(user.id)).toBe(retentionDue(b.createdAt));
  });

  it("rule: snoozing an archived item unarchives it, so it can come back", async () => {
    const user = await createUser();
    const a = await deliver(user.id);
    const archived = await item(await setArchived(user.token, a.id, true));
    const body = await item(await snooze(user.token, a.id, fromNow(DAY)));
    expect(body.notification.archived_at).toBeNull();
    expect(body.notification.read_at).toBe(archived.notification.read_at);
    expect(await counts(user.token)).toMatchObject({ archived: 0, snoozed: 1 });
  });

  it("rule: unsnoozing an item that is not snoozed changes nothing (no seq)", async () => {
    const user = await createUser();
    const a = await deliver(user.id);
    const read = await item(await setRead(user.token, a.id, true));
    const body = await item(await snooze(user.token, a.id, null));
    expect(body.notification).toEqual(read.notification);
    expect((await counts(user.token)).seq).toBe(2);
  });

  it("rule: a snooze lasts 1 minute to 366 days; 59 s, 367 days, no zone or garbage is a 400 on until and changes nothing", async () => {
    const user = await createUser();
    const a = await deliver(user.id);
    const before = await listAll(user.token);
    const bad: unknown[] = [
      fromNow(59_000),
      fromNow(-MINUTE),
      fromNow(367 * DAY),
      fromNow(DAY).replace("Z", ""), // no zone
      "tomorrow",
      "",
      42,
      true,
    ];
    for (const until of bad) {
      const res = await call("PUT", `/notifications/inbox/${a.id}/snooze`, { token: user.token, body: { until } });
      const err = await expectError(res, 400, Messages.validation);
      expect(
        err.validations?.map((v) => v.field),
        String(until),
      ).toEqual(["until"]);
    }
    const missing = await expectError(
      await call("PUT", `/notifications/inbox/${a.id}/snooze`, { token: user.token, body: {} }),
      400,
      Messages.validation,
    );
    expect(missing.validations?.map((v) => v.field)).toEqual(["until"]);
    const range = await expectError(await snooze(user.token, a.id, fromNow(59_000)), 400);
    expect(range.validations?.[0]?.detail).toBe(InboxMessages.snoozeRange);
    expect(await listAll(user.token)).toEqual(before);
    expect(await alarmOf(user.id)).toBeNull();
    // Just inside both ends, with an offset instead of Z: accepted, stored in UTC.
    const ahead = new Date(Date.now() + 2 * MINUTE);
    const withOffset = `${new Date(ahead.getTime() + 2 * 60 * MINUTE).toISOString().slice(0, 19)}+02:00`;
    expect((await item(await snooze(user.token, a.id, withOffset))).notification.snoozed_until).toBe(new Date(Date.parse(withOffset)).toISOString());
    expect((await item(await snooze(user.token, a.id, fromNow(366 * DAY - MINUTE)))).notification.snoozed_until).not.toBeNull();
  });
});

describe("the wake-up (docs/inbox.md, Item states: snooze wakes from the object's alarm)", () => {
  it("rule: the alarm is set to the snooze, survives eviction, and the wake is unread and pushed as a new notification", async () => {
    const user = await createUser();
    const stub = inbox(user.id);
    const a = await deliver(user.id);
    const other = await deliver(user.id);
    const w = await watch("", { "Service-Session-Token": user.token });
    const synced = await watch(`?sync=true&templates=${TEMPLATE_B}`, { "Service-Session-Token": user.token });
    const until = fromNow(61_000);
    await item(await snooze(user.token, a.id, until));
    expect(await alarmOf(user.id)).toBe(Date.parse(until));
    expect(await synced.next()).toMatchObject({ seq: 3, change: { ids: [a.id], snoozed_until: until } });
    await evictDurableObject(stub);
    // The alarm and the snooze are stored by the platform: a fresh instance still wakes the item on time.
    expect(await alarmOf(user.id)).toBe(Date.parse(until));
    expect(await runInDurableObject(stub, (o: UserInbox) => o.wakeDue(Date.now() + 120_000))).toBe(1);
    const frame = await nextFrame(w);
    expect(frame).toMatchObject({ seq: 4, unread_count: 2, notification: { id: a.id, read_at: null, snoozed_until: null, archived_at: null } });
    // A synced socket whose filters leave the woken item out still learns it is unread and no longer snoozed.
    expect(await synced.next()).toEqual({ seq: 4, change: { ids: [a.id], read_at: null, snoozed_until: null }, unread_count: 2 });
    expect(await ids(user.token)).toEqual([other.id, a.id]);
    expect(await counts(user.token)).toMatchObject({ unread: 2, snoozed: 0, total: 2, seq: 4 });
    await expectCountsMatchList(user.token);
    // Waking again finds nothing due.
    expect(await runInDurableObject(stub, (o: UserInbox) => o.wakeDue(Date.now() + 120_000))).toBe(0);
    expect(await w.quiet()).toBe(true);
  });

  it("rule: the object's alarm handler wakes what is due and re-arms for the next snooze", async () => {
    const user = await createUser();
    const stub = inbox(user.id);
    const a = await deliver(user.id);
    const b = await deliver(user.id);
    await setRead(user.token, a.id, true);
    await snooze(user.token, a.id, fromNow(61_000));
    const next = fromNow(60 * MINUTE);
    await snooze(user.token, b.id, next);
    const w = await watch("?read_status=unread", { "Service-Session-Token": user.token });
    await evictDurableObject(stub);
    // The clock in workerd cannot be moved forward, so the test moves the snooze back instead: as if the minute had
    // passed. The alarm handler then does what it does when the platform fires it (runDurableObjectAlarm runs it now).
    await runInDurableObject(stub, (_: UserInbox, state) => {
      state.storage.sql.exec("UPDATE inbox_notifications SET snoozed_until = ? WHERE id = ?", new Date(Date.now() - 1000).toISOString(), a.id);
    });
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await nextFrame(w)).toMatchObject({ seq: 6, unread_count: 1, notification: { id: a.id, read_at: null, snoozed_until: null } });
    expect(await ids(user.token)).toEqual([a.id]);
    // One alarm per object, set to the earliest thing due: b's snooze, before the watch session's expiry (24 h).
    expect(await alarmOf(user.id)).toBe(Date.parse(next));
    await expectCountsMatchList(user.token);
  });
});

describe("mark-all-as-read and item states", () => {
  it("rule: unread is neither read nor snoozed; mark-all reads the unread items and leaves snoozed ones as they were", async () => {
    const user = await createUser();
    const a = await deliver(user.id);
    const s = await deliver(user.id);
    await snooze(user.token, s.id, fromNow(DAY));
    expect((await markAllRead(user.token)).status).toBe(204);
    const all = await listAll(user.token);
    expect(all.notifications.find((n) => n.id === a.id)?.read_at).not.toBeNull();
    // A snoozed item is not unread, so mark-all does not touch it: a synced client applying `{all: true}` to the items
    // it holds unread must end with the same state as the list (docs/inbox.md, "Sequenced sync").
    expect(all.notifications.find((n) => n.id === s.id)).toMatchObject({ read_at: null, snoozed_until: expect.any(String) });
    await expectCountsMatchList(user.token);
  });

  it("rule: mark-all with nothing unread writes nothing (no seq), even when snoozed items are there", async () => {
    const user = await createUser();
    const s = await deliver(user.id);
    await snooze(user.token, s.id, fromNow(DAY));
    const seq = (await counts(user.token)).seq;
    expect((await markAllRead(user.token)).status).toBe(204);
    expect((await counts(user.token)).seq).toBe(seq);
  });
});

describe("bulk actions (docs/inbox.md, Item states: bulk actions)", () => {
  it("rule: ids that are not the caller's are ignored: not counted, not revealed, not changed", async () => {
    const user = await createUser();
    const other = await createUser();
    const mine = [await deliver(user.id), await deliver(user.id)];
    const theirs = await deliver(other.id);
    const otherBefore = await listAll(other.token);
    const res = await bulk(user.token, {
      action: "archive",
      ids: [mine[0]?.id ?? "", theirs.id, crypto.randomUUID(), mine[1]?.id ?? "", mine[0]?.id ?? ""],
    });
    expect(res.status).toBe(200);
    // Listed twice, counted once.
    expect(await json(res)).toEqual({ updated: 2, unread_count: 0 });
    expect(await listAll(other.token)).toEqual(otherBefore);
    // Only foreign ids: nothing to do, still a 200.
    expect(await json(await bulk(user.token, { action: "read", ids: [theirs.id] }))).toEqual({ updated: 0, unread_count: 0 });
    expect(await listAll(other.token)).toEqual(otherBefore);
  });

  it("rule: updated counts the items the action changed; already-read items keep read_at", async () => {
    const user = await createUser();
    const a = await deliver(user.id);
    const b = await deliver(user.id);
    const read = await item(await setRead(user.token, a.id, true));
    await tick();
    expect(await json(await bulk(user.token, { action: "read", ids: [a.id, b.id] }))).toEqual({ updated: 1, unread_count: 0 });
    expect((await listAll(user.token)).notifications.find((n) => n.id === a.id)?.read_at).toBe(read.notification.read_at);
    expect(await json(await bulk(user.token, { action: "read", ids: [a.id, b.id] }))).toEqual({ updated: 0, unread_count: 0 });
    expect(await json(await bulk(user.token, { action: "unarchive", ids: [a.id, b.id] }))).toEqual({ updated: 0, unread_count: 0 });
    expect(await json(await bulk(user.token, { action: "archive", ids: [a.id] }))).toEqual({ updated: 1, unread_count: 0 });
    expect(await json(await bulk(user.token, { action: "unarchive", ids: [a.id, b.id] }))).toEqual({ updated: 1, unread_count: 0 });
    expect(await json(await bulk(user.token, { action: "unread", ids: [a.id, b.id] }))).toEqual({ updated: 2, unread_count: 2 });
  });

  it("rule: by ids, a snoozed item can be acted on (read keeps it snoozed, archive ends the snooze)", async () => {
    const user = await createUser();
    const a = await deliver(user.id);
    const b = await deliver(user.id);
    const until = fromNow(DAY);
    await snooze(user.token, a.id, until);
    await snooze(user.token, b.id, until);
    expect(await json(await bulk(user.token, { action: "read", ids: [a.id] }))).toEqual({ updated: 1, unread_count: 0 });
    expect(await json(await bulk(user.token, { action: "archive", ids: [b.id] }))).toEqual({ updated: 1, unread_count: 0 });
    const all = await listAll(user.token);
    expect(all.notifications.find((n) => n.id === a.id)).toMatchObject({ snoozed_until: until, archived_at: null, read_at: expect.any(String) });
    expect(all.notifications.find((n) => n.id === b.id)).toMatchObject({ snoozed_until: null, archived_at: expect.any(String) });
    await expectCountsMatchList(user.token);
  });

  it("rule: a filter selects what the list would show for it (templates, targets, read_status, archived); never snoozed items", async () => {
    const user = await createUser();
    const [t1, t2] = [crypto.randomUUID(), crypto.randomUUID()];
    const aT1 = await deliver(user.id, { templateId: TEMPLATE_A, targets: [t1] });
    const bT12 = await deliver(user.id, { templateId: TEMPLATE_B, targets: [t1, t2] });
    const b = await deliver(user.id, { templateId: TEMPLATE_B });
    const aT2 = await deliver(user.id, { templateId: TEMPLATE_A, targets: [t2] });
    const snoozedB = await deliver(user.id, { templateId: TEMPLATE_B, targets: [t1] });
    await snooze(user.token, snoozedB.id, fromNow(DAY));
    const state = async () => new Map((await listAll(user.token)).notifications.map((n) => [n.id, n]));

    // templates: any of them.
    expect(await json(await bulk(user.token, { action: "read", filter: { templates: [TEMPLATE_B] } }))).toEqual({ updated: 2, unread_count: 2 });
    let s = await state();
    expect([bT12, b, aT1, aT2, snoozedB].map((n) => s.get(n.id)?.read_at !== null)).toEqual([true, true, false, false, false]);

    // targets: all of them.
    expect(await json(await bulk(user.token, { action: "archive", filter: { targets: [t1, t2] } }))).toEqual({ updated: 1, unread_count: 2 });
    expect(s.get(bT12.id)?.archived_at).toBeNull();
    s = await state();
    expect(s.get(bT12.id)?.archived_at).not.toBeNull();

    // read_status: only read items (the archived one is out of sight by default, the snoozed one always).
    expect(await json(await bulk(user.token, { action: "unread", filter: { read_status: "read" } }))).toEqual({ updated: 1, unread_count: 3 });
    s = await state();
    expect(s.get(b.id)?.read_at).toBeNull();
    expect(s.get(bT12.id)?.archived_at).not.toBeNull();

    // archived: exclude by default, so unarchiving with an empty filter finds nothing; only/include reach them.
    expect(await json(await bulk(user.token, { action: "unarchive", filter: {} }))).toEqual({ updated: 0, unread_count: 3 });
    expect(await json(await bulk(user.token, { action: "unarchive", filter: { archived: "only" } }))).toEqual({ updated: 1, unread_count: 3 });
    expect(await json(await bulk(user.token, { action: "archive", filter: { targets: [t1], archived: "include" } }))).toEqual({
      updated: 2,
      unread_count: 2,
    });

    // Everything the default list shows, combined filters, and the snoozed item never.
    expect(await json(await bulk(user.token, { action: "archive", filter: { templates: [TEMPLATE_A], read_status: "unread" } }))).toEqual({
      updated: 1,
      unread_count: 1,
    });
    expect(await json(await bulk(user.token, { action: "archive", filter: {} }))).toEqual({ updated: 1, unread_count: 0 });
    s = await state();
    expect(s.get(snoozedB.id)).toMatchObject({ read_at: null, archived_at: null, snoozed_until: expect.any(String) });
    expect([aT1, bT12, b, aT2].every((n) => s.get(n.id)?.archived_at !== null)).toBe(true);
    await expectCountsMatchList(user.token);
  });

  it("rule: a bulk action is one transaction: a concurrent reader sees every selected item changed, or none", async () => {
    const user = await createUser();
    const delivered = await Promise.all(Array.from({ length: 40 }, () => deliver(user.id)));
    const selected = new Set(delivered.map((d) => d.id));
    const [result, ...listings] = await Promise.all([
      bulk(user.token, { action: "archive", filter: {} }).then((r) => json<{ updated: number }>(r)),
      ...Array.from({ length: 8 }, () => listAll(user.token)),
    ]);
    expect(result.updated).toBe(40);
    for (const listing of listings) {
      const archived = listing.notifications.filter((n) => selected.has(n.id) && n.archived_at !== null).length;
      expect([0, 40]).toContain(archived);
      // And the listing's seq says which side of the bulk it is on.
      expect(listing.seq).toBe(archived === 0 ? 40 : 41);
    }
  });

  it("400 for both ids and filter, neither, an empty or oversized ids list, an unknown action or filter key", async () => {
    const user = await createUser();
    const a = await deliver(user.id);
    const before = await listAll(user.token);
    const cases: [unknown, string][] = [
      [{ action: "read", ids: [a.id], filter: {} }, "filter"],
      [{ action: "read" }, "ids"],
      [{ action: "read", ids: [] }, "ids"],
      [{ action: "read", ids: Array.from({ length: 101 }, () => crypto.randomUUID()) }, "ids"],
      [{ action: "read", ids: ["nope"] }, "ids"],
      [{ action: "snooze", ids: [a.id] }, "action"],
      [{ action: "read", filter: { snoozed: "include" } }, "filter"],
      [{ action: "read", filter: { read_status: "new" } }, "filter"],
    ];
    for (const [body, field] of cases) {
      const err = await expectError(await call("POST", "/notifications/inbox/bulk", { token: user.token, body }), 400, Messages.validation);
      expect(
        err.validations?.map((v) => v.field.split(".")[0]),
        JSON.stringify(body),
      ).toContain(field);
    }
    expect(await listAll(user.token)).toEqual(before);
    await expectError(await call("POST", "/notifications/inbox/bulk", { body: { action: "read", ids: [a.id] } }), 401);
  });
});

describe("another user's inbox (docs/inbox.md, Item states; docs/authorization.md)", () => {
  it("a member, or even the owner, can never touch another inbox: 404 one by one, ignored in bulk, own counts only", async () => {
    const member = await createUser();
    const victim = await createUser();
    const admin = await owner();
    const theirs = await deliver(victim.id);
    const snoozed = await deliver(victim.id);
    await snooze(victim.token, snoozed.id, fromNow(DAY));
    const before = await listAll(victim.token);
    const beforeCounts = await counts(victim.token);
    for (const token of [member.token, admin.token]) {
      await expectError(await setArchived(token, theirs.id, true), 404, Messages.notFoundOrNoAccess);
      await expectError(await setArchived(token, theirs.id, false), 404, Messages.notFoundOrNoAccess);
      await expectError(await snooze(token, theirs.id, fromNow(DAY)), 404, Messages.notFoundOrNoAccess);
      await expectError(await snooze(token, snoozed.id, null), 404, Messages.notFoundOrNoAccess);
      await expectError(await setRead(token, theirs.id, true), 404, Messages.notFoundOrNoAccess);
      for (const action of ["read", "unread", "archive", "unarchive"] as const) {
        expect(await json(await bulk(token, { action, ids: [theirs.id, snoozed.id] }))).toMatchObject({ updated: 0 });
        await bulk(token, { action, filter: { archived: "include" } });
      }
      expect((await markAllRead(token)).status).toBe(204);
      expect((await listAll(token)).notifications.map((n) => n.id)).not.toContain(theirs.id);
    }
    expect(await counts(member.token)).toMatchObject({ total: 0 });
    expect(await listAll(victim.token)).toEqual(before);
    expect(await counts(victim.token)).toEqual(beforeCounts);
  });
});

describe("counts (docs/inbox.md, Exact counts)", () => {
  it("rule: unread, archived, snoozed, total and by_template follow each action, at the list's seq", async () => {
    const user = await createUser();
    expect(await counts(user.token)).toEqual({ unread: 0, archived: 0, snoozed: 0, total: 0, by_template: [], seq: 0 });
    const a1 = await deliver(user.id, { templateId: TEMPLATE_A });
    const a2 = await deliver(user.id, { templateId: TEMPLATE_A });
    const b1 = await deliver(user.id, { templateId: TEMPLATE_B });
    await deliver(user.id, { templateId: TEMPLATE_B });
    const byTemplate = (aUnread: number, bUnread: number) =>
      [
        { template_id: TEMPLATE_A, unread: aUnread, total: 2 },
        { template_id: TEMPLATE_B, unread: bUnread, total: 2 },
      ].sort((x, y) => x.template_id.localeCompare(y.template_id));
    expect(await counts(user.token)).toEqual({ unread: 4, archived: 0, snoozed: 0, total: 4, by_template: byTemplate(2, 2), seq: 4 });
    await setArchived(user.token, a1.id, true);
    await snooze(user.token, b1.id, fromNow(DAY));
    expect(await counts(user.token)).toEqual({ unread: 2, archived: 1, snoozed: 1, total: 4, by_template: byTemplate(1, 1), seq: 6 });
    await setRead(user.token, a2.id, true);
    await setRead(user.token, a1.id, false);
    expect(await counts(user.token)).toEqual({ unread: 2, archived: 0, snoozed: 1, total: 4, by_template: byTemplate(1, 1), seq: 8 });
    await markAllRead(user.token);
    expect(await counts(user.token)).toEqual({ unread: 0, archived: 0, snoozed: 1, total: 4, by_template: byTemplate(0, 0), seq: 9 });
    await snooze(user.token, b1.id, null);
    expect(await counts(user.token)).toEqual({ unread: 1, archived: 0, snoozed: 0, total: 4, by_template: byTemplate(0, 1), seq: 10 });
    await expectCountsMatchList(user.token);
    expect((await list(user.token)).seq).toBe(10);
    await expectError(await call("GET", "/notifications/inbox/counts"), 401);
  });
});
