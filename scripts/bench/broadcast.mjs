// The broadcast figure (docs/benchmarks.md, "Broadcasts"): 10,000 users seeded straight into D1; one broadcast to
// everyone, timed from its 202 until `completed_at` is set; the raw rate it is compared with, the inbox `deliver` RPC
// into as many new objects at the consumer's concurrency, measured half before and half after it; then the check that
// every recipient's object holds exactly one item of the Broadcast template.
import { performance } from "node:perf_hooks";

/** The Broadcast template (drizzle/0006_broadcasts.sql): every recipient's inbox item carries it. */
const BROADCAST_TEMPLATE = { id: "e9b4efe4-cf44-4038-8d36-187f0011cb5f", group: "Custom Events" };
/** Inbox RPCs in flight per consumer invocation (src/broadcasts/fanout.ts, RPCS_IN_FLIGHT): the raw rate uses the same. */
export const RPCS_IN_FLIGHT = 50;

/** Deliveries per helper request: one consumer invocation's worth (max_batch_size 10 × 100 recipients). */
const PER_REQUEST = 1000;

/**
 * workerd closes the objects a request reached 3–5 s after the request ends (about a second of its thread for 1,000):
 * each phase starts once the previous one's objects are closed, so it neither pays for them nor runs out of file
 * descriptors (3 per open object).
 */
const SETTLE_MS = 6000;
/** Pause after each request of the copy check (1,000 objects opened in about half a second), for the same reasons. */
const CHECK_PAUSE_MS = 1500;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function helperPost(helperUrl, route, body) {
  const res = await fetch(new URL(route, helperUrl), { method: "POST", body: JSON.stringify(body) });
  const text = await res.text();
  if (!res.ok) throw new Error(`helper ${route} → ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

/**
 * One deliver RPC into each of count new inbox objects (fresh user ids, not users), from inside workerd, RPCS_IN_FLIGHT
 * at a time, in requests of PER_REQUEST (a consumer invocation's worth: 10 messages of 100): one request keeps every
 * object it reached open until it ends, 3 file descriptors each, so 10,000 in one request would run out of
 * descriptors here. Timed from Node, gaps between requests included (the consumer has them too).
 */
async function deliverDistinct(helperUrl, { count, title, message, createdAt }) {
  const raw = { stored: 0, failed: 0, requests: 0, helperMs: 0, perRequest: PER_REQUEST, lastError: undefined };
  const started = performance.now();
  for (let done = 0; done < count; done += PER_REQUEST) {
    const r = await helperPost(helperUrl, "/deliver-distinct", {
      count: Math.min(PER_REQUEST, count - done),
      parallel: RPCS_IN_FLIGHT,
      templateId: BROADCAST_TEMPLATE.id,
      templateGroup: BROADCAST_TEMPLATE.group,
      title,
      content: message,
      createdAt,
    });
    raw.stored += r.stored;
    raw.failed += r.failed;
    raw.requests++;
    raw.helperMs += r.ms;
    raw.lastError = r.lastError ?? raw.lastError;
  }
  raw.ms = performance.now() - started;
  raw.perSecond = raw.stored / (raw.ms / 1000);
  if (raw.stored !== count || raw.failed > 0)
    throw new Error(`raw deliveries: ${raw.stored} of ${count} stored, ${raw.failed} failed (${raw.lastError})`);
  return raw;
}

/**
 * Runs the whole broadcast measurement. `client` is a sequential keep-alive client on Herald (measure.mjs), `owner`
 * the first user (who may send broadcasts).
 */
export async function broadcastBench({ helperUrl, client, owner, users, pollMs = 20, timeoutS = 300, log }) {
  const title = "Bench broadcast";
  const message = "hello";

  // 1. The audience, straight into D1: created an hour ago, so before the broadcast.
  const seedStarted = performance.now();
  const seeded = await helperPost(helperUrl, "/seed-users", {
    count: users,
    prefix: "bcast-",
    createdAt: new Date(Date.now() - 3_600_000).toISOString(),
  });
  if (seeded.inserted !== users) throw new Error(`seeding users inserted ${seeded.inserted} of ${users}`);
  log(
    `broadcast: inserted ${seeded.inserted.toLocaleString("en-US")} users into D1 in ${seeded.statements} statements, ${((performance.now() - seedStarted) / 1000).toFixed(1)} s`,
  );

  // 2. The raw rate, half before the broadcast and half after it (the machine may be shared: what it does meanwhile
  // moves both alike), each into new objects.
  const createdAt = new Date().toISOString();
  const rawPhase = (count) => deliverDistinct(helperUrl, { count, title, message, createdAt });
  const rawBefore = await rawPhase(Math.ceil(users / 2));
  log(
    `broadcast: raw deliver RPC into ${rawBefore.stored.toLocaleString("en-US")} new inboxes, ${RPCS_IN_FLIGHT} in flight, ${PER_REQUEST} per request: ${(rawBefore.ms / 1000).toFixed(2)} s, ${Math.round(rawBefore.perSecond)}/s`,
  );
  await sleep(SETTLE_MS);

  // 3. The broadcast: from its 202 until a GET shows completed_at, polled every pollMs (start to start).
  const headers = { "Service-Session-Token": owner.token };
  const posted = await client.request("POST", "/api/v2/notifications/broadcasts", {
    headers,
    body: { audience: { all: true }, content: { title, message } },
  });
  const accepted = performance.now();
  if (posted.status !== 202) throw new Error(`POST /notifications/broadcasts → ${posted.status} ${posted.text.slice(0, 300)}`);
  const created = JSON.parse(posted.text);
  log(
    `broadcast: 202 in ${posted.ms.toFixed(1)} ms, ${created.recipients.toLocaleString("en-US")} recipients; polling its progress every ${pollMs} ms`,
  );
  const timeline = [];
  let progress;
  let polls = 0;
  let completedSeen;
  const deadline = accepted + timeoutS * 1000;
  while (performance.now() < deadline) {
    const started = performance.now();
    const r = await client.request("GET", `/api/v2/notifications/broadcasts/${created.id}`, { headers });
    polls++;
    if (r.status !== 200) throw new Error(`GET /notifications/broadcasts/${created.id} → ${r.status} ${r.text.slice(0, 300)}`);
    progress = JSON.parse(r.text);
    const at = performance.now();
    if (timeline.length === 0 || timeline.at(-1)[1] !== progress.delivered || progress.completed_at)
      timeline.push([Math.round(at - accepted), progress.delivered]);
    if (progress.completed_at) {
      completedSeen = at;
      break;
    }
    await sleep(Math.max(0, pollMs - (performance.now() - started)));
  }
  if (completedSeen === undefined) {
    throw new Error(`not completed after ${timeoutS} s: ${progress?.delivered} delivered, ${progress?.failed} failed of ${progress?.recipients}`);
  }
  const ms = completedSeen - accepted;
  const serverMs = Date.parse(progress.completed_at) - Date.parse(progress.created_at);
  const perSecond = created.recipients / (ms / 1000);
  log(
    `broadcast: completed_at seen ${(ms / 1000).toFixed(2)} s after the 202 (server side ${(serverMs / 1000).toFixed(2)} s), ${Math.round(perSecond)} deliveries/s`,
  );

  await sleep(SETTLE_MS);
  const rawAfter = await rawPhase(users - rawBefore.stored);
  log(
    `broadcast: raw deliver RPC into ${rawAfter.stored.toLocaleString("en-US")} more new inboxes after it: ${(rawAfter.ms / 1000).toFixed(2)} s, ${Math.round(rawAfter.perSecond)}/s`,
  );
  const raw = { stored: rawBefore.stored + rawAfter.stored, ms: rawBefore.ms + rawAfter.ms, before: rawBefore, after: rawAfter };
  raw.perSecond = raw.stored / (raw.ms / 1000);

  // 4. Exactly one copy each: every recipient's object asked, after completion.
  // The audience is read from D1 by the helper (the audience's own condition), not taken from Herald.
  await sleep(SETTLE_MS);
  const audience = await helperPost(helperUrl, "/audience-all", { createdAt: progress.created_at });
  const copies = { checked: 0, exactlyOne: 0, zero: 0, more: 0, errors: 0, histogram: {}, zeroSample: [], moreSample: [], ms: 0 };
  for (let i = 0; i < audience.length; i += PER_REQUEST) {
    const r = await helperPost(helperUrl, "/template-copies", {
      templateId: BROADCAST_TEMPLATE.id,
      userIds: audience.slice(i, i + PER_REQUEST),
      parallel: RPCS_IN_FLIGHT,
    });
    for (const k of ["checked", "exactlyOne", "zero", "more", "errors", "ms"]) copies[k] += r[k];
    for (const [n, holders] of Object.entries(r.histogram)) copies.histogram[n] = (copies.histogram[n] ?? 0) + holders;
    copies.zeroSample.push(...r.zeroSample);
    copies.moreSample.push(...r.moreSample);
    copies.lastError = r.lastError ?? copies.lastError;
    await sleep(CHECK_PAUSE_MS);
  }
  copies.zeroSample = copies.zeroSample.slice(0, 5);
  copies.moreSample = copies.moreSample.slice(0, 5);
  log(
    `broadcast: ${copies.checked.toLocaleString("en-US")} recipients' objects asked: ${copies.exactlyOne.toLocaleString("en-US")} hold exactly 1 Broadcast item, ${copies.zero} hold none, ${copies.more} more than 1${copies.errors ? `, ${copies.errors} errors` : ""}`,
  );

  return {
    recipients: created.recipients,
    id: created.id,
    seeded,
    raw,
    post: { status: posted.status, ms: posted.ms },
    ms,
    serverMs,
    perSecond,
    ratio: perSecond / raw.perSecond,
    final: progress,
    polls,
    pollMs,
    timeline,
    copies,
  };
}
