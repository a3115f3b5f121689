import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { UserInbox } from "../../src/inbox/user-inbox";
import { createUser } from "../helpers";
import { bulk, deliver, fromNow, inbox, type ListBody, list, markAllRead, setArchived, setRead, snooze } from "./inbox-helpers";

// docs/inbox.md, "The last page, kept": the object answers the same list asked again from the page it last sent, and
// every change drops that page first, so a list never shows anything stale.

const HOUR = 60 * 60 * 1000;
/** Each query a dashboard asks again and again (a page of 10): the default filters, and others. */
const QUERIES = ["?", "?read_status=unread&archived=include&snoozed=include&"];

/** A change; `asked` lists the page being watched, for changes that need a step before (kept again after it). */
type Change = (user: { id: string; token: string }, ids: string[], asked: () => Promise<unknown>) => Promise<unknown>;

const CHANGES: Record<string, Change> = {
  "a delivery": (user) => deliver(user.id),
  "a read": (user, [id]) => setRead(user.token, id ?? "", true),
  "an unread": async (user, [id], asked) => {
    await setRead(user.token, id ?? "", true);
    await asked();
    return setRead(user.token, id ?? "", false);
  },
  "an archive": (user, [id]) => setArchived(user.token, id ?? "", true),
  "an unarchive": async (user, [id], asked) => {
    await setArchived(user.token, id ?? "", true);
    await asked();
    return setArchived(user.token, id ?? "", false);
  },
  "a snooze": (user, [id]) => snooze(user.token, id ?? "", fromNow(HOUR)),
  "a wake asked for": async (user, [id], asked) => {
    await snooze(user.token, id ?? "", fromNow(HOUR));
    await asked();
    return snooze(user.token, id ?? "", null);
  },
  "a wake when the snooze is due (the alarm)": async (user, [id], asked) => {
    await snooze(user.token, id ?? "", fromNow(HOUR));
    await asked();
    return runInDurableObject(inbox(user.id), (o: UserInbox) => o.wakeDue(Date.now() + 2 * HOUR));
  },
  "mark-all-as-read": (user) => markAllRead(user.token),
  "a bulk action": (user, ids) => bulk(user.token, { action: "archive", ids }),
};

/**
 * The same page asked twice in a row: the first answer is what the live rows say (the same as a page never asked
 * before: another limit, and every page here holds all of the user's few notifications); the second is the kept page.
 */
async function askedTwice(token: string, query: string): Promise<ListBody> {
  const first = await list(token, `${query}limit=10`);
  expect(first).toEqual(await list(token, `${query}limit=99`));
  expect(await list(token, `${query}limit=10`)).toEqual(first);
  return first;
}

describe("the last page, kept (docs/inbox.md)", () => {
  for (const query of QUERIES) {
    for (const [name, change] of Object.entries(CHANGES)) {
      it(`${name} shows in the next list of the same page (${query}limit=10)`, async () => {
        const user = await createUser();
        const ids = [(await deliver(user.id)).id, (await deliver(user.id)).id];
        const asked = () => askedTwice(user.token, query);
        const before = await asked();

        await change(user, ids, asked);

        const after = await asked();
        expect(after.seq).toBeGreaterThan(before.seq);
      });
    }
  }

  it("answers a page asked again without running its query", async () => {
    const user = await createUser();
    await deliver(user.id);
    const first = await list(user.token);
    // A write behind the object's back (never done by Herald: every change runs in its transaction, which drops the
    // kept page) shows that the second answer comes from memory…
    await runInDurableObject(inbox(user.id), (_o: UserInbox, state) => {
      state.storage.sql.exec("UPDATE inbox_notifications SET title = 'changed behind the object'");
    });
    expect(await list(user.token)).toEqual(first);
    // …and a different page (another limit) is read from the rows.
    expect((await list(user.token, "?limit=5")).notifications[0]?.title).toBe("changed behind the object");
  });

  it("keeps nothing over its size limit: a long page is read from the rows every time", async () => {
    const user = await createUser();
    for (let i = 0; i < 4; i++) await deliver(user.id, { content: "x".repeat(10_000) });
    const first = await list(user.token);
    expect(JSON.stringify(first.notifications).length).toBeGreaterThan(32 * 1024);
    await runInDurableObject(inbox(user.id), (_o: UserInbox, state) => {
      state.storage.sql.exec("UPDATE inbox_notifications SET title = 'changed behind the object'");
    });
    expect((await list(user.token)).notifications.map((n) => n.title)).toEqual(first.notifications.map(() => "changed behind the object"));
  });
});
