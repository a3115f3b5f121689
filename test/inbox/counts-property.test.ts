import { runInDurableObject } from "cloudflare:test";
import * as fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import type { InboxLimits, InboxNotification } from "../../src/inbox/model";
import { SWEEP_PAGE } from "../../src/inbox/retention";
import type { BulkAction } from "../../src/inbox/states";
import type { UserInbox } from "../../src/inbox/user-inbox";
import { call, createUser, json, type TestUser } from "../helpers";
import {
  applyFrame,
  type BulkFilter,
  bulk,
  counts,
  countsOf,
  deliver,
  framesUntil,
  type ItemBody,
  inbox,
  LIMITS,
  type ListBody,
  list,
  listAll,
  markAllRead,
  setArchived,
  setRead,
  snooze,
  TEMPLATE_A,
  TEMPLATE_B,
  watch,
} from "./inbox-helpers";

// docs/inbox.md, "Exact counts": the counters are kept by difference in the transaction of each change, never counted
// when asked. This file drives random sequences (and concurrent batches) of every kind of change and checks that each
// count equals what paging through the list finds (drift 0), at the same seq, and that every item's state is what an
// independent model of the rules in docs/inbox.md ("Item states") says. The model below is written from that table,
// not from src/inbox/states.ts. Between changes it also lists with random filters (several templates and targets,
// some matching nothing, with read_status, archived and snoozed) in small pages, and checks each page against the
// model: the filters' indexes and side table (docs/inbox.md, "Indexes") must select what the rules say, in order.
// Retention sweeps (docs/inbox.md, "Retention") run between the changes too, under random caps and cutoffs: the model
// removes what the rules there say, and the counts, the seq and a synced copy must follow.

const TEMPLATES = [TEMPLATE_A, TEMPLATE_B, "5d0f4b3e-9a57-4c2e-8a43-2f0c8f1e6b7d"] as const;
const TARGETS = ["0b8e5f0c-3a61-4e8b-9f3c-6d2a1c7e4b90", "7c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f"] as const;
/** What filters choose from: the above and a template and a target that no notification carries. */
const FILTER_TEMPLATES = [...TEMPLATES, "e2a7c9d4-0b1f-4e3a-9c5d-7f8e6a4b2c10"];
const FILTER_TARGETS = [...TARGETS, "a3f1e5d7-9b2c-4d6e-8f0a-1c3e5b7d9f24"];
/**
 * Pages a filtered listing checks, at most, of 1 to 3 items: small, so that even a narrow filter's few matches cross
 * cursors (equal created_at included), without paging the whole inbox.
 */
const LIST_PAGES = 8;
const MINUTE = 60_000;

// ---- The model -------------------------------------------------------------------------------------------------

/** A timestamp the server chose: somewhere in [from, to] (epoch ms), until a listing tells which. */
interface Fresh {
  from: number;
  to: number;
}
type Stamp = string | Fresh | null;

interface ModelItem {
  id: string;
  templateId: string;
  targets: string[];
  createdAt: string;
  readAt: Stamp;
  archivedAt: Stamp;
  snoozedUntil: string | null;
}

/** A list query's filters (absent ones take the list's defaults). */
type ListQuery = BulkFilter & { snoozed?: "exclude" | "include" | "only" };

/** Newest first, as the list orders: created_at, then id, both compared as SQLite compares text. */
const newestFirst = (a: ModelItem, b: ModelItem) =>
  a.createdAt !== b.createdAt ? (a.createdAt < b.createdAt ? 1 : -1) : a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
const oldestFirst = (a: ModelItem, b: ModelItem) => newestFirst(b, a);

type Action = { kind: BulkAction } | { kind: "snooze"; until: string } | { kind: "wake" };
type Field = "readAt" | "archivedAt" | "snoozedUntil";

/** The table of docs/inbox.md, "Item states", one row per action. */
function act(item: ModelItem, action: Action, now: Fresh): ModelItem {
  switch (action.kind) {
    case "read":
      return { ...item, readAt: item.readAt ?? now };
    case "unread":
      return { ...item, readAt: null, archivedAt: null };
    case "archive":
      return { ...item, readAt: item.readAt ?? now, archivedAt: item.archivedAt ?? now, snoozedUntil: null };
    case "unarchive":
      return { ...item, archivedAt: null };
    case "snooze":
      return { ...item, archivedAt: null, snoozedUntil: action.until };
    case "wake":
      return item.snoozedUntil === null ? item : { ...item, readAt: null, snoozedUntil: null };
  }
}

/** The fields an action changed (a kept timestamp is the same value). */
const changedFields = (before: ModelItem, after: ModelItem): Field[] =>
  (["readAt", "archivedAt", "snoozedUntil"] as const).filter((f) => before[f] !== after[f]);

const isUnread = (m: ModelItem) => m.readAt === null && m.snoozedUntil === null;

class Model {
  readonly items = new Map<string, ModelItem>();
  /** Every id, in delivery order: commands pick items by index. */
  readonly order: string[] = [];
  seq = 0;

  get unread(): number {
    return [...this.items.values()].filter(isUnread).length;
  }

  pick(index: number): string | undefined {
    return this.order.length === 0 ? undefined : this.order[index % this.order.length];
  }

  add(id: string, templateId: string, targets: string[], createdAt: string): void {
    this.items.set(id, { id, templateId, targets, createdAt, readAt: null, archivedAt: null, snoozedUntil: null });
    this.order.push(id);
    this.seq += 1;
  }

  /**
   * Applies an action to these items as one transaction: returns how many changed. Its events: one per woken item
   * for a wake, else one per kind of change (the set of fields that changed), as docs/inbox.md describes.
   */
  apply(ids: string[], action: Action, now: Fresh): number {
    const kinds = new Set<string>();
    let updated = 0;
    for (const id of new Set(ids)) {
      const before = this.items.get(id);
      if (!before) continue;
      const after = act(before, action, now);
      const fields = changedFields(before, after);
      if (fields.length === 0) continue;
      this.items.set(id, after);
      updated += 1;
      kinds.add(action.kind === "wake" ? id : fields.join());
    }
    this.seq += kinds.size;
    return updated;
  }

  /**
   * What the list shows for a query, newest first: archived and snoozed items per `archived` and `snoozed` (left out
   * by default), read or unread per `read_status` (read_at alone), any one of the templates, every one of the targets.
   */
  listed(filter: ListQuery): string[] {
    const kept = (inclusion: ListQuery["snoozed"], is: boolean) =>
      (inclusion ?? "exclude") === "include" || ((inclusion ?? "exclude") === "only") === is;
    return [...this.items.values()]
      .filter((m) => kept(filter.snoozed, m.snoozedUntil !== null))
      .filter((m) => kept(filter.archived, m.archivedAt !== null))
      .filter((m) => (filter.read_status ?? "all") === "all" || (filter.read_status === "read") === (m.readAt !== null))
      .filter((m) => (filter.templates ?? []).length === 0 || (filter.templates ?? []).includes(m.templateId))
      .filter((m) => (filter.targets ?? []).every((t) => m.targets.includes(t)))
      .sort(newestFirst)
      .map((m) => m.id);
  }

  /** What a bulk filter selects: what the list shows for it, snoozed items always left out. */
  select(filter: BulkFilter): string[] {
    return this.listed({ ...filter, snoozed: "exclude" });
  }

  /** mark-all-as-read: every unread item (neither read nor snoozed) is read; one event when there was any. */
  markAll(now: Fresh): void {
    const unread = [...this.items.values()].filter(isUnread);
    for (const m of unread) this.items.set(m.id, { ...m, readAt: now });
    if (unread.length > 0) this.seq += 1;
  }

  /**
   * A retention sweep run until it has nothing more (docs/inbox.md, "Retention"): of the items that may give way, read
   * and not snoozed, oldest first, those created before `cutoff` and as many as the inbox holds beyond `cap` go; one
   * event per page of SWEEP_PAGE. Returns how many went.
   */
  sweep(cap: number, cutoff: string): number {
    const mayGo = [...this.items.values()].filter((m) => m.readAt !== null && m.snoozedUntil === null).sort(oldestFirst);
    const excess = Math.max(0, this.items.size - cap);
    const gone = mayGo.filter((m, i) => i < excess || m.createdAt < cutoff);
    for (const m of gone) this.items.delete(m.id);
    this.order.splice(0, this.order.length, ...this.order.filter((id) => this.items.has(id)));
    this.seq += Math.ceil(gone.length / SWEEP_PAGE);
    return gone.length;
  }

  /** The created_at of the item that `index` picks among all, oldest first: a cutoff that falls among the items. */
  createdAtAt(index: number): string | undefined {
    const all = [...this.items.values()].sort(oldestFirst);
    return all.length === 0 ? undefined : all[index % all.length]?.createdAt;
  }

  /** Keeps only these ids: the items a sweep made while other changes ran left (the list says which). */
  keepOnly(ids: Set<string>): void {
    for (const id of [...this.items.keys()]) if (!ids.has(id)) this.items.delete(id);
    this.order.splice(0, this.order.length, ...this.order.filter((id) => ids.has(id)));
  }

  /** The items whose snooze is due at `at` (epoch ms). */
  due(at: number): string[] {
    return [...this.items.values()].filter((m) => m.snoozedUntil !== null && Date.parse(m.snoozedUntil) <= at).map((m) => m.id);
  }
}

/** The server's value for a model stamp: a fresh one matches any timestamp in its window. */
function expectedStamp(stamp: Stamp, actual: string | null): string | null {
  if (stamp === null || typeof stamp === "string") return stamp;
  const at = actual === null ? Number.NaN : Date.parse(actual);
  return at >= stamp.from && at <= stamp.to ? actual : `a timestamp in [${new Date(stamp.from).toISOString()}, ${new Date(stamp.to).toISOString()}]`;
}

/** Checks the server's item against the model's, then pins the model's fresh stamps to the server's values. */
function expectItem(model: Model, n: InboxNotification): void {
  const m = model.items.get(n.id);
  expect(m, n.id).toBeDefined();
  if (!m) return;
  const actual = {
    id: n.id,
    template_id: n.template_id,
    targets: n.targets,
    read_at: n.read_at,
    archived_at: n.archived_at,
    snoozed_until: n.snoozed_until,
  };
  expect(actual).toEqual({
    id: m.id,
    template_id: m.templateId,
    targets: m.targets,
    read_at: expectedStamp(m.readAt, n.read_at),
    archived_at: expectedStamp(m.archivedAt, n.archived_at),
    snoozed_until: m.snoozedUntil,
  });
  model.items.set(n.id, { ...m, readAt: n.read_at, archivedAt: n.archived_at });
}

/** Drift 0: every count equals what the list shows, at the same seq; and every listed item is as the model says. */
async function expectAgree(user: TestUser, model: Model | undefined): Promise<ListBody> {
  const listed = await listAll(user.token);
  const counted = await counts(user.token);
  expect(counted).toEqual(countsOf(listed.notifications, listed.seq));
  expect(listed.unread_count).toBe(counted.unread);
  for (const n of listed.notifications) {
    // The two invariants of docs/inbox.md: an archived item is read; no item is both archived and snoozed.
    if (n.archived_at !== null) expect(n.read_at, n.id).not.toBeNull();
    expect(n.archived_at !== null && n.snoozed_until !== null, n.id).toBe(false);
  }
  if (model) {
    expect(listed.seq).toBe(model.seq);
    expect(listed.notifications.map((n) => n.id).sort()).toEqual([...model.items.keys()].sort());
    for (const n of listed.notifications) expectItem(model, n);
  }
  return listed;
}

// ---- The commands ----------------------------------------------------------------------------------------------

type Single =
  | { kind: "read" | "unread" | "archive" | "unarchive"; pick: number }
  | { kind: "snooze"; pick: number; minutes: number }
  | { kind: "unsnooze"; pick: number };
type Deliver = { kind: "deliver"; count: number; template: number; targets: number[]; sameTime: boolean };
type Command =
  | Single
  | Deliver
  | { kind: "wakeDue"; minutes: number }
  | { kind: "bulkIds"; action: BulkAction; picks: number[]; foreign: boolean }
  | { kind: "bulkFilter"; action: BulkAction; filter: BulkFilter }
  | { kind: "markAll" }
  /** A filtered listing, paged `limit` at a time: changes nothing, checked against the model. */
  | { kind: "list"; filter: ListQuery; limit: number }
  /** Changes to distinct items and deliveries at once: they commute, so the model can apply them in any order. */
  | { kind: "together"; ops: (Single | Deliver)[] }
  /** A retention sweep under a cap, with a cutoff at a picked item's created_at (or before every item). */
  | { kind: "sweep"; cap: number; cut: number | null };

const pick = fc.nat({ max: 1_000 });
/** Caps below the sizes the commands reach, mostly, and one that nothing reaches. */
const sweepCap = fc.oneof({ weight: 3, arbitrary: fc.integer({ min: 1, max: 20 }) }, fc.constant(100_000));
/** Snoozes from 2 minutes to about a year: always in range when they arrive; wakes reach some, all or none of them. */
const snoozeMinutes = fc.constantFrom(2, 30, 600, 20_000, 527_000);
const subset = <T>(values: readonly T[]) => fc.subarray([...values]);
const bulkAction = fc.constantFrom<BulkAction>("read", "unread", "archive", "unarchive");

const single: fc.Arbitrary<Single> = fc.oneof(
  fc.record({ kind: fc.constantFrom("read", "unread", "archive", "unarchive"), pick }),
  fc.record({ kind: fc.constant("snooze"), pick, minutes: snoozeMinutes }),
  fc.record({ kind: fc.constant("unsnooze"), pick }),
);
const deliverCommand = (maxCount: number): fc.Arbitrary<Deliver> =>
  fc.record({
    kind: fc.constant("deliver"),
    count: fc.integer({ min: 1, max: maxCount }),
    template: fc.nat({ max: TEMPLATES.length - 1 }),
    targets: subset([0, 1]),
    sameTime: fc.boolean(),
  });
const filter: fc.Arbitrary<BulkFilter> = fc.record(
  {
    templates: subset(FILTER_TEMPLATES),
    targets: subset(FILTER_TARGETS),
    read_status: fc.constantFrom("all", "read", "unread"),
    archived: fc.constantFrom("exclude", "include", "only"),
  },
  { requiredKeys: [] },
);
/** Mostly `include`, so that a listing with templates and targets still has pages to cross. */
const inclusion = fc.oneof({ weight: 2, arbitrary: fc.constant("include" as const) }, fc.constantFrom("exclude" as const, "only" as const));
/**
 * A list query. Often one real target or none, since the side table is what paging must cross; now and then any
 * templates and targets, including those that match nothing.
 */
const listFilter: fc.Arbitrary<ListQuery> = fc.record(
  {
    templates: fc.oneof(fc.constant<string[]>([]), subset(FILTER_TEMPLATES)),
    targets: fc.oneof(
      fc.constant<string[]>([]),
      fc.constantFrom(...TARGETS).map((t): string[] => [t]),
      subset(FILTER_TARGETS),
    ),
    read_status: fc.oneof({ weight: 2, arbitrary: fc.constant("all" as const) }, fc.constantFrom("read" as const, "unread" as const)),
    archived: inclusion,
    snoozed: inclusion,
  },
  { requiredKeys: [] },
);

const command: fc.Arbitrary<Command> = fc.oneof(
  { weight: 3, arbitrary: deliverCommand(4) },
  // Now and then enough deliveries at one created_at to page past 100 on equal timestamps.
  { weight: 1, arbitrary: deliverCommand(60) },
  { weight: 6, arbitrary: single },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("wakeDue"), minutes: fc.constantFrom(0, 1, 60, 30_000, 600_000) }) },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant("bulkIds"), action: bulkAction, picks: fc.array(pick, { maxLength: 12 }), foreign: fc.boolean() }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("bulkFilter"), action: bulkAction, filter }) },
  { weight: 2, arbitrary: fc.constant({ kind: "markAll" as const }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("list"), filter: listFilter, limit: fc.integer({ min: 1, max: 3 }) }) },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant("together"), ops: fc.array(fc.oneof(single, deliverCommand(2)), { minLength: 2, maxLength: 8 }) }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("sweep"), cap: sweepCap, cut: fc.option(pick, { freq: 4 }) }) },
);

/** Another user's notification: in every bulk by ids it is ignored, and that inbox never changes. */
let foreign: { user: TestUser; id: string; listed: ListBody };

beforeAll(async () => {
  const user = await createUser();
  const { id } = await deliver(user.id);
  foreign = { user, id, listed: await listAll(user.token) };
});

const templateOf = (cmd: Deliver) => TEMPLATES[cmd.template] ?? TEMPLATE_A;
const targetsOf = (cmd: Deliver) => cmd.targets.flatMap((t) => TARGETS[t] ?? []);

async function runDeliver(user: TestUser, model: Model, cmd: Deliver, maxCount = cmd.count): Promise<void> {
  let createdAt: string | undefined;
  for (let i = 0; i < Math.min(cmd.count, maxCount); i++) {
    const d = await deliver(user.id, { templateId: templateOf(cmd), targets: targetsOf(cmd), ...(createdAt ? { createdAt } : {}) });
    if (cmd.sameTime) createdAt = d.createdAt;
    model.add(d.id, d.templateId, d.targets, d.createdAt);
  }
}

/** Runs a one-item change on `id` against the server and the model; `alone` when nothing else runs at the same time. */
async function run(user: TestUser, model: Model, cmd: Single, id: string, now: Fresh, alone: boolean): Promise<void> {
  let res: Response;
  let action: Action;
  if (cmd.kind === "snooze") {
    const until = new Date(Date.now() + cmd.minutes * MINUTE).toISOString();
    [res, action] = [await snooze(user.token, id, until), { kind: "snooze", until }];
  } else if (cmd.kind === "unsnooze") {
    [res, action] = [await snooze(user.token, id, null), { kind: "wake" }];
  } else if (cmd.kind === "read" || cmd.kind === "unread") {
    [res, action] = [await setRead(user.token, id, cmd.kind === "read"), { kind: cmd.kind }];
  } else {
    [res, action] = [await setArchived(user.token, id, cmd.kind === "archive"), { kind: cmd.kind }];
  }
  model.apply([id], action, now);
  expect(res.status).toBe(200);
  const body = await json<ItemBody>(res);
  expectItem(model, body.notification);
  if (alone) expect(body.unread_count).toBe(model.unread);
}

async function runCommand(user: TestUser, model: Model, cmd: Command): Promise<void> {
  const now: Fresh = { from: Date.now(), to: Number.POSITIVE_INFINITY };
  const done = () => {
    now.to = Date.now();
  };
  switch (cmd.kind) {
    case "together": {
      // One op per item, chosen before any runs: picks that land on an item already taken are dropped.
      const taken = new Map<string, Single>();
      const deliveries: Deliver[] = [];
      for (const op of cmd.ops) {
        if (op.kind === "deliver") deliveries.push(op);
        else {
          const id = model.pick(op.pick);
          if (id !== undefined && !taken.has(id)) taken.set(id, op);
        }
      }
      await Promise.all([
        ...deliveries.map((op) => runDeliver(user, model, op)),
        ...[...taken].map(([id, op]) => run(user, model, op, id, now, false)),
      ]);
      break;
    }
    case "wakeDue": {
      const at = Date.now() + cmd.minutes * MINUTE;
      const due = model.due(at);
      const woken = await runInDurableObject(inbox(user.id), (o: UserInbox) => o.wakeDue(at));
      expect(woken).toBe(model.apply(due, { kind: "wake" }, now));
      break;
    }
    case "bulkIds": {
      const ids = cmd.picks.flatMap((p) => model.pick(p) ?? []);
      if (cmd.foreign || ids.length === 0) ids.push(foreign.id, crypto.randomUUID());
      const res = await bulk(user.token, { action: cmd.action, ids });
      const expected = model.apply(ids, { kind: cmd.action }, now);
      expect(await json(res)).toEqual({ updated: expected, unread_count: model.unread });
      break;
    }
    case "bulkFilter": {
      const selected = model.select(cmd.filter);
      const res = await bulk(user.token, { action: cmd.action, filter: cmd.filter });
      const expected = model.apply(selected, { kind: cmd.action }, now);
      expect(await json(res)).toEqual({ updated: expected, unread_count: model.unread });
      break;
    }
    case "markAll": {
      expect((await markAllRead(user.token)).status).toBe(204);
      model.markAll(now);
      break;
    }
    case "list": {
      const ids = await listPages(user, cmd, model.seq);
      expect(ids, listQuery(cmd.filter)).toEqual(model.listed(cmd.filter).slice(0, LIST_PAGES * cmd.limit));
      break;
    }
    case "deliver":
      await runDeliver(user, model, cmd);
      break;
    case "sweep": {
      // The sweep at a chosen time under chosen limits, as the alarm runs it under the kept ones: the cutoff lands
      // exactly on the picked item's created_at (which is then kept), or before every item.
      const cutoff = (cmd.cut === null ? undefined : model.createdAtAt(cmd.cut)) ?? new Date(0).toISOString();
      const at = Date.now();
      const limits: InboxLimits = { maxItems: cmd.cap, retentionMs: at - Date.parse(cutoff) };
      const expected = model.sweep(cmd.cap, cutoff);
      expect(await sweepAll(user, at, limits)).toBe(expected);
      break;
    }
    default: {
      const id = model.pick(cmd.pick);
      if (id !== undefined) await run(user, model, cmd, id, now, true);
    }
  }
  done();
}

describe("counts never drift from the list (docs/inbox.md, Exact counts)", () => {
  it("random sequences and concurrent batches of every change: counts = the list, at its seq; states = the model", async () => {
    await fc.assert(
      fc.asyncProperty(deliverCommand(8), fc.array(command, { minLength: 1, maxLength: 30 }), async (first, commands) => {
        const user = await createUser();
        const model = new Model();
        for (const cmd of [first, ...commands]) {
          await runCommand(user, model, cmd);
          await expectAgree(user, model);
        }
        expect(await listAll(foreign.user.token)).toEqual(foreign.listed);
      }),
      { numRuns: 60 },
    );
    // A fixed amount of work (60 runs of up to 30 commands, each checked against the list): about 10 s on an idle
    // 2-core machine, more than three times that when other suites share it. The limit guards against a hang, not speed.
  }, 120_000);

  // Any mix at once, bulk and mark-all included: the order is the object's, so no model; but the counts, the seq and a
  // synced watcher's copy must still agree with the list when it settles.
  it("any changes at once: counts = the list, seq has no gap, and a synced copy equals the list", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ round: fc.array(command, { minLength: 2, maxLength: 10 }), cap: fc.option(sweepCap) }), { minLength: 1, maxLength: 4 }),
        async (rounds) => {
          const user = await createUser();
          const w = await watch("?sync=true", { "Service-Session-Token": user.token });
          // A model is only used to choose ids; its states are not checked here.
          const model = new Model();
          for (let i = 0; i < 4; i++) {
            const d = await deliver(user.id);
            model.add(d.id, TEMPLATE_A, [], d.createdAt);
          }
          for (const { round, cap } of rounds) {
            await Promise.all(round.map((cmd) => runConcurrently(user, model, cmd)));
            // Between rounds, now and then, a sweep under a cap: what it removed is gone from the ids chosen after it.
            if (cap !== null) {
              await sweepAll(user, Date.now(), { maxItems: cap, retentionMs: LIMITS.retentionMs });
              model.keepOnly(new Set((await listAll(user.token)).notifications.map((n) => n.id)));
            }
          }
          const listed = await expectAgree(user, undefined);
          const frames = listed.seq === 0 ? [] : await framesUntil(w, listed.seq);
          expect(frames.map((f) => f.seq)).toEqual(frames.map((_, i) => i + 1));
          const replica = new Map<string, InboxNotification>();
          for (const frame of frames) applyFrame(replica, frame);
          const byId = (ns: Iterable<InboxNotification>) => [...ns].sort((a, b) => a.id.localeCompare(b.id));
          expect(byId(replica.values())).toEqual(byId(listed.notifications));
          w.ws.close();
        },
      ),
      { numRuns: 25 },
    );
  });
});

/** Sweeps until nothing more is due at `at` under `limits`, as the alarm's runs do; returns how many items went. */
async function sweepAll(user: TestUser, at: number, limits: InboxLimits): Promise<number> {
  let removed = 0;
  for (let more = true; more; ) {
    const step = await runInDurableObject(inbox(user.id), (o: UserInbox) => o.sweep(at, limits));
    removed += step.removed;
    more = step.more;
  }
  return removed;
}

/** A command sent without checking its answer against a model (other commands run at the same time). */
async function runConcurrently(user: TestUser, model: Model, cmd: Command): Promise<void> {
  const ok = (res: Response) => expect(res.status).toBeLessThan(300);
  switch (cmd.kind) {
    case "deliver":
      return runDeliver(user, model, cmd, 5);
    case "together":
      await Promise.all(cmd.ops.map((op) => runConcurrently(user, model, op)));
      return;
    case "wakeDue": {
      const at = Date.now() + cmd.minutes * MINUTE;
      await runInDurableObject(inbox(user.id), (o: UserInbox) => o.wakeDue(at));
      return;
    }
    case "bulkIds": {
      const ids = cmd.picks.flatMap((p) => model.pick(p) ?? []);
      return ok(await bulk(user.token, { action: cmd.action, ids: [...ids, foreign.id] }));
    }
    case "bulkFilter":
      return ok(await bulk(user.token, { action: cmd.action, filter: cmd.filter }));
    case "markAll":
      return ok(await markAllRead(user.token));
    case "list":
      return ok(await call("GET", `/notifications/inbox?${listQuery(cmd.filter)}&limit=${cmd.limit}`, { token: user.token }));
    // Sweeps run between rounds here: one at the same time as changes to items it may remove would make them 404.
    case "sweep":
      return;
  }
  const id = model.pick(cmd.pick);
  if (id === undefined) return;
  if (cmd.kind === "snooze") return ok(await snooze(user.token, id, new Date(Date.now() + cmd.minutes * MINUTE).toISOString()));
  if (cmd.kind === "unsnooze") return ok(await snooze(user.token, id, null));
  if (cmd.kind === "read" || cmd.kind === "unread") return ok(await setRead(user.token, id, cmd.kind === "read"));
  return ok(await setArchived(user.token, id, cmd.kind === "archive"));
}

/** A list query's string: the filters given, comma-separated lists, no empty parameter. */
function listQuery(filter: ListQuery): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(filter)) {
    if (value === undefined) continue;
    const text = Array.isArray(value) ? value.join(",") : value;
    if (text !== "") params.set(name, text);
  }
  return params.toString();
}

/**
 * The ids a filtered listing shows, `limit` at a time, each page after the last one's final id, for up to LIST_PAGES
 * pages; every page true at `seq` (nothing changes while it pages).
 */
async function listPages(user: TestUser, cmd: { filter: ListQuery; limit: number }, seq: number): Promise<string[]> {
  const ids: string[] = [];
  for (let page = 0; page < LIST_PAGES; page++) {
    const cursor = ids.at(-1);
    const body = await list(user.token, `?${listQuery(cmd.filter)}&limit=${cmd.limit}${cursor ? `&starting_before=${cursor}` : ""}`);
    expect(body.seq).toBe(seq);
    ids.push(...body.notifications.map((n) => n.id));
    if (body.notifications.length < cmd.limit) break;
  }
  return ids;
}
