// Seeding for the bench. Small inboxes are filled through the UserInbox `deliver` RPC (the delivery pipeline's own
// path). One delivery costs a SQLite commit in the object (about 1.7 ms here on disk), so 100,000 of them would
// take minutes; the large inbox is therefore grown offline: with workerd stopped, the rows the real `deliver` wrote
// are cloned in the object's own SQLite file in one transaction, and the maintained unread counter is set to match.
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

/**
 * Grows an inbox to `total` rows by cloning the oldest row `deliver` wrote (so every column is exactly as the object
 * stores it), each clone older than the last, then sets the maintained unread counter to the true count. Only with
 * workerd stopped.
 */
export function growInboxOffline(file, total) {
  const started = performance.now();
  const db = new DatabaseSync(file);
  try {
    const existing = db.prepare("SELECT count(*) AS n FROM inbox_notifications").get().n;
    const template = db.prepare("SELECT * FROM inbox_notifications ORDER BY created_at ASC, id ASC LIMIT 1").get();
    if (!template) throw new Error("the inbox has no row to clone: deliver some first");
    const counters = db.prepare("SELECT name, value FROM inbox_counters").all();
    const unreadBefore = db.prepare("SELECT count(*) AS n FROM inbox_notifications WHERE read_at IS NULL").get().n;
    // The object keeps exactly one counter (the unread count); refuse to guess if its storage changed shape.
    if (counters.length !== 1 || counters[0].value !== unreadBefore) {
      throw new Error(`unexpected inbox_counters ${JSON.stringify(counters)} (unread rows: ${unreadBefore})`);
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
    const unread = db.prepare("SELECT count(*) AS n FROM inbox_notifications WHERE read_at IS NULL").get().n;
    db.prepare("UPDATE inbox_counters SET value = ? WHERE name = ?").run(unread, counters[0].name);
    db.exec("COMMIT");
    const rows = db.prepare("SELECT count(*) AS n FROM inbox_notifications").get().n;
    return { rows, unread, seconds: (performance.now() - started) / 1000 };
  } finally {
    db.close();
  }
}
