import { and, asc, eq, lte, ne, or, type SQL, sql } from "drizzle-orm";
import { SQLiteAsyncDialect } from "drizzle-orm/sqlite-core";
import { scrubAccount } from "../auth/account-changes";
import { type Database, database } from "../db/client";
import { userErasures } from "../db/schema";
import type { Env } from "../env";
import { userInbox } from "../inbox/address";
import { nowIso } from "../lib/crypto";
import { AUDIT_PERSONAL_KEYS, D1_SECTIONS } from "./catalogue";

/**
 * The erasure of a deleted account (docs/privacy.md, "Erasure"), in the order its steps run. The request that deletes
 * the account has done the first part in its own batch (src/auth/account-changes.ts, `deleteAccount`): the row
 * scrubbed, every credential, factor, membership and link gone, and this erasure recorded at its first step. Each
 * step is safe to run again, and the row names the next one only once the step is done, so a failure anywhere is
 * finished by the next run of the cron, from the step that failed.
 *
 * 1. `inbox`: the user's inbox object erases everything it stores (`erase`: sockets closed, alarm and rows deleted).
 * 2. `messages`: the user's rows of the message log, with the payloads their e-mails and webhooks were made from.
 * 3. `records`: every other row of the user's (src/privacy/catalogue.ts, `erasure: { delete: true }`), and the
 *    account row scrubbed again (for accounts deleted before erasure existed).
 * 4. `audit`: the audit log keeps each entry's action, ids and times; entries about the user lose every name and
 *    e-mail in `diff`, and those the user wrote lose their address and browser too.
 * 5. `settle`: once nothing that read the account before its deletion can still be delivering to it (SETTLE_AFTER_MS),
 *    the inbox and the message log are erased again, and the erasure is done.
 */
export const ERASURE_STEPS = ["inbox", "messages", "records", "audit", "settle"] as const;
export type ErasureStep = (typeof ERASURE_STEPS)[number];

/**
 * How long after the deletion the last step waits: the longest a delivery that read the account before it was
 * deleted can still be on its way (a queue consumer's invocation, at most 15 minutes) before it reaches the inbox.
 */
export const SETTLE_AFTER_MS = 15 * 60_000;
/** A row some run touched this recently is left to that run: the cron takes it only after a quiet minute. */
const QUIET_MS = 60_000;
/** Erasures the cron works on per run, one after the other. */
const PER_CRON_RUN = 10;
/** Rows per statement of the message log's deletion and the audit log's scrubbing: short holds of D1's writer. */
const ROWS_PER_STATEMENT = 500;

/** Every message-log row of the user, a page per statement; a delivery that wrote one late is caught by `settle`. */
async function deleteMessages(db: Database, userId: string): Promise<void> {
  for (;;) {
    const { meta } = await db.run(
      sql`DELETE FROM notification_messages WHERE id IN (SELECT id FROM notification_messages WHERE user_id = ${userId} LIMIT ${ROWS_PER_STATEMENT})`,
    );
    if (meta.changes < ROWS_PER_STATEMENT) return;
  }
}

const dialect = new SQLiteAsyncDialect();

/**
 * The catalogue's rows that go with the account, and the account row scrubbed, in one batch (one transaction). Sent
 * as D1's own statements: drizzle's batch cannot carry raw SQL with parameters.
 */
async function deleteRecords(env: Env, db: Database, userId: string): Promise<void> {
  const queries = [scrubAccount(db, userId, nowIso()).toSQL()];
  for (const section of D1_SECTIONS) {
    if (!("delete" in section.erasure)) continue;
    for (const part of section.parts) queries.push(dialect.sqlToQuery(sql`DELETE FROM ${sql.raw(section.table)} WHERE ${part(userId)}`));
  }
  await env.DB.batch(queries.map((query) => env.DB.prepare(query.sql).bind(...query.params)));
}

const PERSONAL_PATHS = sql.raw(AUDIT_PERSONAL_KEYS.map((key) => `'$.${key}'`).join(", "));

/**
 * Scrubs one kind of the user's audit entries, a page per statement, in (time, id) order: each page starts after the
 * last one's final entry, so a page is one indexed range and no entry is read twice.
 */
async function scrubAudit(db: Database, which: SQL, set: SQL): Promise<void> {
  let after: { time: string; id: string } | undefined;
  for (;;) {
    const cursor = after === undefined ? sql`` : sql` AND (time, id) > (${after.time}, ${after.id})`;
    const rows = await db.all<{ time: string; id: string }>(
      sql`UPDATE audit_logs SET ${set} WHERE id IN (SELECT id FROM audit_logs WHERE (${which})${cursor} ORDER BY time, id LIMIT ${ROWS_PER_STATEMENT}) RETURNING time, id`,
    );
    if (rows.length < ROWS_PER_STATEMENT) return;
    after = rows.reduce((last, row) => (row.time > last.time || (row.time === last.time && row.id > last.id) ? row : last));
  }
}

async function scrubAuditLog(db: Database, userId: string): Promise<void> {
  const withoutNames = sql`diff = json_remove(diff, ${PERSONAL_PATHS})`;
  for (const section of D1_SECTIONS) {
    if (!("step" in section.erasure) || section.erasure.step !== "audit") continue;
    // What the user did: their own address and browser go too. What others did: theirs stay, they are not the user's.
    const set = section.key === "audit_log" ? sql`${withoutNames}, ip = '', user_agent = ''` : withoutNames;
    for (const part of section.parts) await scrubAudit(db, part(userId), set);
  }
}

async function eraseInbox(env: Env, userId: string): Promise<void> {
  await userInbox(env, userId).erase();
}

const STEPS: Record<ErasureStep, (env: Env, db: Database, userId: string) => Promise<void>> = {
  inbox: (env, _db, userId) => eraseInbox(env, userId),
  messages: (_env, db, userId) => deleteMessages(db, userId),
  records: (env, db, userId) => deleteRecords(env, db, userId),
  audit: (_env, db, userId) => scrubAuditLog(db, userId),
  settle: async (env, db, userId) => {
    await eraseInbox(env, userId);
    await deleteMessages(db, userId);
  },
};

export interface ErasureOptions {
  /** The clock (epoch ms): when `settle` may run. */
  now?: number;
  /**
   * Called once a step's work is done, before the next step is recorded: a test throws here to stop the erasure
   * between the two, the worst place to stop (the step is done but the row still names it).
   */
  stepDone?: (step: ErasureStep) => void | Promise<void>;
}

/**
 * Runs the user's erasure from the step its row names, to the end or until `settle` is not due yet. Answers whether
 * it finished (the row is gone), or waits for `settle`. A failing step is counted on the row and thrown.
 */
export async function runErasure(env: Env, userId: string, options: ErasureOptions = {}): Promise<"finished" | "waiting"> {
  const now = options.now ?? Date.now();
  const db = database(env.DB);
  for (;;) {
    const [row] = await db.select().from(userErasures).where(eq(userErasures.userId, userId));
    if (!row) return "finished";
    if (row.step === "settle" && now < Date.parse(row.requestedAt) + SETTLE_AFTER_MS) return "waiting";
    await db.update(userErasures).set({ updatedAt: nowIso() }).where(eq(userErasures.userId, userId));
    try {
      await STEPS[row.step](env, db, userId);
      await options.stepDone?.(row.step);
    } catch (error) {
      await db
        .update(userErasures)
        .set({ failures: sql`${userErasures.failures} + 1`, updatedAt: nowIso() })
        .where(eq(userErasures.userId, userId));
      console.error(
        `[herald] the erasure of user ${userId} failed at its ${row.step} step (failures: ${row.failures + 1}): ${error instanceof Error ? error.name : "error"}`,
      );
      throw error;
    }
    const next = ERASURE_STEPS[ERASURE_STEPS.indexOf(row.step) + 1];
    // Only from the step this run did: a run that overlapped another cannot move the row back.
    const ours = and(eq(userErasures.userId, userId), eq(userErasures.step, row.step));
    if (next === undefined) await db.delete(userErasures).where(ours);
    else await db.update(userErasures).set({ step: next, updatedAt: nowIso() }).where(ours);
  }
}

/**
 * The cron's part (docs/privacy.md, "Erasure"): erasures left unfinished — a step failed, the request that started it
 * died, or `settle` has come due — are run on from where they stopped, the oldest first. One failing erasure does not
 * hold up the others.
 */
export async function finishErasures(env: Env, now = Date.now()): Promise<void> {
  const db = database(env.DB);
  const due = await db
    .select({ userId: userErasures.userId })
    .from(userErasures)
    .where(
      and(
        lte(userErasures.updatedAt, nowIso(now - QUIET_MS)),
        or(ne(userErasures.step, "settle"), lte(userErasures.requestedAt, nowIso(now - SETTLE_AFTER_MS))),
      ),
    )
    .orderBy(asc(userErasures.updatedAt))
    .limit(PER_CRON_RUN);
  for (const { userId } of due) {
    await runErasure(env, userId, { now }).catch(() => undefined);
  }
}
