import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { InboxMessages } from "../../src/inbox/messages";
import type { InboxLimits, InboxNotification } from "../../src/inbox/model";
import { SWEEP_PAGE } from "../../src/inbox/retention";
import type { UserInbox } from "../../src/inbox/user-inbox";
import { createUser, type TestUser } from "../helpers";
import {
  applyFrame,
  bulk,
  counts,
  countsOf,
  deliver,
  delivery,
  type Frame,
  framesUntil,
  fromNow,
  inbox,
  LIMITS,
  list,
  listAll,
  setArchived,
  setRead,
  snooze,
  TEMPLATE_B,
  watch,
} from "./inbox-helpers";

// docs/inbox.md, "Retention": read and archived items older than INBOX_RETENTION, and the oldest of them beyond
// INBOX_MAX_ITEMS, give way, a page per alarm run; unread and snoozed items never do. The counts and `seq` stay exact,
// a removal is an event like any change, and a resume from before it still works.
//
// The clock in workerd cannot be moved, so items are dated in the past instead (deliveries carry their created_at),
// and limits travel with each delivery as the producers send them, so a test chooses them per inbox.

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;
const ago = (ms: number) => new Date(Date.now() - ms).toISOString();
const auth = (user: TestUser) => ({ "Service-Session-Token": user.token });

/**
 * Limits under which nothing a test dates in the past is old yet: a test sets its inbox up under them, then delivers
 * under the suite's own (LIMITS), which the object keeps from then on, so that every sweep happens where the test says.
 */
const LONGER: InboxLimits = { ...LIMITS, retentionMs: 100 * LIMITS.retentionMs };

const alarmOf = (userId: string) => runInDurableObject(inbox(userId), (_: UserInbox, state) => state.storage.getAlarm());

/**
 * Runs the object's alarm for as long as it is due, as the platform does (which may fire it on its own meanwhile: the
 * outcome is the same). Returns once nothing is due: every page of a sweep has run.
 */
async function settle(userId: string): Promise<void> {
  for (let runs = 0; runs < 100; runs++) {
    const at = await alarmOf(userId);
    if (at === null || at > Date.now()) return;
    await runDurableObjectAlarm(inbox(userId));
  }
  throw new Error("the alarm was still due after 100 runs");
}

/** The counts endpoint agrees with the list, at the same seq (docs/inbox.md, "Exact counts"), and both are returned. */
async function expectExact(user: TestUser) {
  const listed = await listAll(user.token);
  const counted = await counts(user.token);
  expect(counted).toEqual(countsOf(listed.notifications, listed.seq));
  return { listed, counted };
}

const idsOf = (notifications: InboxNotification[]) => notifications.map((n) => n.id);
const byId = (x: InboxNotification, y: InboxNotification) => x.id.localeCompare(y.id);
const removalOf = (frame: Frame | undefined) => (frame && "change" in frame && "removed" in frame.change ? frame.change : undefined);

describe('retention by age (docs/inbox.md, "Retention")', () => {
  it("read and archived items older than INBOX_RETENTION give way; unread ones are kept however old, snoozed and newer ones too", async () => {
    const user = await createUser();
    const old = ago(LIMITS.retentionMs + DAY);
    const oldUnread = await deliver(user.id, { createdAt: ago(10 * LIMITS.retentionMs) }, LONGER);
    const oldRead = await deliver(user.id, { createdAt: old }, LONGER);
    const oldArchived = await deliver(user.id, { createdAt: old, templateId: TEMPLATE_B }, LONGER);
    const oldSnoozed = await deliver(user.id, { createdAt: old }, LONGER);
    const newerRead = await deliver(user.id, { createdAt: ago(LIMITS.retentionMs - DAY) }, LONGER);
    const newerArchived = await deliver(user.id, {}, LONGER);
    for (const n of [oldRead, oldSnoozed, newerRead]) expect((await setRead(user.token, n.id, true)).status).toBe(200);
    for (const n of [oldArchived, newerArchived]) expect((await setArchived(user.token, n.id, true)).status).toBe(200);
    // Read, then snoozed: it comes back unread when it wakes, so it is not done with.
    expect((await snooze(user.token, oldSnoozed.id, fromNow(DAY))).status).toBe(200);
    await settle(user.id);
    const before = await counts(user.token);
    expect(before.total).toBe(6);

    // A delivery under the suite's limits: the object keeps them, and the sweep they call for is due at once.
    const newest = await deliver(user.id);
    await settle(user.id);

    const { listed, counted } = await expectExact(user);
    expect(idsOf(listed.notifications).sort()).toEqual([oldUnread, oldSnoozed, newerRead, newerArchived, newest].map((n) => n.id).sort());
    // The delivery, then one event for the removal: the counts are true at the seq after it.
    expect(counted).toMatchObject({ total: 5, unread: 2, archived: 1, snoozed: 1, seq: before.seq + 2 });
    expect(counted.unread).toBe(before.unread + 1);
    // The template whose only item went leaves the per-template counts, as it left the list.
    expect(counted.by_template.map((t) => t.template_id)).not.toContain(TEMPLATE_B);
    // Nothing else is due for a day: the finished sweep is recorded, and the next one for age waits for it.
    expect(await alarmOf(user.id)).toBeGreaterThan(Date.now() + DAY - MINUTE);
  });

  it("a page at a time: more removable rows than SWEEP_PAGE are removed across several alarm runs, oldest first", async () => {
    const user = await createUser();
    const w = await watch("?sync=true", auth(user));
    const count = 2 * SWEEP_PAGE + SWEEP_PAGE / 2;
    const base = Date.now() - LIMITS.retentionMs - 30 * DAY;
    const made = Array.from({ length: count }, (_, i) => delivery(user.id, { createdAt: new Date(base + i * MINUTE).toISOString() }));
    // Delivered inside the object, one call: the pipeline's own entry point without a round trip per item.
    await runInDurableObject(inbox(user.id), async (o: UserInbox) => {
      for (const d of made) await o.deliver(d, LIMITS);
    });
    const kept = await deliver(user.id);
    // Reading them all lets them go: the read re-arms the alarm, and the sweep is due at once.
    expect((await bulk(user.token, { action: "read", filter: { read_status: "unread" } })).status).toBe(200);
    await settle(user.id);

    const { counted } = await expectExact(user);
    expect(counted.total).toBe(1);
    const frames = await framesUntil(w, counted.seq);
    const removals = frames.flatMap((f) => removalOf(f) ?? []);
    // One event per run, each at most a page, together every item in the order it was delivered.
    expect(removals.map((r) => r.ids.length)).toEqual([SWEEP_PAGE, SWEEP_PAGE, SWEEP_PAGE / 2]);
    expect(removals.flatMap((r) => r.ids)).toEqual(made.map((d) => d.id));
    expect(idsOf((await listAll(user.token)).notifications)).toEqual([kept.id]);
    w.ws.close();
  }, 60_000);
});

describe('retention on a clock the test moves (docs/inbox.md, "Retention")', () => {
  it("items read today go once the clock passes INBOX_RETENTION, unread ones stay; the counts equal a full listing; a resume from before replays the removal", async () => {
    const user = await createUser();
    const made = [];
    for (let i = 0; i < 5; i++) made.push(await deliver(user.id, { createdAt: new Date().toISOString() }));
    const [a, b, c, d, unread] = made.map((n) => n.id) as [string, string, string, string, string];
    expect((await bulk(user.token, { action: "read", ids: [a, b, c] })).status).toBe(200);
    expect((await setArchived(user.token, d, true)).status).toBe(200);
    const before = await counts(user.token);

    // Today, and a day short of the retention: nothing is old enough.
    expect(await inbox(user.id).sweep(Date.now(), LIMITS)).toEqual({ removed: 0, more: false });
    expect(await inbox(user.id).sweep(Date.now() + LIMITS.retentionMs - DAY, LIMITS)).toEqual({ removed: 0, more: false });
    // A day past it: every read or archived item goes, in one event; the unread one stays however old it is.
    expect(await inbox(user.id).sweep(Date.now() + LIMITS.retentionMs + DAY, LIMITS)).toEqual({ removed: 4, more: false });
    expect(await inbox(user.id).sweep(Date.now() + 10 * LIMITS.retentionMs, LIMITS)).toEqual({ removed: 0, more: false });

    const { listed, counted } = await expectExact(user);
    expect(idsOf(listed.notifications)).toEqual([unread]);
    expect(counted).toMatchObject({ total: 1, unread: 1, archived: 0, seq: before.seq + 1 });
    const resumed = await watch(`?sync=true&after_seq=${before.seq}`, auth(user));
    const [removal] = await framesUntil(resumed, before.seq + 1);
    expect(removalOf(removal)).toEqual({ ids: [a, b, c, d], removed: true });
    resumed.ws.close();
  });
});

describe('retention by count (docs/inbox.md, "Retention")', () => {
  it("past INBOX_MAX_ITEMS the oldest read or archived items give way, scheduled by the delivery that went past it", async () => {
    const user = await createUser();
    const n = [];
    for (let i = 0; i < 8; i++) n.push(await deliver(user.id));
    const [n1, n2, n3, n4, n5, n6, n7, n8] = n.map((d) => d.id) as [string, string, string, string, string, string, string, string];
    expect(await bulk(user.token, { action: "read", ids: [n1, n4, n6] }).then((r) => r.status)).toBe(200);
    expect(await bulk(user.token, { action: "archive", ids: [n3, n7] }).then((r) => r.status)).toBe(200);
    // Under the suite's limits nothing is due: the items are recent and far fewer than the cap.
    await settle(user.id);
    expect((await counts(user.token)).total).toBe(8);

    // A delivery under a cap of 5: 9 items, so the 4 oldest of those that may give way do.
    const capped: InboxLimits = { ...LIMITS, maxItems: 5 };
    const n9 = (await deliver(user.id, {}, capped)).id;
    await settle(user.id);
    let { listed, counted } = await expectExact(user);
    expect(idsOf(listed.notifications)).toEqual([n9, n8, n7, n5, n2]);
    expect(counted).toMatchObject({ total: 5, unread: 4, archived: 1 });

    // Unread items are kept however far past the cap: only the archived n7 can go, and then nothing is left due.
    const n10 = (await deliver(user.id, {}, capped)).id;
    const n11 = (await deliver(user.id, {}, capped)).id;
    await settle(user.id);
    ({ listed, counted } = await expectExact(user));
    expect(idsOf(listed.notifications)).toEqual([n11, n10, n9, n8, n5, n2]);
    expect(counted).toMatchObject({ total: 6, unread: 6, archived: 0 });
    expect(await alarmOf(user.id)).toBeNull();

    // Reading one lets it go at once: the inbox is still past its cap.
    expect((await setRead(user.token, n5, true)).status).toBe(200);
    await settle(user.id);
    ({ listed } = await expectExact(user));
    expect(idsOf(listed.notifications)).toEqual([n11, n10, n9, n8, n2]);
  });

  it("a removed item stays removed: a redelivery stores nothing, and read-aware e-mail still answers that it was read", async () => {
    const user = await createUser();
    const first = await deliver(user.id);
    expect((await setRead(user.token, first.id, true)).status).toBe(200);
    await deliver(user.id, {}, { ...LIMITS, maxItems: 1 });
    await settle(user.id);
    expect(idsOf((await listAll(user.token)).notifications)).not.toContain(first.id);
    // Retried producers deliver the same message again (docs/inbox.md, "Retention").
    expect(await inbox(user.id).deliver(first, LIMITS)).toEqual({ stored: false, unreadCount: 1 });
    expect(idsOf((await listAll(user.token)).notifications)).not.toContain(first.id);
    // Not "absent, so send": it was read (docs/broadcasts.md, "Read-aware e-mail").
    expect(await inbox(user.id).emailDecision(first.id)).toEqual({ send: false });
  });
});

describe('resuming across a removal (docs/inbox.md, "Retention")', () => {
  it("a synced resume from before it replays the removal; a list cursor naming a removed item pages on; 4409 once the events are gone", async () => {
    const user = await createUser();
    const live = await watch("?sync=true", auth(user));
    const d = await deliver(user.id, { createdAt: ago(LIMITS.retentionMs + 3 * DAY) }, LONGER);
    const a = await deliver(user.id, { createdAt: ago(LIMITS.retentionMs + 2 * DAY) }, LONGER);
    const b = await deliver(user.id, { createdAt: ago(LIMITS.retentionMs + DAY) }, LONGER);
    const c = await deliver(user.id, {}, LONGER);
    const listedAt4 = await listAll(user.token);
    expect(listedAt4.seq).toBe(4);
    const firstPage = await list(user.token, "?limit=2");
    expect(idsOf(firstPage.notifications)).toEqual([c.id, b.id]);

    expect((await setRead(user.token, a.id, true)).status).toBe(200);
    expect((await setRead(user.token, b.id, true)).status).toBe(200);
    const e = await deliver(user.id);
    await settle(user.id);
    const { listed, counted } = await expectExact(user);
    expect(counted).toMatchObject({ total: 3, unread: 3, seq: 8 });
    expect(idsOf(listed.notifications)).toEqual([e.id, c.id, d.id]);
    const removal = (await framesUntil(live, 8)).at(-1);
    expect(removal).toEqual({ seq: 8, change: { ids: [a.id, b.id], removed: true }, unread_count: 3 });

    // The next page after b, which is gone: strictly older than b, so d.
    expect(idsOf((await list(user.token, `?limit=2&starting_before=${b.id}`)).notifications)).toEqual([d.id]);

    // A synced client that listed at seq 4 and resumes from it ends with the list's state.
    const resumed = await watch("?sync=true&after_seq=4", auth(user));
    const replica = new Map(listedAt4.notifications.map((n) => [n.id, n]));
    for (const frame of await framesUntil(resumed, 8)) applyFrame(replica, frame);
    expect([...replica.values()].sort(byId)).toEqual([...listed.notifications].sort(byId));
    // Without sync, the resume replays the notifications as they arrived, and no change.
    const plain = await watch("?after_seq=0", auth(user));
    expect((await framesUntil(plain, 7)).map((f) => f.seq)).toEqual([1, 2, 3, 4, 7]);
    expect(await plain.quiet()).toBe(true);

    // Once the log no longer holds the events after 4 (docs/inbox.md, "Sequenced sync and resume"), as after its own
    // prune: 4409, and the client lists again and resumes from the list's seq.
    await runInDurableObject(inbox(user.id), (_: UserInbox, state) => {
      state.storage.sql.exec("DELETE FROM inbox_events WHERE seq <= 5");
    });
    const tooOld = await watch("?sync=true&after_seq=4", auth(user));
    const closed = await tooOld.closed;
    expect([closed.code, closed.reason]).toEqual([4409, InboxMessages.resync]);
    const again = await watch(`?sync=true&after_seq=${(await list(user.token)).seq}`, auth(user));
    const later = await deliver(user.id);
    expect(await again.next()).toMatchObject({ seq: 9, notification: { id: later.id } });
    for (const w of [live, resumed, plain, again]) w.ws.close();
  });
});

describe('the alarm, shared (docs/inbox.md, "The alarm")', () => {
  it("a sweep, a snooze that is due and a watch whose session expires all run from the one alarm", async () => {
    const user = await createUser();
    const old = await deliver(user.id, { createdAt: ago(LIMITS.retentionMs + DAY) });
    const snoozed = await deliver(user.id);
    expect((await snooze(user.token, snoozed.id, fromNow(60 * MINUTE))).status).toBe(200);
    // The session ends in a few seconds: the socket records it, and the alarm reads D1 when it comes.
    const keyId = user.token.split("-")[0] ?? "";
    await env.DB.prepare("UPDATE api_keys SET expires_at = ? WHERE id = ?").bind(fromNow(5_000), keyId).run();
    const w = await watch("?sync=true", auth(user));
    // As if the hour had passed: the snooze is due (the clock cannot be moved, so the snooze is).
    await runInDurableObject(inbox(user.id), (_: UserInbox, state) => {
      state.storage.sql.exec("UPDATE inbox_notifications SET snoozed_until = ? WHERE id = ?", ago(1_000), snoozed.id);
    });
    // Reading the old item re-arms the alarm for the earliest of the three: both the wake and the sweep are due now.
    expect((await setRead(user.token, old.id, true)).status).toBe(200);
    await settle(user.id);

    // The read (4), then the alarm's duties in their order: the wake (5), the removal (6).
    const frames = await framesUntil(w, 6);
    expect(frames.map((f) => f.seq)).toEqual([4, 5, 6]);
    expect(frames[1]).toMatchObject({ notification: { id: snoozed.id, read_at: null, snoozed_until: null } });
    expect(removalOf(frames[2])).toEqual({ ids: [old.id], removed: true });
    expect(idsOf((await listAll(user.token)).notifications)).toEqual([snoozed.id]);
    // And the session's expiry still closes the socket, from the same alarm.
    const closed = await w.closed;
    expect([closed.code, closed.reason]).toEqual([4401, InboxMessages.sessionExpired]);
  });
});
