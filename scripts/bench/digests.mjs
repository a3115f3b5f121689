// The digest figures (docs/schedule.md, "At scale"): N users whose digest windows end in the same minute, each window
// holding one unread item, and how long after the windows' end every digest e-mail is queued (its row written to the
// message log and its id put on the queue, by each user's own inbox object on its own alarm). The queue consumer is
// left out, so what is timed is the windows' end alone, not the sending. Beside it, the CPU a schedule adds to one
// notification's enqueue: reading the stored schedule and deciding quiet hours, for a user with seven ranges in
// Europe/Berlin, against a user without a schedule.
//
//   node scripts/bench/digests.mjs                 # 1,000 users (BENCH_DIGEST_USERS=10000 for the target's count)
//   BENCH_DIGEST_SPREAD_S=0 node scripts/bench/digests.mjs   # every window ending at one instant, not over a minute
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { build as esbuild } from "esbuild";
import { applyMigrations, build, generateSecretKey, root, runWhenMain, start } from "./harness.mjs";

const DIGEST_TEMPLATE_ID = "5d0f7a8e-3c1b-4f2a-9e6d-8b7c6a5f4e3d";
const CUSTOM_TEMPLATE_ID = "39b1e189-c857-4b0c-877a-511144c18516";

async function helperPost(helperUrl, route, body) {
  const res = await fetch(new URL(route, helperUrl), { method: "POST", body: JSON.stringify(body) });
  const text = await res.text();
  if (!res.ok) throw new Error(`helper ${route} → ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

/**
 * Copies held per helper request: workerd keeps every object a request reached open until a few seconds after the
 * request ends, 3 file descriptors each (docs/benchmarks.md, "Broadcasts"), so 10,000 in one request would run a
 * machine that allows 20,000 descriptors out of them (`SQLITE_CANTOPEN`).
 */
const HOLD_SLICE = 1000;

/** Holds the copies of users `from` … `from + count - 1`, a slice per request, one after the other. */
async function holdInSlices(helperUrl, { from, count, ...rest }) {
  let ms = 0;
  for (let at = from; at < from + count; at += HOLD_SLICE) {
    const slice = await helperPost(helperUrl, "/hold-digests", { ...rest, from: at, count: Math.min(HOLD_SLICE, from + count - at) });
    ms += slice.ms;
  }
  return { ms };
}

/**
 * Holds one copy for each of `users` users in windows that all end at one instant, chosen after a first slice shows
 * how fast holding goes, then polls the message log until every digest is there. Returns the seconds from the windows'
 * end to the last digest queued.
 */
export async function digestBench({ helperUrl, users, parallel = 32, spreadS = 60, log }) {
  const prefix = `digest-${Date.now()}`;
  const probe = Math.min(100, users);
  const first = await helperPost(helperUrl, "/hold-digests", {
    prefix,
    from: 0,
    count: probe,
    parallel,
    endsAt: Date.now() + 3_600_000,
    templateId: CUSTOM_TEMPLATE_ID,
  });
  // The first slice's windows end in an hour: they are not part of the measurement. The rest end together, after
  // holding them is expected to be over (one and a half times the first slice's pace, and 10 s).
  const endsAt = Date.now() + Math.ceil(((users - probe) * first.ms) / probe) * 1.5 + 10_000;
  const spreadMs = spreadS * 1000;
  log(`holding ${users - probe} copies in windows ending from ${new Date(endsAt).toISOString()} over ${spreadS} s`);
  const held = await holdInSlices(helperUrl, {
    prefix,
    from: probe,
    count: users - probe,
    parallel,
    endsAt,
    spreadMs,
    total: users,
    templateId: CUSTOM_TEMPLATE_ID,
  });
  if (Date.now() >= endsAt) throw new Error(`holding took ${held.ms} ms, past the windows' end: rerun with fewer users`);
  const expected = users - probe;
  let queued = { n: 0 };
  const deadline = endsAt + spreadMs + 600_000;
  while (Date.now() < deadline) {
    queued = await helperPost(helperUrl, "/digests-queued", { templateId: DIGEST_TEMPLATE_ID });
    if (queued.n >= expected) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  const doneAt = Date.now();
  // Each digest's lag behind its own window's end (the helper's formula for user i's end).
  const { rows } = await helperPost(helperUrl, "/digests-queued", { templateId: DIGEST_TEMPLATE_ID, withRows: true });
  const lags = rows
    .map(({ user, at }) => {
      const index = Number(user.slice(prefix.length + 1));
      return (Date.parse(at) - (endsAt + Math.floor((index * spreadMs) / users))) / 1000;
    })
    .filter((lag) => lag > -1)
    .sort((a, b) => a - b);
  return {
    users: expected,
    holdMs: held.ms,
    queued: queued.n,
    allQueuedS: (doneAt - endsAt) / 1000,
    firstAlarmS: (Date.parse(queued.first) - endsAt) / 1000,
    lastAlarmS: (Date.parse(queued.last) - endsAt) / 1000,
    lagP50S: lags[Math.floor(lags.length / 2)] ?? Number.NaN,
    lagMaxS: lags.at(-1) ?? Number.NaN,
  };
}

/** CPU per notification of the schedule's part of the enqueue, in µs: `scheduleOf` + `quietUntil`, with and without one. */
export async function scheduleCost({ iterations = 20_000 } = {}) {
  const out = mkdtempSync(path.join(tmpdir(), "herald-bench-schedule-"));
  try {
    const file = path.join(out, "schedule.mjs");
    await esbuild({
      stdin: {
        contents: 'export { scheduleOf } from "./src/schedule/store"; export { quietUntil } from "./src/schedule/model";',
        resolveDir: root,
        loader: "ts",
      },
      bundle: true,
      format: "esm",
      platform: "neutral",
      outfile: file,
      logLevel: "silent",
    });
    const { scheduleOf, quietUntil } = await import(pathToFileURL(file).href);
    const week = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];
    const row = {
      userId: "u",
      timezone: "Europe/Berlin",
      quietHours: week.map((day, i) => ({ days: [day], start: `2${i % 4}:00`, end: `0${(i % 3) + 6}:30` })),
      digest: "off",
      updatedAt: "",
    };
    const time = (fn) => {
      for (let i = 0; i < 500; i++) fn(i);
      const started = process.cpuUsage();
      for (let i = 0; i < iterations; i++) fn(i);
      const used = process.cpuUsage(started);
      return (used.user + used.system) / iterations;
    };
    const base = Date.parse("2026-06-10T00:00:00Z");
    // Instants spread over a week, so inside and outside ranges both count.
    const withSchedule = time((i) => quietUntil(scheduleOf(row), base + ((i * 7_919_000) % (7 * 86_400_000))));
    const without = time((i) => quietUntil(scheduleOf(undefined), base + i));
    return { withSchedule, without, added: withSchedule - without };
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

async function main() {
  const users = Number(process.env.BENCH_DIGEST_USERS ?? 1000);
  // Windows "ending in the same minute" end spread over it; BENCH_DIGEST_SPREAD_S=0 makes them end at one instant.
  const spreadS = Number(process.env.BENCH_DIGEST_SPREAD_S ?? 60);
  const tmp = mkdtempSync(path.join(tmpdir(), "herald-bench-digests-"));
  const log = (msg) => console.log(`[bench digests] ${msg}`);
  let running;
  try {
    const cost = await scheduleCost();
    log(
      `schedule CPU per notification: ${cost.withSchedule.toFixed(1)} µs with 7 ranges in Europe/Berlin, ${cost.without.toFixed(2)} µs without: +${(cost.added / 1000).toFixed(3)} ms (target ≤ 1 ms)`,
    );
    log("building");
    await build(path.join(tmp, "dist"));
    running = await start({
      outdir: path.join(tmp, "dist"),
      stateDir: path.join(tmp, "state"),
      host: "127.0.0.1",
      secretKey: generateSecretKey(),
      withoutQueueConsumer: true,
    });
    await applyMigrations(running.mf);
    const result = await digestBench({ helperUrl: running.urls.helper, users, spreadS, log });
    log(
      `${result.queued} of ${result.users} digests queued; windows ending over ${spreadS} s, the last digest queued ${result.allQueuedS.toFixed(1)} s after the first window's end; each digest's lag behind its own window's end: p50 ${result.lagP50S.toFixed(1)} s, max ${result.lagMaxS.toFixed(1)} s (target: every one within 60 s for 10,000); holding took ${(result.holdMs / 1000).toFixed(1)} s`,
    );
  } finally {
    await running?.mf.dispose();
    rmSync(tmp, { recursive: true, force: true });
  }
}

runWhenMain(import.meta.url, "digests", main);
