/**
 * The delivery status machine (src/notifications/status.ts, docs/api.md "Notification delivery"): the table of
 * allowed transitions has the shape a delivery log needs, and `moveMessages` — the one writer of a message's status
 * after enqueue — changes a row exactly when the table allows the move, for every pair of statuses.
 */
import { env } from "cloudflare:workers";
import { eq, inArray } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { database } from "../../src/db/client";
import { MESSAGE_STATUSES, type MessageStatus, notificationMessages } from "../../src/db/schema";
import { DELIVERY_TRANSITIONS, INITIAL_STATUSES, moveMessages, sourcesOf } from "../../src/notifications/status";
import { messageRow } from "../fixtures/message-row";

const FINISHED: MessageStatus[] = ["sent", "permanent_failure", "inhibited", "skipped"];
const exits = (from: MessageStatus): readonly MessageStatus[] => DELIVERY_TRANSITIONS[from];

/** Every status reachable from `start` by allowed moves (including itself). */
function reachable(start: MessageStatus): Set<MessageStatus> {
  const seen = new Set<MessageStatus>([start]);
  const queue = [start];
  for (let next = queue.shift(); next; next = queue.shift()) {
    for (const to of exits(next)) {
      if (!seen.has(to)) {
        seen.add(to);
        queue.push(to);
      }
    }
  }
  return seen;
}

describe("the transition table", () => {
  it("names every status, and only finished messages have no way out", () => {
    expect(Object.keys(DELIVERY_TRANSITIONS).sort()).toEqual([...MESSAGE_STATUSES].sort());
    expect(MESSAGE_STATUSES.filter((s) => exits(s).length === 0).sort()).toEqual([...FINISHED].sort());
  });

  it("never moves a message to the status it has, nor back to pending", () => {
    for (const from of MESSAGE_STATUSES) {
      expect(exits(from), from).not.toContain(from);
      expect(exits(from), from).not.toContain("pending");
    }
  });

  it("reaches every status from where enqueue starts a message, and a finished one from every status", () => {
    const fromStart = new Set(INITIAL_STATUSES.flatMap((s) => [...reachable(s)]));
    expect([...fromStart].sort()).toEqual([...MESSAGE_STATUSES].sort());
    for (const status of MESSAGE_STATUSES) {
      expect(
        FINISHED.some((done) => reachable(status).has(done)),
        `${status} can finish`,
      ).toBe(true);
    }
  });

  it("sends only through a lease or the inbox fast path, and retries only what a lease held", () => {
    expect(sourcesOf("sent").sort()).toEqual(["leased", "pending"]);
    expect(sourcesOf("temporary_failure")).toEqual(["leased"]);
    expect(sourcesOf("leased").sort()).toEqual(["pending", "temporary_failure"]);
    expect(sourcesOf("inhibited")).toEqual([]);
  });

  it("skips a leased read-aware e-mail (the decision is taken under the lease, docs/broadcasts.md), or a pending copy a digest left out (docs/schedule.md)", () => {
    expect(sourcesOf("skipped")).toEqual(["pending", "leased"]);
    expect(exits("skipped")).toEqual([]);
  });
});

describe("moveMessages", () => {
  const db = database(env.DB);

  async function messageIn(status: MessageStatus): Promise<string> {
    const row = messageRow({ status });
    await db.insert(notificationMessages).values(row);
    return row.id;
  }

  it("changes a row exactly when the table allows the move, for every pair of statuses", async () => {
    const cases = MESSAGE_STATUSES.flatMap((from) => MESSAGE_STATUSES.map((to) => ({ from, to })));
    const ids = await Promise.all(cases.map(({ from }) => messageIn(from)));
    for (const [i, { to }] of cases.entries()) await moveMessages(db, eq(notificationMessages.id, ids[i] ?? ""), to, { statusReason: "moved" });
    const rows = await db
      .select({ id: notificationMessages.id, status: notificationMessages.status })
      .from(notificationMessages)
      .where(inArray(notificationMessages.id, ids));
    const after = new Map(rows.map((r) => [r.id, r.status]));
    for (const [i, { from, to }] of cases.entries()) {
      const allowed = exits(from).includes(to);
      expect(after.get(ids[i] ?? ""), `${from} → ${to}`).toBe(allowed ? to : from);
    }
  });

  it("narrowed to the writer's own view, moves nothing the writer does not hold", async () => {
    const pending = await messageIn("pending");
    // The lease holder finishing a send: a message nobody leased stays as it is.
    await moveMessages(db, eq(notificationMessages.id, pending), "sent", {}, ["leased"]);
    const [row] = await db.select().from(notificationMessages).where(eq(notificationMessages.id, pending));
    expect(row?.status).toBe("pending");
    // @ts-expect-error a finished message may not be leased again: the type refuses the move.
    moveMessages(db, eq(notificationMessages.id, pending), "leased", {}, ["sent"]);
  });
});
