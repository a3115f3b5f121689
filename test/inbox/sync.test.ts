import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { Messages } from "../../src/http/errors";
import { InboxMessages } from "../../src/inbox/messages";
import type { InboxNotification } from "../../src/inbox/model";
import type { UserInbox } from "../../src/inbox/user-inbox";
import { call, createUser, expectError, json, type TestUser } from "../helpers";
import {
  applyFrame,
  bulk,
  counts,
  deliver,
  type Frame,
  framesUntil,
  fromNow,
  inbox,
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

// docs/inbox.md, "Sequenced sync and resume": every change takes the next seq, frames carry it, and a socket resumed
// with after_seq receives exactly what it missed, then the live frames.

const WATCH = "/notifications/inbox/watch";
const DAY = 24 * 60 * 60 * 1000;
const stamp = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

const auth = (user: TestUser) => ({ "Service-Session-Token": user.token });

/** A synced client's copy of the inbox, from a listing. */
const replicaOf = (notifications: InboxNotification[]) => new Map(notifications.map((n) => [n.id, n]));
const byId = (notifications: Iterable<InboxNotification>) => [...notifications].sort((a, b) => a.id.localeCompare(b.id));

const changeOf = (frame: Frame | undefined) => (frame && "change" in frame ? frame.change : undefined);
const idsOf = (frame: Frame | undefined): string[] => {
  const change = changeOf(frame);
  return change && "ids" in change ? change.ids : [];
};

/** Each frame's seq is one more than the last: no gap, nothing twice. */
function expectConsecutive(frames: Frame[], after: number) {
  expect(frames.map((f) => f.seq)).toEqual(frames.map((_, i) => after + i + 1));
}

describe("seq (docs/inbox.md, Sequenced sync)", () => {
  it("every kind of change takes the next seq, and its change frame carries exactly the fields that changed", async () => {
    const user = await createUser();
    const w = await watch("?sync=true", auth(user));
    let seq = 0;
    /** Runs one change and returns its frames: the next `n` seqs, true at the counts' seq and unread count after it. */
    const step = async (change: () => Promise<unknown>, n = 1): Promise<Frame[]> => {
      await change();
      const frames = await framesUntil(w, seq + n);
      expectConsecutive(frames, seq);
      seq += n;
      const now = await counts(user.token);
      expect(now.seq).toBe(seq);
      expect(frames.at(-1)?.unread_count).toBe(now.unread);
      return frames;
    };
    const ok = async (res: Response) => expect(res.status).toBeLessThan(300);

    // Deliveries.
    const [a, b, c] = [await deliver(user.id), await deliver(user.id), await deliver(user.id)];
    const delivered = await framesUntil(w, 3);
    expectConsecutive(delivered, 0);
    expect(delivered.map((f) => "notification" in f && f.notification.id)).toEqual([a.id, b.id, c.id]);
    seq = 3;

    // One item at a time.
    const [read] = await step(() => setRead(user.token, a.id, true).then(ok));
    expect(read).toEqual({ seq: 4, change: { ids: [a.id], read_at: stamp }, unread_count: 2 });
    expect(await step(() => setRead(user.token, a.id, false).then(ok))).toEqual([
      { seq: 5, change: { ids: [a.id], read_at: null }, unread_count: 3 },
    ]);
    const [archived] = await step(() => setArchived(user.token, a.id, true).then(ok));
    expect(archived).toEqual({ seq: 6, change: { ids: [a.id], read_at: stamp, archived_at: stamp }, unread_count: 2 });
    expect(await step(() => setArchived(user.token, a.id, false).then(ok))).toEqual([
      { seq: 7, change: { ids: [a.id], archived_at: null }, unread_count: 2 },
    ]);
    expect(await step(() => setArchived(user.token, a.id, true).then(ok))).toEqual([
      { seq: 8, change: { ids: [a.id], archived_at: stamp }, unread_count: 2 },
    ]);
    expect(await step(() => setRead(user.token, a.id, false).then(ok))).toEqual([
      { seq: 9, change: { ids: [a.id], read_at: null, archived_at: null }, unread_count: 3 },
    ]);
    const until = fromNow(DAY);
    expect(await step(() => snooze(user.token, b.id, until).then(ok))).toEqual([
      { seq: 10, change: { ids: [b.id], snoozed_until: until }, unread_count: 2 },
    ]);
    // A wake (unsnooze) is a new-notification frame: unread again.
    const [woken] = await step(() => snooze(user.token, b.id, null).then(ok));
    expect(woken).toMatchObject({ seq: 11, notification: { id: b.id, read_at: null, snoozed_until: null, archived_at: null }, unread_count: 3 });
    await step(() => snooze(user.token, c.id, until).then(ok));
    expect(await step(() => setArchived(user.token, c.id, true).then(ok))).toEqual([
      { seq: 13, change: { ids: [c.id], read_at: stamp, archived_at: stamp, snoozed_until: null }, unread_count: 2 },
    ]);
    const later = fromNow(2 * DAY);
    expect(await step(() => snooze(user.token, c.id, later).then(ok))).toEqual([
      { seq: 14, change: { ids: [c.id], archived_at: null, snoozed_until: later }, unread_count: 2 },
    ]);
    // A wake from the alarm's method.
    const [alarmWake] = await step(() => runInDurableObject(inbox(user.id), (o: UserInbox) => o.wakeDue(Date.now() + 3 * DAY)));
    expect(alarmWake).toMatchObject({ seq: 15, notification: { id: c.id, read_at: null, snoozed_until: null }, unread_count: 3 });

    // Bulk: one event per kind of change, on consecutive seqs.
    const [bulkRead] = await step(() => bulk(user.token, { action: "read", ids: [a.id, b.id] }).then(ok));
    expect(bulkRead).toEqual({ seq: 16, change: { ids: expect.any(Array), read_at: stamp }, unread_count: 1 });
    expect(idsOf(bulkRead).sort()).toEqual([a.id, b.id].sort());
    // Archiving one unread (c) and two read items (a, b): two kinds of change, two frames.
    const archiveAll = await step(() => bulk(user.token, { action: "archive", filter: {} }).then(ok), 2);
    const changes = archiveAll.map((f) => ("change" in f ? f.change : undefined));
    expect(changes).toEqual(
      expect.arrayContaining([
        { ids: [c.id], read_at: stamp, archived_at: stamp },
        { ids: expect.arrayContaining([a.id, b.id]), archived_at: stamp },
      ]),
    );
    const [bulkUnread] = await step(() => bulk(user.token, { action: "unread", filter: { archived: "only" } }).then(ok));
    expect(bulkUnread).toEqual({
      seq: 19,
      change: { ids: expect.arrayContaining([a.id, b.id, c.id]), read_at: null, archived_at: null },
      unread_count: 3,
    });
    const [all] = await step(() => markAllRead(user.token).then(ok));
    expect(all).toEqual({ seq: 20, change: { all: true, read_at: stamp }, unread_count: 0 });

    // Changes that change nothing take no seq: the next delivery is 21.
    await setRead(user.token, a.id, true).then(ok);
    await setArchived(user.token, a.id, false).then(ok);
    await snooze(user.token, a.id, null).then(ok);
    expect(await json(await bulk(user.token, { action: "read", ids: [a.id, b.id] }))).toMatchObject({ updated: 0 });
    await markAllRead(user.token).then(ok);
    expect((await counts(user.token)).seq).toBe(20);
    const d = await deliver(user.id);
    expect(await nextFrame(w)).toMatchObject({ seq: 21, notification: { id: d.id } });

    // The timestamps frames carry are the ones the list shows.
    const listed = replicaOf((await listAll(user.token)).notifications);
    expect(listed.get(a.id)?.read_at).toBe(changeOf(all)?.read_at);
    expect(listed.get(c.id)?.read_at).toBe(changeOf(all)?.read_at);
  });

  it("a bulk change to more than 2,000 items is split into events of at most 2,000 ids, on consecutive seqs", async () => {
    const user = await createUser();
    for (let i = 0; i < 21; i++) await Promise.all(Array.from({ length: 100 }, () => deliver(user.id)));
    const w = await watch("?sync=true", auth(user));
    const res = await bulk(user.token, { action: "read", filter: {} });
    expect(await json(res)).toEqual({ updated: 2100, unread_count: 0 });
    const frames = await framesUntil(w, 2102);
    expectConsecutive(frames, 2100);
    const ids = frames.map(idsOf);
    expect(ids.map((i) => i.length).sort((x, y) => y - x)).toEqual([2000, 100]);
    expect(new Set(ids.flat()).size).toBe(2100);
    // Both frames of one transaction carry the same read_at and the unread count after it.
    const readAts = new Set(frames.map((f) => changeOf(f)?.read_at));
    expect([...readAts]).toEqual([stamp]);
    expect(frames.map((f) => f.unread_count)).toEqual([0, 0]);
  });

  it("the list and the counts report the same seq, the last frame's", async () => {
    const user = await createUser();
    expect((await list(user.token)).seq).toBe(0);
    expect((await counts(user.token)).seq).toBe(0);
    const w = await watch("?sync=true", auth(user));
    const a = await deliver(user.id);
    await Promise.all([setArchived(user.token, a.id, true), deliver(user.id), deliver(user.id), snooze(user.token, a.id, fromNow(DAY))]);
    const [listed, counted] = [await list(user.token), await counts(user.token)];
    expect(listed.seq).toBe(5);
    expect(counted.seq).toBe(listed.seq);
    expect(counted.unread).toBe(listed.unread_count);
    expect((await framesUntil(w, 5)).at(-1)?.seq).toBe(5);
  });
});

describe("sync frames and filters (docs/inbox.md, Sequenced sync: frames, a wake)", () => {
  it("a synced socket gets every change whatever its filters; a wake it filters out is a change; a plain socket only matching notifications", async () => {
    const user = await createUser();
    const syncB = await watch(`?sync=true&templates=${TEMPLATE_B}`, auth(user));
    const plainA = await watch(`?templates=${TEMPLATE_A}`, auth(user));
    const syncRead = await watch("?sync_read_state=true&read_status=read", auth(user));
    const a = await deliver(user.id, { templateId: TEMPLATE_A });
    expect(await plainA.next()).toMatchObject({ seq: 1, notification: { id: a.id } });
    await setRead(user.token, a.id, true);
    const readFrame = { seq: 2, change: { ids: [a.id], read_at: stamp }, unread_count: 0 };
    expect(await syncB.next()).toEqual(readFrame);
    expect(await syncRead.next()).toEqual(readFrame);
    const until = fromNow(DAY);
    await snooze(user.token, a.id, until);
    expect(await syncB.next()).toEqual({ seq: 3, change: { ids: [a.id], snoozed_until: until }, unread_count: 0 });
    await snooze(user.token, a.id, null);
    // The wake matches plainA's filters: a new-notification frame.
    expect(await plainA.next()).toMatchObject({ seq: 4, notification: { id: a.id, read_at: null, snoozed_until: null }, unread_count: 1 });
    // syncB (template B) and syncRead (read only) leave the woken, unread item out: the change it is.
    const wakeChange = { seq: 4, change: { ids: [a.id], read_at: null, snoozed_until: null }, unread_count: 1 };
    expect(await syncB.next()).toEqual(wakeChange);
    await syncRead.next(); // the snooze
    expect(await syncRead.next()).toEqual(wakeChange);
    const b = await deliver(user.id, { templateId: TEMPLATE_B });
    expect(await syncB.next()).toMatchObject({ seq: 5, notification: { id: b.id } });
    expect(await plainA.quiet()).toBe(true);
    expect(await syncRead.quiet()).toBe(true); // a new notification is unread: not for a read-only socket
  });
});

describe("resume with after_seq (docs/inbox.md, Sequenced sync: resume)", () => {
  it("replays exactly what the socket missed (its filters, format and sync), in order, then live frames, nothing twice", async () => {
    const user = await createUser();
    const refSync = await watch("?sync=true", auth(user));
    const refA = await watch(`?templates=${TEMPLATE_A}&format=plaintext`, auth(user));
    const a = await deliver(user.id, { templateId: TEMPLATE_A, title: "**A**" });
    const b = await deliver(user.id, { templateId: TEMPLATE_B });
    await setRead(user.token, a.id, true);
    await snooze(user.token, a.id, fromNow(DAY));
    await setArchived(user.token, b.id, true);
    await snooze(user.token, a.id, null); // a wake: refA's notification, refSync's too
    await bulk(user.token, { action: "unread", filter: { archived: "include" } });
    await markAllRead(user.token);
    await deliver(user.id, { templateId: TEMPLATE_A, title: "_last_" });
    const seq = (await counts(user.token)).seq;
    expect(seq).toBe(9);
    const syncFrames = await framesUntil(refSync, seq);
    const aFrames = await framesUntil(refA, seq);
    expect(aFrames.map((f) => f.seq)).toEqual([1, 6, 9]);
    expect(aFrames.map((f) => ("notification" in f ? f.notification.title : ""))).toEqual(["A", "A", "last"]);
    // Events are stored: a resume works from a freshly started object too.
    await evictDurableObject(inbox(user.id));

    for (const after of [0, 1, 5, 8, 9]) {
      const s = await watch(`?sync=true&after_seq=${after}`, auth(user));
      const f = await watch(`?templates=${TEMPLATE_A}&format=plaintext&after_seq=${after}`, auth(user));
      expect(after === seq ? [] : await framesUntil(s, seq), `sync after ${after}`).toEqual(syncFrames.filter((fr) => fr.seq > after));
      const expectedA = aFrames.filter((fr) => fr.seq > after);
      expect(expectedA.length === 0 ? [] : await framesUntil(f, seq), `templates after ${after}`).toEqual(expectedA);
      expect(await s.quiet()).toBe(true);
      expect(await f.quiet()).toBe(true);
      s.ws.close();
      f.ws.close();
    }

    // Then the live frames, after the replay.
    const s = await watch("?sync=true&after_seq=7", auth(user));
    const live = await deliver(user.id, { templateId: TEMPLATE_B });
    const frames = await framesUntil(s, seq + 1);
    expect(frames).toEqual([...syncFrames.filter((fr) => fr.seq > 7), await nextFrame(refSync)]);
    expect(frames.at(-1)).toMatchObject({ seq: seq + 1, notification: { id: live.id } });
    expect(await s.quiet()).toBe(true);
  });

  it("list, then watch with after_seq: no gap and nothing twice while changes are in flight; the copy equals the list", async () => {
    const user = await createUser();
    const first = await Promise.all(Array.from({ length: 12 }, (_, i) => deliver(user.id, { templateId: i % 2 ? TEMPLATE_A : TEMPLATE_B })));
    const changes = first.flatMap((n, i) => [
      deliver(user.id),
      i % 3 === 0 ? setRead(user.token, n.id, true) : i % 3 === 1 ? setArchived(user.token, n.id, true) : snooze(user.token, n.id, fromNow(DAY)),
      i % 4 === 0 ? bulk(user.token, { action: "unread", ids: [n.id] }) : snooze(user.token, n.id, null),
    ]);
    const inFlight = Promise.all([...changes, bulk(user.token, { action: "archive", filter: { templates: [TEMPLATE_A] } })]);
    const snapshot = await listAll(user.token);
    const w = await watch(`?sync=true&after_seq=${snapshot.seq}`, auth(user));
    await inFlight;
    const final = await listAll(user.token);
    const frames = final.seq === snapshot.seq ? [] : await framesUntil(w, final.seq);
    expectConsecutive(frames, snapshot.seq);
    expect(await w.quiet()).toBe(true);
    const replica = replicaOf(snapshot.notifications);
    for (const frame of frames) applyFrame(replica, frame);
    expect(byId(replica.values())).toEqual(byId(final.notifications));
  });

  it("a synced copy stays equal to the list through mark-all-as-read while an unread item is snoozed", async () => {
    const user = await createUser();
    const w = await watch("?sync=true", auth(user));
    const a = await deliver(user.id);
    const s = await deliver(user.id);
    await snooze(user.token, s.id, fromNow(DAY));
    await markAllRead(user.token);
    await setRead(user.token, a.id, false);
    const final = await listAll(user.token);
    const replica = new Map<string, InboxNotification>();
    for (const frame of await framesUntil(w, final.seq)) applyFrame(replica, frame);
    // `{all: true}` applies to the items that were unread; a snoozed item is not unread (docs/inbox.md, Item states).
    expect(byId(replica.values())).toEqual(byId(final.notifications));
  });

  it("an after_seq ahead of the inbox's seq is a 400 on after_seq before the upgrade; so is a malformed one", async () => {
    const user = await createUser();
    const headers = { ...auth(user), Upgrade: "websocket" };
    (await watch("?after_seq=0", auth(user))).ws.close();
    await deliver(user.id);
    await deliver(user.id);
    const ahead = await expectError(await call("GET", `${WATCH}?after_seq=3`, { headers }), 400, Messages.validation);
    expect(ahead.validations).toEqual([{ field: "after_seq", detail: InboxMessages.afterSeqAhead(2) }]);
    for (const bad of ["-1", "abc", "1.5", "9007199254740993"]) {
      const err = await expectError(await call("GET", `${WATCH}?after_seq=${bad}`, { headers }), 400, Messages.validation);
      expect(
        err.validations?.map((v) => v.field),
        bad,
      ).toEqual(["after_seq"]);
    }
    const w = await watch("?after_seq=2", auth(user));
    expect(await w.quiet()).toBe(true);
  });

  it("closes with 4409 when the events after after_seq are no longer kept; resumes from the list's seq", async () => {
    const user = await createUser();
    const stub = inbox(user.id);
    for (let i = 0; i < 5; i++) await deliver(user.id);
    // Retention keeps at least the last 10,000 events and 7 days of them: reaching a real prune would take 10,001
    // changes and a clock moved a week on, neither of which a workerd test can do quickly. Deleting the oldest rows of
    // inbox_events leaves the object exactly as such a prune would (the events up to 3 no longer kept).
    await runInDurableObject(stub, (_: UserInbox, state) => {
      state.storage.sql.exec("DELETE FROM inbox_events WHERE seq <= 3");
    });
    for (const after of [0, 2]) {
      const w = await watch(`?sync=true&after_seq=${after}`, auth(user));
      const closed = await w.closed;
      expect(closed.code).toBe(4409);
      expect(closed.reason).toBe(InboxMessages.resync);
      expect(await w.quiet(50)).toBe(true); // nothing half-replayed before the close
    }
    // after_seq=3: everything after it is still kept.
    const w3 = await watch("?after_seq=3", auth(user));
    expect((await framesUntil(w3, 5)).map((f) => f.seq)).toEqual([4, 5]);
    // The client lists, then resumes from the list's seq, and gets the live frames.
    const { seq } = await list(user.token);
    const resumed = await watch(`?after_seq=${seq}`, auth(user));
    const n = await deliver(user.id);
    expect(await nextFrame(resumed)).toMatchObject({ seq: 6, notification: { id: n.id } });
    // With every event gone, any after_seq behind the seq is a 4409 too.
    await runInDurableObject(stub, (_: UserInbox, state) => {
      state.storage.sql.exec("DELETE FROM inbox_events");
    });
    expect((await (await watch("?after_seq=5", auth(user))).closed).code).toBe(4409);
    expect(await (await watch("?after_seq=6", auth(user))).quiet()).toBe(true);
  });

  it("events older than 7 days are kept while they are among the last 10,000", async () => {
    const user = await createUser();
    const stub = inbox(user.id);
    for (let i = 0; i < 3; i++) await deliver(user.id);
    // As if the first events were recorded 8 days ago: the next change prunes only what is both that old and more
    // than 10,000 events back, which these are not.
    await runInDurableObject(stub, (_: UserInbox, state) => {
      state.storage.sql.exec("UPDATE inbox_events SET at = ?", Date.now() - 8 * DAY);
    });
    await deliver(user.id);
    const w = await watch("?after_seq=0", auth(user));
    expect((await framesUntil(w, 4)).map((f) => f.seq)).toEqual([1, 2, 3, 4]);
  });
});
