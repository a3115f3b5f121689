// Seeding for the bench. Small inboxes are filled through the UserInbox `deliver` RPC (the delivery pipeline's own
// path). One delivery costs a SQLite commit in the object (about 1.7 ms here on disk), so 100,000 of them would
// take minutes; the large inbox is therefore grown offline: with workerd stopped, the rows the real `deliver` wrote
// are cloned in the object's own SQLite file in one transaction, and the maintained counts (unread, total, per
// template) are set to match.
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { DatabaseSync } from "node:sqlite";

export const CUSTOM_TEMPLATE = { id: "39b1e189-c857-4b0c-877a-511144c18516", group: "Custom Events" };

/** `count` notifications into `userId`'s inbox through the helper Worker (deliver RPCs from inside workerd). */
export async function deliverThroughObject(helperUrl, userId, count, { parallel = 50, chunk = 1000, baseTime = Date.now() - 10 * 86_400_000 } = {}) {
  const started = performance.now();
  let stored = 0;
  for (let from = 0; from < count; from += chunk) {
    const res = await fetch(new URL("/seed", helperUrl), {
      method: "POST",
      body: JSON.stringify({
        userId,
        from,
        count: Math.min(chunk, count - from),
        parallel,
        baseTime,
        templateId: CUSTOM_TEMPLATE.id,
        templateGroup: CUSTOM_TEMPLATE.group,
      }),
    });
    if (!res.ok) throw new Error(`seeding ${userId} failed: ${res.status} ${await res.text()}`);
    stored += (await res.json()).stored;
  }
  const seconds = (performance.now() - started) / 1000;
  return { stored, seconds, perSecond: stored / seconds };
}

/** The SQLite file miniflare keeps for one Durable Object (persisted like `--persist-to`). */
export function objectFile(stateDir, uniqueKey, idHex) {
  const file = path.join(stateDir, "do", uniqueKey, `${idHex}.sqlite`);
  if (!existsSync(file)) throw new Error(`no Durable Object storage at ${file}`);
  return file;
}

/** The counts the object keeps (docs/inbox.md, "Exact counts"), as its rows give them. */
function countsFromRows(db) {
  const whole = db
    .prepare(
      `SELECT count(*) AS total, coalesce(sum(read_at IS NULL AND snoozed_until IS NULL), 0) AS unread,
        coalesce(sum(archived_at IS NOT NULL), 0) AS archived, coalesce(sum(snoozed_until IS NOT NULL), 0) AS snoozed
      FROM inbox_notifications`,
    )
    .get();
  const byTemplate = db
    .prepare(
      `SELECT template_id, sum(read_at IS NULL AND snoozed_until IS NULL) AS unread, count(*) AS total
      FROM inbox_notifications GROUP BY template_id ORDER BY template_id`,
    )
    .all()
    .map((t) => ({ ...t }));
  return { ...whole, byTemplate };
}

/** The stored counters and per-template counts (a missing counter is 0, as the object reads it). */
function storedCounts(db) {
  const counters = Object.fromEntries(
    db
      .prepare("SELECT name, value FROM inbox_counters")
      .all()
      .map((c) => [c.name, c.value]),
  );
  const byTemplate = db
    .prepare("SELECT template_id, unread, total FROM inbox_template_counts ORDER BY template_id")
    .all()
    .map((t) => ({ ...t }));
  return { counters, byTemplate };
}

const COUNTERS = ["unread", "archived", "snoozed", "total"];

/**
 * Grows an inbox to `total` rows by cloning the oldest row `deliver` wrote (so every column is exactly as the object
 * stores it), each clone older than the last, then sets the maintained counts (unread, total, per template) to what
 * the rows give. Clones are not events: the sequence stays where the real deliveries left it. Only with workerd
 * stopped.
 */
export function growInboxOffline(file, total) {
  const started = performance.now();
  const db = new DatabaseSync(file);
  try {
    const existing = db.prepare("SELECT count(*) AS n FROM inbox_notifications").get().n;
    const template = db.prepare("SELECT * FROM inbox_notifications ORDER BY created_at ASC, id ASC LIMIT 1").get();
    if (!template) throw new Error("the inbox has no row to clone: deliver some first");
    // Refuse to guess if the object's counts changed shape, or do not already match its rows.
    const before = storedCounts(db);
    const fromRows = countsFromRows(db);
    const unknown = Object.keys(before.counters).filter((n) => !COUNTERS.includes(n) && n !== "seq");
    const mismatched = COUNTERS.filter((n) => (before.counters[n] ?? 0) !== fromRows[n]);
    if (unknown.length > 0 || mismatched.length > 0 || JSON.stringify(before.byTemplate) !== JSON.stringify(fromRows.byTemplate)) {
      throw new Error(`unexpected inbox counts ${JSON.stringify(before)} (from the rows: ${JSON.stringify(fromRows)})`);
    }
    const columns = Object.keys(template);
    const insert = db.prepare(
      `INSERT INTO inbox_notifications (${columns.map((c) => `"${c}"`).join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`,
    );
    const oldest = Date.parse(template.created_at);
    db.exec("BEGIN");
    for (let k = 1; k <= total - existing; k++) {
      const row = {
        ...template,
        id: randomUUID(),
        title: `Bench notification (seeded) #${k}`,
        created_at: new Date(oldest - k * 1000).toISOString(),
      };
      insert.run(...columns.map((c) => row[c]));
    }
    // The clones' targets go to the side table the targets filter reads (docs/inbox.md, "Indexes"), as deliver does;
    // a commit from before that table (measured to compare commits, docs/benchmarks.md) has none to fill.
    if (db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'inbox_targets'").get()) {
      db.exec(
        "INSERT OR IGNORE INTO inbox_targets (target, created_at, notification_id) SELECT DISTINCT j.value, n.created_at, n.id FROM inbox_notifications n, json_each(n.targets) j",
      );
    }
    const after = countsFromRows(db);
    const setCounter = db.prepare("INSERT INTO inbox_counters (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value");
    for (const name of COUNTERS) if (name in before.counters || after[name] !== 0) setCounter.run(name, after[name]);
    db.exec("DELETE FROM inbox_template_counts");
    const setTemplate = db.prepare("INSERT INTO inbox_template_counts (template_id, unread, total) VALUES (?, ?, ?)");
    for (const t of after.byTemplate) setTemplate.run(t.template_id, t.unread, t.total);
    db.exec("COMMIT");
    return { rows: after.total, unread: after.unread, seconds: (performance.now() - started) / 1000 };
  } finally {
    db.close();
  }
}
