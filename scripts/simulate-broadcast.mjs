// `npm run simulate:broadcast`: a discrete-event model of one broadcast's fan-out on Cloudflare, from the POST to the
// last inbox write. It is a MODEL, not a measurement: every latency below is an assumption (docs/broadcasts-at-scale.md
// lists them and says where each comes from), and the platform limits are the documented ones.
//
//   node scripts/simulate-broadcast.mjs                         100,000 and 1,000,000 recipients, plus a settings table
//   node scripts/simulate-broadcast.mjs --recipients 250000     one audience size
//   node scripts/simulate-broadcast.mjs --batch 20 --inflight 100 --rpc-ms 10
//   node scripts/simulate-broadcast.mjs --bench                 latencies from bench/results.json (`npm run bench`)
//   node scripts/simulate-broadcast.mjs --help                  every flag with its default
//
// The pipeline modelled:
//   POST  → D1 count of the audience, D1 insert of the broadcast row, sendBatch of one "resolve" message per shard
//   resolve queue (one message per shard, chained) → keyset page of active user ids from D1 → sendBatch of delivery
//         messages (`--page` recipient ids each) into the delivery queue → the shard's next resolve message
//   delivery queue → batches of up to `--batch` messages to at most `--concurrency` consumer invocations (autoscaled,
//         see `--start-concurrency`) → per invocation: one D1 read (preferences), the recipients' inbox RPCs with at
//         most `--inflight` in flight, D1 writes (message-log rows for external copies + one progress row per
//         message), then the external copies' ids onto the notifications queue
// D1 is one single-threaded server (queries queue FIFO, as the D1 docs describe). Each recipient is a different
// Durable Object, so objects never queue behind each other. Queue producers are throttled to `--queue-rate`
// messages per second per queue.
//
// Plain Node ESM, no dependencies, deterministic (seeded). Runs on Node 20.
import { existsSync, readFileSync } from "node:fs";

/** Documented platform limits (docs/broadcasts-at-scale.md has the citations). Checked, never exceeded silently. */
const LIMITS = {
  maxBatchSize: 100, // Queues: maximum consumer batch size
  maxConcurrency: 250, // Queues: concurrent consumer invocations (push)
  sendBatchMessages: 100, // Queues: messages per sendBatch call
  sendBatchBytes: 256_000, // Queues: bytes per sendBatch call
  messageBytes: 128_000, // Queues: message size
  maxBatchTimeoutS: 60, // Queues: maximum batch wait time
  subrequests: 10_000, // Workers Paid: subrequests per invocation (default)
  d1Queries: 1_000, // D1: queries per Worker invocation (Workers Paid)
  consumerCpuMs: 30_000, // Queues / Workers: consumer CPU time, default (configurable to 5 min)
  consumerWallMs: 15 * 60_000, // Queues / Workers: consumer wall time
};

/** Every flag: [flag, key, default, help]. Latencies are assumptions; see the doc's "Assumptions" table. */
const FLAGS = [
  ["recipients", "recipients", null, "audience size (default: 100,000 and 1,000,000)"],
  ["page", "page", 100, "recipient ids per delivery-queue message"],
  ["batch", "batch", 10, "delivery consumer max_batch_size (messages per invocation, ≤ 100)"],
  ["concurrency", "concurrency", 250, "delivery consumer max_concurrency (≤ 250)"],
  ["inflight", "inflight", 50, "inbox RPCs in flight per consumer invocation"],
  ["shards", "shards", 16, "audience resolution chains (user-id ranges) running in parallel"],
  ["resolve-page", "resolvePage", 5000, "active user ids read per resolution query"],
  ["active-share", "activeShare", 0.95, "share of scanned users that are recipients (active, not deleted)"],
  ["external-share", "externalShare", 1, "share of recipients with an e-mail/webhook copy (one message-log row each)"],
  ["email-ids-per-msg", "emailIdsPerMsg", 100, "message ids per notifications-queue message (1 = one message per copy)"],
  ["write-mode", "writeMode", "invocation", "D1 writes: one batch per invocation | page | recipient"],
  ["log-indexes", "logIndexes", 2, "indexes on the message log (each adds a row written per row)"],
  ["rpc-ms", "rpcMs", 40, "inbox RPC latency, fixed part (ms)"],
  ["rpc-tail-ms", "rpcTailMs", 40, "inbox RPC latency, exponential part's mean (ms)"],
  ["d1-rtt-ms", "d1RttMs", 30, "Worker ↔ D1 network round trip (ms)"],
  ["d1-read-ms", "d1ReadMs", 0.5, "D1 SQL duration of a read query, fixed part (ms)"],
  ["d1-read-row-ms", "d1ReadRowMs", 0.0005, "D1 SQL duration per row read (ms)"],
  ["d1-write-ms", "d1WriteMs", 4, "D1 SQL duration of a write query or batch, fixed part (ms)"],
  ["d1-write-row-ms", "d1WriteRowMs", 0.01, "D1 SQL duration per row written (ms)"],
  ["queue-latency-ms", "queueLatencyMs", 250, "from a message's sendBatch to its consumer invocation (ms)"],
  ["send-ms", "sendMs", 60, "one send()/sendBatch() call (ms)"],
  ["invoke-ms", "invokeMs", 10, "consumer invocation overhead (ms)"],
  ["batch-timeout-s", "batchTimeoutS", 1, "delivery consumer max_batch_timeout (s)"],
  ["start-concurrency", "startConcurrency", 1, "consumer invocations allowed when the backlog appears"],
  ["ramp-factor", "rampFactor", 2, "concurrency growth factor per ramp interval"],
  ["ramp-interval-ms", "rampIntervalMs", 1000, "ramp interval (ms); growth is applied only when a batch completes"],
  ["cpu-rpc-ms", "cpuRpcMs", 0.05, "consumer CPU per inbox RPC (ms)"],
  ["cpu-page-ms", "cpuPageMs", 0.5, "consumer CPU per delivery message (ms)"],
  ["queue-rate", "queueRate", 5000, "messages per second per queue (documented limit)"],
  ["seed", "seed", 1, "random seed"],
];
const BOOLEAN_FLAGS = ["instant-ramp", "no-table", "help"];

function usage() {
  const lines = FLAGS.map(([flag, , def, help]) => `  --${flag.padEnd(18)} ${help}${def === null ? "" : ` [${def}]`}`);
  return [
    "usage: node scripts/simulate-broadcast.mjs [flags]",
    ...lines,
    "  --instant-ramp       consumers start at full concurrency (no autoscaling ramp)",
    "  --bench [path]       RPC and D1 latencies from a `npm run bench` result [bench/results.json]",
    "  --no-table           skip the settings table",
    "  --help               this text",
  ].join("\n");
}

function parseArgs(argv) {
  const opts = Object.fromEntries(FLAGS.map(([, key, def]) => [key, def]));
  const flags = { table: true, bench: null, help: false };
  for (let i = 0; i < argv.length; i++) {
    let arg = argv[i];
    let value;
    const eq = arg.indexOf("=");
    if (eq !== -1) {
      value = arg.slice(eq + 1);
      arg = arg.slice(0, eq);
    }
    if (!arg.startsWith("--")) throw new Error(`unexpected argument: ${arg}`);
    const name = arg.slice(2);
    if (BOOLEAN_FLAGS.includes(name)) {
      if (name === "instant-ramp") opts.startConcurrency = Number.POSITIVE_INFINITY;
      if (name === "no-table") flags.table = false;
      if (name === "help") flags.help = true;
      continue;
    }
    if (name === "bench") {
      if (value === undefined && argv[i + 1] !== undefined && !argv[i + 1].startsWith("--")) value = argv[++i];
      flags.bench = value ?? "bench/results.json";
      continue;
    }
    const spec = FLAGS.find(([flag]) => flag === name);
    if (spec === undefined) throw new Error(`unknown flag: --${name}`);
    if (value === undefined) value = argv[++i];
    if (value === undefined) throw new Error(`--${name} needs a value`);
    if (spec[1] === "writeMode") {
      if (!["invocation", "page", "recipient"].includes(value)) throw new Error("--write-mode is invocation, page or recipient");
      opts.writeMode = value;
      continue;
    }
    const number = Number(value.replaceAll("_", "").replaceAll(",", ""));
    if (!Number.isFinite(number) || number < 0) throw new Error(`--${name} needs a non-negative number, got ${value}`);
    opts[spec[1]] = number;
  }
  return { opts, flags };
}

/** Local figures from `npm run bench`: the object RPC and D1 point-read p50s, and the deliver rate into one inbox. */
function benchFigures(path) {
  if (!existsSync(path)) throw new Error(`${path} not found: run \`npm run bench\` first`);
  const results = JSON.parse(readFileSync(path, "utf8")).results ?? [];
  const value = (id) => {
    const row = results.find((r) => r.id === id);
    if (row === undefined || typeof row.value !== "number") throw new Error(`${path} has no ${id}`);
    return row.value;
  };
  const deliverRate = value("deliver_rate");
  const rpcP50 = value("probe_do_p50");
  const d1P50 = value("probe_d1_p50");
  return {
    note: `bench: RPC p50 ${rpcP50.toFixed(2)} ms + deliver commit ${(1000 / deliverRate).toFixed(2)} ms (${Math.round(deliverRate)}/s into one inbox), D1 point read p50 ${d1P50.toFixed(2)} ms`,
    overrides: { rpcMs: rpcP50 + 1000 / deliverRate, rpcTailMs: 0, d1RttMs: d1P50 },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Event engine

function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A binary min-heap of events ordered by time, then by insertion. */
class EventHeap {
  constructor() {
    this.items = [];
    this.seq = 0;
  }
  get size() {
    return this.items.length;
  }
  static less(a, b) {
    return a.t < b.t || (a.t === b.t && a.s < b.s);
  }
  push(t, fn) {
    const items = this.items;
    const item = { t, s: this.seq++, fn };
    let i = items.push(item) - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!EventHeap.less(item, items[parent])) break;
      items[i] = items[parent];
      i = parent;
    }
    items[i] = item;
  }
  pop() {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (items.length > 0) {
      let i = 0;
      for (;;) {
        const left = 2 * i + 1;
        if (left >= items.length) break;
        const right = left + 1;
        const child = right < items.length && EventHeap.less(items[right], items[left]) ? right : left;
        if (!EventHeap.less(items[child], last)) break;
        items[i] = items[child];
        i = child;
      }
      items[i] = last;
    }
    return top;
  }
}

/** Free times of the `k` RPC slots of one invocation (min-heap over a typed array). */
function makeLanes(k, start) {
  const heap = new Float64Array(k).fill(start);
  return {
    min: () => heap[0],
    replaceMin(value) {
      let i = 0;
      for (;;) {
        const left = 2 * i + 1;
        if (left >= k) break;
        const right = left + 1;
        const child = right < k && heap[right] < heap[left] ? right : left;
        if (heap[child] >= value) break;
        heap[i] = heap[child];
        i = child;
      }
      heap[i] = value;
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// The model

const ID_BYTES = 39; // a UUID in a JSON array: 36 characters, two quotes, a comma
const MESSAGE_OVERHEAD_BYTES = 200; // JSON envelope + the ~100 bytes of queue metadata the limits page mentions
const PARALLEL_SENDS = 6; // Workers: simultaneous open connections per invocation (Queues send/sendBatch count)

function simulate(recipients, p) {
  const heap = new EventHeap();
  const rng = mulberry32(p.seed);
  let now = 0;
  const at = (t, fn) => heap.push(t, fn);
  const stats = {
    acceptedAt: 0,
    resolutionDoneAt: 0,
    firstInboxAt: Number.POSITIVE_INFINITY,
    lastInboxAt: 0,
    convergedAt: 0,
    externalEnqueuedAt: 0,
    d1BusyMs: 0,
    d1Queries: 0,
    d1MaxWaitMs: 0,
    rowsRead: 0,
    rowsWritten: 0,
    invocations: 0,
    invocationMs: 0,
    invocationD1WaitMs: 0,
    maxSubrequests: 0,
    maxD1Queries: 0,
    maxCpuMs: 0,
    maxWallMs: 0,
    resolveSteps: 0,
    resolveStepMs: 0,
    fullConcurrencyAt: null,
    peakConcurrency: 0,
    queueMessages: { resolve: 0, delivery: 0, notifications: 0 },
    delivered: 0,
    stateLog: [],
    shardsLeft: 0,
    inTransit: 0,
  };

  // D1: one single-threaded server; a query occupies it for its SQL duration, FIFO.
  let d1FreeAt = 0;
  const d1 = (serviceMs, rowsRead, rowsWritten, then) => {
    at(now + p.d1RttMs / 2, () => {
      const start = Math.max(d1FreeAt, now);
      const wait = start - now;
      d1FreeAt = start + serviceMs;
      stats.d1BusyMs += serviceMs;
      stats.d1Queries += 1;
      stats.rowsRead += rowsRead;
      stats.rowsWritten += rowsWritten;
      if (wait > stats.d1MaxWaitMs) stats.d1MaxWaitMs = wait;
      at(d1FreeAt + p.d1RttMs / 2, () => then(wait));
    });
  };
  const readMs = (rows) => p.d1ReadMs + rows * p.d1ReadRowMs;
  const writeMs = (rows) => p.d1WriteMs + rows * p.d1WriteRowMs;

  /** A queue: a throttled producer side and, when `consume` is given, autoscaled push consumers. */
  function makeQueue(name, { batchSize, timeoutMs, consume }) {
    const fifo = [];
    let head = 0;
    let bucketAt = 0;
    let running = 0;
    let current = Math.min(p.concurrency, p.startConcurrency);
    let firstDispatchAt = null;
    let timerAt = Number.POSITIVE_INFINITY;
    const queue = {
      /**
       * The sendBatch calls (≤ 100 messages, ≤ 256 KB each) for `messages`, issued at `start`, at most 6 at a time (Queues
       * sends count toward the simultaneous-connection limit). Each call takes `--send-ms` or waits for the queue's
       * throughput, reserved when it is made; `then(t)` runs when the last returns.
       */
      send(messages, start, then) {
        const chunks = [];
        for (let i = 0; i < messages.length; ) {
          let bytes = 0;
          let j = i;
          while (j < messages.length && j - i < LIMITS.sendBatchMessages && bytes + messages[j].bytes <= LIMITS.sendBatchBytes) {
            bytes += messages[j].bytes;
            j++;
          }
          chunks.push(messages.slice(i, j));
          i = j;
        }
        if (chunks.length === 0) {
          at(start, () => then(now));
          return;
        }
        let next = 0;
        let open = 0;
        const call = () => {
          const chunk = chunks[next++];
          open++;
          bucketAt = Math.max(bucketAt, now) + (chunk.length / p.queueRate) * 1000;
          stats.queueMessages[name] += chunk.length;
          at(Math.max(now + p.sendMs, bucketAt), () => {
            open--;
            if (consume !== undefined) {
              stats.inTransit += name === "delivery" ? chunk.length : 0;
              at(now + p.queueLatencyMs, () => arrive(chunk));
            }
            if (next < chunks.length) call();
            else if (open === 0) then(now);
          });
        };
        at(start, () => {
          while (next < chunks.length && open < PARALLEL_SENDS) call();
        });
      },
    };
    function arrive(chunk) {
      if (name === "delivery") stats.inTransit -= chunk.length;
      for (const message of chunk) fifo.push({ ...message, availableAt: now });
      dispatch();
    }
    function rampTo() {
      if (!Number.isFinite(p.startConcurrency)) return p.concurrency;
      const steps = p.rampIntervalMs > 0 ? Math.floor((now - firstDispatchAt) / p.rampIntervalMs) : 64;
      return Math.min(p.concurrency, Math.floor(p.startConcurrency * p.rampFactor ** Math.min(steps, 64)));
    }
    function dispatch() {
      while (running < current && head < fifo.length) {
        const available = fifo.length - head;
        const oldestAt = fifo[head].availableAt;
        if (available < batchSize && now - oldestAt < timeoutMs) {
          const due = oldestAt + timeoutMs;
          if (due < timerAt) {
            timerAt = due;
            at(due, () => {
              timerAt = Number.POSITIVE_INFINITY;
              dispatch();
            });
          }
          break;
        }
        const batch = fifo.slice(head, head + batchSize);
        head += batch.length;
        if (head > 4096 && head * 2 > fifo.length) {
          fifo.splice(0, head);
          head = 0;
        }
        running++;
        if (firstDispatchAt === null) firstDispatchAt = now;
        if (running > stats.peakConcurrency && name === "delivery") stats.peakConcurrency = running;
        const startedAt = now;
        consume(batch, (d1WaitMs) => {
          running--;
          if (name === "delivery") {
            stats.invocations++;
            stats.invocationMs += now - startedAt;
            stats.invocationD1WaitMs += d1WaitMs;
            stats.maxWallMs = Math.max(stats.maxWallMs, now - startedAt);
          }
          // Queues re-evaluates concurrency only after a batch completes (consumer-concurrency docs).
          if (head < fifo.length || running >= current) current = Math.max(current, rampTo());
          if (name === "delivery" && current >= p.concurrency && stats.fullConcurrencyAt === null) stats.fullConcurrencyAt = now;
          dispatch();
        });
      }
      if (name === "delivery") record();
    }
    /** What the delivery consumers are doing, from now on (for the bottleneck): see `bottleneck()`. */
    function record() {
      const ready = head < fifo.length && (fifo.length - head >= batchSize || now - fifo[head].availableAt >= timeoutMs);
      let state = "busy";
      if (running < current) state = stats.shardsLeft === 0 && stats.inTransit === 0 ? "tail" : "starved";
      if (ready) state = current < p.concurrency ? "ramp" : "busy";
      const log = stats.stateLog;
      if (log.length === 0 || log[log.length - 1][1] !== state) log.push([now, state]);
    }
    return queue;
  }

  const notifications = makeQueue("notifications", {});

  // Delivery consumer: preferences read, inbox RPCs, D1 writes, external copies onto the notifications queue.
  const delivery = makeQueue("delivery", {
    batchSize: p.batch,
    timeoutMs: p.batchTimeoutS * 1000,
    consume(batch, done) {
      const count = batch.reduce((sum, message) => sum + message.recipients, 0);
      const external = batch.map((message) => Math.round(message.recipients * p.externalShare));
      const pageRows = external.map((copies) => copies * (1 + p.logIndexes) + 1);
      let writeQueries = batch.length;
      if (p.writeMode === "invocation") writeQueries = 1;
      if (p.writeMode === "recipient") writeQueries = external.reduce((a, b) => a + b, 0) + batch.length;
      const notifyMessages = [];
      for (const copies of external) {
        for (let left = copies; left > 0; left -= p.emailIdsPerMsg) {
          const ids = Math.min(left, p.emailIdsPerMsg);
          notifyMessages.push({ bytes: ids * ID_BYTES + MESSAGE_OVERHEAD_BYTES });
        }
      }
      const sendCalls = Math.ceil(notifyMessages.length / LIMITS.sendBatchMessages);
      stats.maxSubrequests = Math.max(stats.maxSubrequests, 1 + count + writeQueries + sendCalls);
      stats.maxD1Queries = Math.max(stats.maxD1Queries, 1 + writeQueries);
      stats.maxCpuMs = Math.max(stats.maxCpuMs, batch.length * p.cpuPageMs + count * p.cpuRpcMs);
      let d1Wait = 0;
      at(now + p.invokeMs, () =>
        d1(readMs(count), count, 0, (wait) => {
          d1Wait += wait;
          const start = now + batch.length * p.cpuPageMs;
          const lanes = makeLanes(Math.max(1, Math.min(p.inflight, count)), start);
          let lastDispatch = start - p.cpuRpcMs;
          let lastEnd = start;
          let pending = 0;
          const finishWrites = () => {
            stats.convergedAt = Math.max(stats.convergedAt, now);
            notifications.send(notifyMessages, now, (sent) => {
              stats.externalEnqueuedAt = Math.max(stats.externalEnqueuedAt, sent);
              done(d1Wait);
            });
          };
          const written = (wait) => {
            d1Wait += wait;
            if (--pending === 0) finishWrites();
          };
          batch.forEach((message, index) => {
            let pageEnd = start;
            for (let i = 0; i < message.recipients; i++) {
              const dispatchAt = Math.max(lanes.min(), lastDispatch + p.cpuRpcMs);
              const end = dispatchAt + p.rpcMs + (p.rpcTailMs > 0 ? -Math.log(1 - rng()) * p.rpcTailMs : 0);
              lanes.replaceMin(end);
              lastDispatch = dispatchAt;
              if (end > pageEnd) pageEnd = end;
              if (p.writeMode === "recipient" && i < external[index]) {
                pending++;
                at(end, () => d1(writeMs(1 + p.logIndexes), 0, 1 + p.logIndexes, written));
              }
            }
            stats.delivered += message.recipients;
            if (pageEnd > lastEnd) lastEnd = pageEnd;
            if (p.writeMode !== "invocation") {
              pending++;
              const rows = p.writeMode === "page" ? pageRows[index] : 1;
              at(pageEnd, () => d1(writeMs(rows), 0, rows, written));
            }
          });
          stats.firstInboxAt = Math.min(stats.firstInboxAt, start + p.rpcMs);
          stats.lastInboxAt = Math.max(stats.lastInboxAt, lastEnd);
          if (p.writeMode === "invocation") {
            const rows = pageRows.reduce((a, b) => a + b, 0);
            pending = 1;
            at(lastEnd, () => d1(writeMs(rows), 0, rows, written));
          }
        }),
      );
    },
  });

  // Audience resolution: each shard is a chain of resolve messages, one keyset page per step.
  const resolve = makeQueue("resolve", {
    batchSize: 1,
    timeoutMs: 0,
    consume([message], done) {
      const shard = message.shard;
      const stepStart = now;
      at(now + p.invokeMs, () => {
        const ids = Math.min(p.resolvePage, shard.remaining);
        const rows = Math.ceil(ids / p.activeShare);
        d1(readMs(rows), rows, 0, () => {
          shard.remaining -= ids;
          const messages = [];
          for (let left = ids; left > 0; left -= p.page) {
            const n = Math.min(left, p.page);
            messages.push({ recipients: n, bytes: n * ID_BYTES + MESSAGE_OVERHEAD_BYTES });
          }
          const finish = () => {
            stats.resolveSteps++;
            stats.resolveStepMs += now - stepStart + p.queueLatencyMs;
            done(0);
          };
          delivery.send(messages, now, () => {
            if (shard.remaining > 0) resolve.send([{ shard, bytes: MESSAGE_OVERHEAD_BYTES }], now, finish);
            else {
              stats.shardsLeft--;
              stats.resolutionDoneAt = Math.max(stats.resolutionDoneAt, now);
              finish();
            }
          });
        });
      });
    },
  });

  // The POST: count the audience, insert the broadcast row, start one chain per shard, answer 202.
  const scanned = Math.ceil(recipients / p.activeShare);
  d1(readMs(scanned), scanned, 0, () =>
    d1(writeMs(2), 0, 2, () => {
      const shards = [];
      for (let s = 0; s < p.shards; s++) {
        const remaining = Math.floor(recipients / p.shards) + (s < recipients % p.shards ? 1 : 0);
        if (remaining > 0) shards.push({ shard: { remaining }, bytes: MESSAGE_OVERHEAD_BYTES });
      }
      stats.shardsLeft = shards.length;
      resolve.send(shards, now, (t) => {
        stats.acceptedAt = t;
      });
    }),
  );

  while (heap.size > 0) {
    const event = heap.pop();
    now = event.t;
    event.fn();
  }
  if (stats.delivered !== recipients) throw new Error(`model error: delivered ${stats.delivered} of ${recipients}`);
  return stats;
}

/** Hard limits a setting breaks, as text (empty when none). */
function violations(p, stats) {
  const out = [];
  if (p.batch > LIMITS.maxBatchSize) out.push(`max_batch_size ${p.batch} > ${LIMITS.maxBatchSize}`);
  if (p.concurrency > LIMITS.maxConcurrency) out.push(`max_concurrency ${p.concurrency} > ${LIMITS.maxConcurrency}`);
  if (p.batchTimeoutS > LIMITS.maxBatchTimeoutS) out.push(`max_batch_timeout ${p.batchTimeoutS} s > ${LIMITS.maxBatchTimeoutS} s`);
  if (p.page * ID_BYTES + MESSAGE_OVERHEAD_BYTES > LIMITS.messageBytes) out.push(`a message of ${p.page} ids exceeds 128 KB`);
  if (p.queueRate > 5000) out.push(`--queue-rate ${p.queueRate} is above the documented 5,000 messages/s per queue`);
  if (stats !== undefined) {
    if (stats.maxSubrequests > LIMITS.subrequests) out.push(`${stats.maxSubrequests} subrequests per invocation > ${LIMITS.subrequests}`);
    if (stats.maxD1Queries > LIMITS.d1Queries) out.push(`${stats.maxD1Queries} D1 queries per invocation > ${LIMITS.d1Queries}`);
    if (stats.maxCpuMs > LIMITS.consumerCpuMs) out.push(`${Math.round(stats.maxCpuMs)} ms CPU per invocation > 30 s default`);
    if (stats.maxWallMs > LIMITS.consumerWallMs) out.push("an invocation exceeds 15 minutes of wall time");
  }
  return out;
}

/**
 * Which stage set the pace. The delivery consumers' time (up to the last inbox write) is split into: waiting for
 * messages with idle capacity ("starved": the upstream stages, resolution or a producer's queue throughput, set the
 * pace), holding a ready backlog below max_concurrency ("ramp": autoscaling set the pace), and busy at their limit
 * ("busy": the consumers set the pace; D1 when most of an invocation is spent queueing for it). The stage
 * capacities (recipients per second at steady state) are printed beside it.
 */
function bottleneck(recipients, p, s) {
  const perInvocation = s.delivered / s.invocations;
  const invocationMs = (s.invocationMs - s.invocationD1WaitMs) / s.invocations;
  const d1WaitShare = s.invocationD1WaitMs / s.invocationMs;
  const stepMs = s.resolveStepMs / s.resolveSteps;
  const upstream = [
    ["audience resolution (D1 pages → sendBatch)", (Math.min(p.shards, p.concurrency) * p.resolvePage * 1000) / stepMs],
    ["delivery queue throughput (messages/s × ids per message)", p.queueRate * p.page],
  ];
  const capacities = [
    ...upstream,
    ["delivery consumers (concurrency × batch ÷ invocation time)", (p.concurrency * perInvocation * 1000) / invocationMs],
    ["D1 (single-threaded: SQL time per recipient)", (recipients * 1000) / s.d1BusyMs],
  ];
  if (p.externalShare > 0) capacities.push(["notifications queue throughput", (p.queueRate * p.emailIdsPerMsg) / p.externalShare]);
  capacities.sort((a, b) => a[1] - b[1]);
  const shares = { starved: 0, ramp: 0, busy: 0, tail: 0 };
  const log = s.stateLog;
  for (let i = 0; i < log.length; i++) {
    const from = log[i][0];
    const to = Math.min(i + 1 < log.length ? log[i + 1][0] : s.lastInboxAt, s.lastInboxAt);
    if (to > from) shares[log[i][1]] += to - from;
  }
  const total = shares.starved + shares.ramp + shares.busy + shares.tail || 1;
  const pct = (x) => `${Math.round((x / total) * 100)}%`;
  const split = `consumers waiting for messages ${pct(shares.starved)}, held by the ramp ${pct(shares.ramp)}, busy ${pct(shares.busy)}, finishing the last batches ${pct(shares.tail)}`;
  const top = Object.entries(shares).sort((a, b) => b[1] - a[1])[0][0];
  let name;
  if (top === "ramp") name = "consumer autoscaling ramp";
  else if (top === "starved") name = upstream[0][1] <= upstream[1][1] ? "audience resolution" : "delivery queue throughput";
  else if (top === "tail") name = "invocation length (the last batches' RPCs: ids per invocation ÷ in-flight × RPC latency)";
  else if (d1WaitShare > 0.3) name = "D1 (single-threaded)";
  else name = "delivery consumers";
  // Consumers that wait on a saturated notifications queue look busy; name the queue when it is the slowest stage.
  if (name === "delivery consumers" && capacities[0][0].startsWith("notifications")) name = "notifications queue throughput";
  return { name, split, d1WaitShare, capacities, perInvocation, invocationMs, stepMs };
}

// ---------------------------------------------------------------------------------------------------------------
// Output

const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;
const int = (n) => Math.round(n).toLocaleString("en-US");

function report(recipients, p, s) {
  const b = bottleneck(recipients, p, s);
  const broken = violations(p, s);
  const lines = [
    `${int(recipients)} recipients`,
    `  202 answered at                ${seconds(s.acceptedAt)}`,
    `  audience fully enqueued at     ${seconds(s.resolutionDoneAt)}`,
    `  first inbox write at           ${seconds(s.firstInboxAt)}`,
    `  LAST INBOX WRITE AT            ${seconds(s.lastInboxAt)}   (${int((recipients * 1000) / s.lastInboxAt)} recipients/s overall)`,
    `  progress converged at          ${seconds(s.convergedAt)}`,
    `  external copies enqueued by    ${seconds(s.externalEnqueuedAt)}`,
    `  bottleneck                     ${b.name} (${b.split}; ${Math.round(b.d1WaitShare * 100)}% of invocation time queueing for D1)`,
    "  stage capacities (recipients/s):",
    ...b.capacities.map(([stage, rate]) => `    ${int(rate).padStart(11)}  ${stage}`),
    `  consumers: ${int(s.invocations)} invocations of ${int(b.perInvocation)} recipients, ${Math.round(b.invocationMs)} ms each (+ D1 queueing), peak ${s.peakConcurrency} concurrent, max_concurrency reached at ${s.fullConcurrencyAt === null ? "never" : seconds(s.fullConcurrencyAt)}`,
    `  per invocation (max): ${int(s.maxSubrequests)} subrequests, ${s.maxD1Queries} D1 queries, ${s.maxCpuMs.toFixed(0)} ms CPU, ${seconds(s.maxWallMs)} wall`,
    `  D1: ${int(s.d1Queries)} queries, ${seconds(s.d1BusyMs)} busy (${Math.round((s.d1BusyMs / s.lastInboxAt) * 100)}% of the run), longest queue wait ${Math.round(s.d1MaxWaitMs)} ms; ${int(s.rowsRead)} rows read, ${int(s.rowsWritten)} rows written`,
    `  queue messages: ${int(s.queueMessages.resolve)} resolve, ${int(s.queueMessages.delivery)} delivery, ${int(s.queueMessages.notifications)} notifications`,
  ];
  if (broken.length > 0) lines.push(`  BREAKS A DOCUMENTED LIMIT: ${broken.join("; ")}`);
  return lines.join("\n");
}

function settingsTable(sizes, base) {
  const rows = [
    ["defaults", {}],
    ["batch 1", { batch: 1 }],
    ["batch 50", { batch: 50 }],
    ["batch 100", { batch: 100 }],
    ["concurrency 50", { concurrency: 50 }],
    ["1 id per message, batch 100", { page: 1, batch: 100 }],
    ["in-flight 6", { inflight: 6 }],
    ["instant ramp", { startConcurrency: Number.POSITIVE_INFINITY }],
    ["slow ramp (×2 per 5 s)", { rampIntervalMs: 5000 }],
    ["inbox only (no external copy)", { externalShare: 0 }],
    ["D1 write per recipient", { writeMode: "recipient" }, 100_000],
    ["1 e-mail id per message", { emailIdsPerMsg: 1 }],
    ["RPC 200 ms + 200 ms tail", { rpcMs: 200, rpcTailMs: 200 }],
  ];
  const header = ["setting", "rcpt/inv", ...sizes.map((n) => `${int(n)}`), "bottleneck (largest size run)"];
  const body = rows.map(([label, overrides, largest = Number.POSITIVE_INFINITY]) => {
    const p = { ...base, ...overrides };
    const cells = [label, int(p.batch * p.page)];
    let last;
    let lastSize;
    for (const n of sizes) {
      if (n > largest) {
        cells.push("not run");
        continue;
      }
      last = simulate(n, p);
      lastSize = n;
      const broken = violations(p, last);
      const cell = `${seconds(last.lastInboxAt)} / ${seconds(last.convergedAt)}`;
      cells.push(broken.length > 0 ? `${cell} (!)` : cell);
    }
    const broken = last === undefined ? [] : violations(p, last);
    if (last === undefined) cells.push("not run");
    else cells.push(broken.length > 0 ? `breaks: ${broken[0]}` : bottleneck(lastSize, p, last).name.split(" (")[0]);
    return cells;
  });
  const widths = header.map((_, i) => Math.max(header[i].length, ...body.map((row) => row[i].length)));
  const line = (row) =>
    `| ${row.map((cell, i) => (i === 0 || i === row.length - 1 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join(" | ")} |`;
  return [
    line(header),
    `|${widths.map((w, i) => (i === 0 || i === widths.length - 1 ? "-".repeat(w + 2) : `${"-".repeat(w + 1)}:`)).join("|")}|`,
    ...body.map(line),
  ].join("\n");
}

function main() {
  let parsed;
  try {
    parsed = parseArgs(process.argv.slice(2));
  } catch (error) {
    console.error(`${error.message}\n\n${usage()}`);
    process.exit(2);
  }
  const { opts, flags } = parsed;
  if (flags.help) {
    console.log(usage());
    return;
  }
  const notes = [];
  if (flags.bench !== null) {
    const bench = benchFigures(flags.bench);
    Object.assign(opts, bench.overrides);
    notes.push(bench.note);
  }
  const upfront = violations(opts);
  if (upfront.length > 0) notes.push(`WARNING: ${upfront.join("; ")}`);
  const sizes = opts.recipients === null ? [100_000, 1_000_000] : [Math.round(opts.recipients)];
  if (sizes[0] < 1) {
    console.error("--recipients must be at least 1");
    process.exit(2);
  }
  const started = performance.now();
  console.log("Broadcast fan-out MODEL (assumed latencies, documented limits; not a measurement)");
  const ms = (x) => `${Number(x.toFixed(2))} ms`;
  const ramp = Number.isFinite(opts.startConcurrency)
    ? `ramp from ${opts.startConcurrency} ×${opts.rampFactor} per ${ms(opts.rampIntervalMs)}`
    : "no ramp";
  console.log(
    `settings: ${opts.page} ids/message, batch ${opts.batch}, concurrency ${opts.concurrency} (${ramp}), ${opts.inflight} RPCs in flight, ` +
      `${opts.shards} resolution shards × ${opts.resolvePage} ids, D1 writes per ${opts.writeMode}, RPC ${ms(opts.rpcMs)} + exp(${ms(opts.rpcTailMs)}), ` +
      `D1 RTT ${ms(opts.d1RttMs)}, D1 write ${ms(opts.d1WriteMs)} + ${ms(opts.d1WriteRowMs)}/row, queue latency ${ms(opts.queueLatencyMs)}`,
  );
  for (const note of notes) console.log(note);
  for (const n of sizes) {
    console.log("");
    console.log(report(n, opts, simulate(n, opts)));
  }
  if (flags.table) {
    console.log("");
    console.log("Last inbox write / progress converged, one setting changed at a time ((!) = breaks a documented limit):");
    console.log(settingsTable(sizes, opts));
  }
  console.log("");
  console.log(`(model run took ${((performance.now() - started) / 1000).toFixed(1)} s)`);
}

main();
