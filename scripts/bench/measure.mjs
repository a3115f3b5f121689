// Measurements: throughput with autocannon, latency with a sequential keep-alive client timed in microseconds
// (autocannon's histograms keep whole milliseconds, too coarse for targets of a few ms), watch and resume latency
// over a real WebSocket.
import http from "node:http";
import { performance } from "node:perf_hooks";
import autocannon from "autocannon";

/** Percentile of an ascending array (nearest rank). */
export function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
}

export function summarize(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  const mean = sorted.reduce((s, x) => s + x, 0) / (sorted.length || 1);
  return {
    samples: sorted.length,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    min: sorted[0],
    max: sorted[sorted.length - 1],
    mean,
  };
}

/**
 * Requests per second with autocannon after a short warm-up. Every response must be 2xx: a run that answered
 * errors measured the error path, so it is reported as such.
 */
export async function throughput({ url, method = "GET", headers = {}, body, connections, duration, warmup = 1, paths }) {
  const common = { url, method, headers, body, connections, ...(paths ? { requests: [{ setupRequest: inTurn(paths) }] } : {}) };
  if (warmup > 0) await autocannon({ ...common, duration: warmup });
  const r = await autocannon({ ...common, duration });
  const ok = r["2xx"];
  const bad = r.non2xx + r.errors + r.timeouts;
  return {
    reqPerSec: r.requests.average,
    requests: r.requests.total,
    ok,
    bad,
    statusCodes: r.statusCodeStats,
    latencyMsUnderLoad: { p50: r.latency.p50, p99: r.latency.p99 },
    connections,
    durationS: duration,
  };
}

/** An autocannon `setupRequest` giving each request the next of `paths`, across all connections, in turn. */
export function inTurn(paths) {
  let next = 0;
  return (request) => ({ ...request, path: paths[next++ % paths.length] });
}

/** One keep-alive connection, requests one after another: the service's latency without queueing. */
export function sequentialClient(base) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const target = new URL(base);
  function request(method, path, { headers = {}, body } = {}) {
    return new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body);
      const started = performance.now();
      const req = http.request(
        {
          agent,
          host: target.hostname,
          port: target.port,
          method,
          path,
          headers: {
            ...headers,
            ...(payload === undefined ? {} : { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(payload) }),
          },
        },
        (res) => {
          const chunks = [];
          res.on("data", (c) => chunks.push(c));
          res.on("end", () => resolve({ status: res.statusCode, ms: performance.now() - started, text: Buffer.concat(chunks).toString("utf8") }));
          res.on("error", reject);
        },
      );
      req.on("error", reject);
      req.setTimeout(30_000, () => req.destroy(new Error(`timeout: ${method} ${path}`)));
      if (payload !== undefined) req.write(payload);
      req.end();
    });
  }
  return { request, close: () => agent.destroy() };
}

/** Latency of one request repeated sequentially: `samples` timed after `warmup`, stopping early at `maxSeconds`. */
export async function latency(
  client,
  { method = "GET", path, headers, body, samples, warmup = 10, maxSeconds = 10, expect = (s) => s >= 200 && s < 300 },
) {
  for (let i = 0; i < warmup; i++) await client.request(method, path, { headers, body });
  const times = [];
  let bad = 0;
  let lastBad;
  const deadline = performance.now() + maxSeconds * 1000;
  while (times.length < samples && performance.now() < deadline) {
    const r = await client.request(method, path, { headers, body });
    if (!expect(r.status)) {
      bad++;
      lastBad = `${r.status} ${r.text.slice(0, 200)}`;
    }
    times.push(r.ms);
  }
  return { ...summarize(times), bad, lastBad };
}

/**
 * Latency of several requests measured alternately (a, b, a, b, …), so that a machine getting busier or quieter
 * during the run shifts all of them alike and their ratio stays fair.
 */
export async function interleavedLatency(client, requests, { samples, warmup = 10, maxSeconds = 20 }) {
  const names = Object.keys(requests);
  for (let i = 0; i < warmup; i++) for (const n of names) await client.request(requests[n].method ?? "GET", requests[n].path, requests[n]);
  const times = Object.fromEntries(names.map((n) => [n, []]));
  const bad = Object.fromEntries(names.map((n) => [n, 0]));
  const deadline = performance.now() + maxSeconds * 1000;
  for (let i = 0; i < samples && performance.now() < deadline; i++) {
    for (const n of names) {
      const r = await client.request(requests[n].method ?? "GET", requests[n].path, requests[n]);
      if (r.status < 200 || r.status >= 300) bad[n]++;
      times[n].push(r.ms);
    }
  }
  return Object.fromEntries(names.map((n) => [n, { ...summarize(times[n]), bad: bad[n] }]));
}

/** Raw timings of several requests sent alternately (a, b, a, b, …), for a statistical comparison of the sets. */
export async function interleavedSamples(client, requests, { samples, warmup = 5 }) {
  const names = Object.keys(requests);
  for (let i = 0; i < warmup; i++) for (const n of names) await client.request(requests[n].method ?? "GET", requests[n].path, requests[n]);
  const times = Object.fromEntries(names.map((n) => [n, []]));
  const statuses = Object.fromEntries(names.map((n) => [n, new Set()]));
  for (let i = 0; i < samples; i++) {
    // Alternate which goes first, so neither always follows the other's background work.
    for (const n of i % 2 === 0 ? names : [...names].reverse()) {
      const r = await client.request(requests[n].method ?? "GET", requests[n].path, requests[n]);
      times[n].push(r.ms);
      statuses[n].add(r.status);
    }
  }
  return Object.fromEntries(names.map((n) => [n, { samples: times[n], statuses: [...statuses[n]] }]));
}

/**
 * Like interleavedSamples, but what is timed is `followUp`, sent right after each request: whether a request leaves
 * work behind that slows the next one the same isolate serves (the A5 follow-up, docs/benchmarks.md).
 */
export async function followUpSamples(client, requests, followUp, { samples, warmup = 5 }) {
  const send = (r) => client.request(r.method ?? "GET", r.path, r);
  const names = Object.keys(requests);
  for (let i = 0; i < warmup; i++) {
    for (const n of names) {
      await send(requests[n]);
      await send(followUp);
    }
  }
  const times = Object.fromEntries(names.map((n) => [n, []]));
  const statuses = Object.fromEntries(names.map((n) => [n, new Set()]));
  for (let i = 0; i < samples; i++) {
    for (const n of i % 2 === 0 ? names : [...names].reverse()) {
      await send(requests[n]);
      const r = await send(followUp);
      times[n].push(r.ms);
      statuses[n].add(r.status);
    }
  }
  return Object.fromEntries(names.map((n) => [n, { samples: times[n], statuses: [...statuses[n]] }]));
}

/**
 * N5 delivery latency: one watch socket open, then `samples` custom notifications sent one after another; each is
 * timed from just before the POST until its frame arrives on the socket.
 */
export async function watchLatency({ base, client, token, samples, timeoutMs = 5_000, maxSeconds = 60 }) {
  const wsUrl = `${base.replace(/^http/, "ws")}/api/v2/notifications/inbox/watch`;
  // The browser way: the token travels as a subprotocol, only "herald.v1" is echoed (docs/api.md, Watching the inbox).
  const ws = new WebSocket(wsUrl, ["herald.v1", `herald.token.${token}`]);
  await new Promise((resolve, reject) => {
    ws.addEventListener("open", resolve, { once: true });
    ws.addEventListener("error", () => reject(new Error("watch socket failed to open")), { once: true });
  });
  const waiting = new Map();
  let strayFrames = 0;
  ws.addEventListener("message", (event) => {
    const arrived = performance.now();
    let title;
    try {
      title = JSON.parse(String(event.data)).notification?.title;
    } catch {
      strayFrames++;
      return;
    }
    const resolve = waiting.get(title);
    if (resolve) {
      waiting.delete(title);
      resolve(arrived);
    } else strayFrames++;
  });

  const delivery = [];
  const postMs = [];
  let missed = 0;
  let badPosts = 0;
  let lastBad;
  const deadline = performance.now() + maxSeconds * 1000;
  const headers = { "Service-Session-Token": token };
  for (let i = 0; i < samples + 5 && performance.now() < deadline; i++) {
    const title = `watch-bench-${i}-${Math.random().toString(36).slice(2, 8)}`;
    const frame = new Promise((resolve) => waiting.set(title, resolve));
    const sent = performance.now();
    const r = await client.request("POST", "/api/v2/notifications/custom", { headers, body: { content: { title, message: "Latency probe." } } });
    if (r.status !== 204) {
      badPosts++;
      lastBad = `${r.status} ${r.text.slice(0, 200)}`;
      waiting.delete(title);
      continue;
    }
    const timeout = new Promise((resolve) => setTimeout(() => resolve(undefined), timeoutMs));
    const arrived = await Promise.race([frame, timeout]);
    if (arrived === undefined) {
      missed++;
      waiting.delete(title);
      continue;
    }
    if (i < 5) continue; // warm-up
    delivery.push(arrived - sent);
    postMs.push(r.ms);
  }
  ws.close(1000);
  return { ...summarize(delivery), post: summarize(postMs), missed, badPosts, lastBad, strayFrames };
}

/**
 * Resume latency (docs/inbox.md, "Sequenced sync and resume"): `samples` times, the inbox's current `seq` is read
 * from the counts, `missed` events happen while no socket is open (`makeEvents`), then a watch socket opens with
 * `after_seq` set to that `seq`. Timed from just before `new WebSocket(...)` until the first replayed frame arrives,
 * and until the last of the `missed`; the frames must be exactly seq+1 … seq+missed, in order, and no other frame may
 * follow within `extraWaitMs`.
 */
export async function resumeLatency({
  base,
  client,
  token,
  samples,
  makeEvents,
  missed = 100,
  warmup = 2,
  timeoutMs = 5_000,
  extraWaitMs = 25,
  maxSeconds = 30,
}) {
  const wsUrl = `${base.replace(/^http/, "ws")}/api/v2/notifications/inbox/watch`;
  const headers = { "Service-Session-Token": token };
  const firstFrame = [];
  const allFrames = [];
  const opened = [];
  const problems = [];
  let incomplete = 0;
  let outOfOrder = 0;
  const deadline = performance.now() + maxSeconds * 1000;
  for (let i = 0; i < samples + warmup && performance.now() < deadline; i++) {
    const counts = await client.request("GET", "/api/v2/notifications/inbox/counts", { headers });
    if (counts.status !== 200) throw new Error(`counts answered ${counts.status} ${counts.text.slice(0, 200)}`);
    const seq = JSON.parse(counts.text).seq;
    const made = await makeEvents(missed);
    if (made !== missed) throw new Error(`${made} of ${missed} events were made while no socket was open`);

    const started = performance.now();
    const ws = new WebSocket(`${wsUrl}?after_seq=${seq}`, ["herald.v1", `herald.token.${token}`]);
    const seqs = [];
    const times = [];
    let openedAt;
    const outcome = await new Promise((resolve) => {
      const timer = setTimeout(() => resolve(`timed out after ${timeoutMs} ms`), timeoutMs);
      const done = (why) => {
        clearTimeout(timer);
        resolve(why);
      };
      ws.addEventListener(
        "open",
        () => {
          openedAt = performance.now();
        },
        { once: true },
      );
      ws.addEventListener("message", (event) => {
        times.push(performance.now());
        try {
          seqs.push(JSON.parse(String(event.data)).seq);
        } catch {
          seqs.push(undefined);
        }
        if (seqs.length === missed) done(undefined);
      });
      ws.addEventListener("error", () => done("socket error"), { once: true });
      ws.addEventListener("close", (event) => done(`closed with ${event.code} ${event.reason}`), { once: true });
    });
    // Nothing else happens to the inbox now, so any frame after the last expected one is one too many.
    if (outcome === undefined) await new Promise((resolve) => setTimeout(resolve, extraWaitMs));
    ws.close(1000);

    const inOrder = seqs.length === missed && seqs.every((s, k) => s === seq + 1 + k);
    if (outcome !== undefined) {
      incomplete++;
      problems.push(`after_seq=${seq}: ${seqs.length} of ${missed} frames, then ${outcome}`);
      continue;
    }
    if (!inOrder) {
      outOfOrder++;
      problems.push(`after_seq=${seq}: ${seqs.length} frames, seqs ${seqs.slice(0, 5).join(",")}… (expected ${seq + 1}…${seq + missed})`);
      continue;
    }
    if (i < warmup) continue;
    firstFrame.push(times[0] - started);
    allFrames.push(times[missed - 1] - started);
    if (openedAt !== undefined) opened.push(openedAt - started);
  }
  return {
    missed,
    firstFrame: summarize(firstFrame),
    allFrames: summarize(allFrames),
    open: summarize(opened),
    incomplete,
    outOfOrder,
    problems: problems.slice(0, 5),
  };
}
