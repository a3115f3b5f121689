// `npm run bench:profile`: where a request's CPU goes. Herald (built without minification, so frames keep their
// names) runs in workerd exactly as `npm run bench` runs it, with workerd's V8 inspector on; for each hot path the
// script records a V8 CPU profile while autocannon drives that one route, then reports:
//   - the JS CPU per request (sampled time that is neither idle nor in the GC … per request answered), and
//   - that time split by "step": each sample is charged to the source of the frame it was taken in (through the
//     bundle's source map: a Hono middleware, Hono's router or core, a package, or Herald's own function), so the
//     steps add up and code resumed after an `await` is still charged to the function it belongs to.
// The numbers are for comparison between steps and between runs on one machine; the sampler itself costs some CPU.
// docs/benchmarks.md ("Where the time goes") has the method and the figures.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { originalPositionFor, TraceMap } from "@jridgewell/trace-mapping";
import autocannon from "autocannon";
import { applyMigrations, build, generateSecretKey, root, start } from "./harness.mjs";
import { inTurn } from "./measure.mjs";
import { deliverThroughObject } from "./seed.mjs";

const HOST = "127.0.0.1";
const PASSWORD = "Plum-Kettle-Orbit-97-Lantern";
const SECONDS = Number(process.env.PROFILE_SECONDS ?? 4);
const CONNECTIONS = 8;
/** µs between samples: fine enough for requests of tens of µs. */
const SAMPLING_US = 50;
const only = process.env.PROFILE_ONLY?.split(",");

/**
 * What a source file of the bundle is, for the breakdown: Hono's middleware by name, the rest of Hono by part,
 * other packages by name, and Herald's own code by file and function (so each of its middleware is its own row).
 */
function stepOf(source, functionName) {
  if (!source) return undefined;
  const hono = /node_modules\/hono\/dist\/(.+)$/.exec(source)?.[1];
  if (hono) {
    const middleware = /^middleware\/([^/]+)\//.exec(hono)?.[1];
    if (middleware) return `hono middleware: ${middleware}`;
    if (hono.startsWith("router/")) return "hono: router (TrieRouter match)";
    if (/^(validator|helper\/route)/.test(hono)) return `hono: ${hono.split("/")[0]}`;
    return "hono: core (dispatch, compose, Context, Request)";
  }
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(source)?.[1];
  if (pkg) return pkg;
  const own = /(?:^|\/)(src\/.+)$/.exec(source)?.[1];
  if (own) return `${own} ${functionName || "(anonymous)"}`;
  return source;
}

/**
 * Sums a profile's sample time by category and by step. Each sample is charged to the source of its own frame, found
 * through the bundle's source map; a native frame (a Response or Headers call, a crypto digest) is charged to the
 * JS frame that called it, marked "(native)". So the steps add up to the busy time, and an `await` that resumes a
 * function later is still charged to that function.
 */
function analyse(profile, requests, map) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const selfUs = new Map();
  for (const [i, id] of profile.samples.entries()) selfUs.set(id, (selfUs.get(id) ?? 0) + Math.max(0, profile.timeDeltas[i] ?? 0));
  const located = new Map();
  const locate = (frame) => {
    if (!frame.url || !map || !frame.url.endsWith("index.js")) return frame.url ? path.basename(frame.url) : undefined;
    const key = `${frame.lineNumber}:${frame.columnNumber}`;
    if (!located.has(key)) located.set(key, originalPositionFor(map, { line: frame.lineNumber + 1, column: frame.columnNumber }).source ?? undefined);
    return located.get(key);
  };
  const steps = new Map();
  const functions = new Map();
  let idle = 0;
  let gc = 0;
  let busy = 0;
  for (const [id, us] of selfUs) {
    const node = byId.get(id);
    const frame = node.callFrame;
    const name = frame.functionName;
    if (name === "(idle)") {
      idle += us;
      continue;
    }
    busy += us;
    if (name === "(garbage collector)") gc += us;
    let step;
    if (name === "(program)") step = "runtime outside JS ((program))";
    else if (name === "(garbage collector)") step = "garbage collector";
    else if (frame.url) step = stepOf(locate(frame), name);
    else {
      // A native function: charged to the nearest caller with a source.
      let at = parent.get(id);
      while (at !== undefined && !byId.get(at).callFrame.url) at = parent.get(at);
      const caller = at === undefined ? undefined : byId.get(at).callFrame;
      step = caller ? `${stepOf(locate(caller), caller.functionName)} (native)` : `native ${name || "(anonymous)"}`;
    }
    step ??= "other";
    steps.set(step, (steps.get(step) ?? 0) + us);
    const where = frame.url ? `${name || "(anonymous)"} ${locate(frame) ?? path.basename(frame.url)}` : name || "(native)";
    functions.set(where, (functions.get(where) ?? 0) + us);
  }
  const perRequest = (us) => us / requests;
  return {
    requests,
    busyUsPerRequest: perRequest(busy),
    gcUsPerRequest: perRequest(gc),
    idleShare: idle / (idle + busy),
    steps: [...steps].sort((a, b) => b[1] - a[1]).map(([step, us]) => ({ step, usPerRequest: perRequest(us), share: us / busy })),
    topFunctions: [...functions]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 15)
      .map(([fn, us]) => ({ fn, usPerRequest: perRequest(us) })),
  };
}

async function api(base, method, route, { token, body } = {}) {
  const res = await fetch(`${base}/api/v2${route}`, {
    method,
    headers: { ...(token ? { "Service-Session-Token": token } : {}), ...(body ? { "Content-Type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${route} → ${res.status} ${text.slice(0, 200)}`);
  return text ? JSON.parse(text) : undefined;
}

/** A Chrome DevTools Protocol session over the inspector's WebSocket. */
async function inspect(url) {
  const ws = new WebSocket(url);
  await new Promise((resolve, reject) => {
    ws.addEventListener("open", resolve, { once: true });
    ws.addEventListener("error", () => reject(new Error(`cannot reach the inspector at ${url}`)), { once: true });
  });
  let next = 0;
  const pending = new Map();
  ws.addEventListener("message", (event) => {
    const message = JSON.parse(String(event.data));
    const waiter = pending.get(message.id);
    if (!waiter) return;
    pending.delete(message.id);
    if (message.error) waiter.reject(new Error(message.error.message));
    else waiter.resolve(message.result);
  });
  return {
    send: (method, params = {}) =>
      new Promise((resolve, reject) => {
        const id = ++next;
        pending.set(id, { resolve, reject });
        ws.send(JSON.stringify({ id, method, params }));
      }),
    close: () => ws.close(),
  };
}

/** Finds the inspector target of one Worker (miniflare's proxy lists them at /json). */
async function targetUrl(port, worker) {
  for (let attempt = 0; attempt < 50; attempt++) {
    const res = await fetch(`http://${HOST}:${port}/json`).catch(() => undefined);
    if (res?.ok) {
      const targets = await res.json();
      const target = targets.find((t) => t.title?.includes(worker) || t.id?.includes(worker) || t.webSocketDebuggerUrl?.includes(worker));
      if (target) return target.webSocketDebuggerUrl;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no inspector target for ${worker} on port ${port}`);
}

async function main() {
  const tmp = mkdtempSync(path.join(tmpdir(), "herald-profile-"));
  const outdir = path.join(tmp, "dist");
  let mf;
  try {
    console.log("building without minification (names kept for the profile)");
    await build(outdir, { minify: false });
    const map = new TraceMap(JSON.parse(readFileSync(path.join(outdir, "index.js.map"), "utf8")));
    let urls;
    let inspectorPort;
    ({ mf, urls, inspectorPort } = await start({
      outdir,
      stateDir: path.join(tmp, "state"),
      host: HOST,
      secretKey: generateSecretKey(),
      inspect: true,
    }));
    await applyMigrations(mf);
    const base = urls.herald;
    const first = await api(base, "POST", "/users/first", { body: { email: "ada@bench.example.com", username: "ada", password: PASSWORD } });
    const token = (await api(base, "POST", "/users/login", { body: { email: "ada@bench.example.com", password: PASSWORD } })).session_token;
    await deliverThroughObject(urls.helper, first.user_id, 25);
    const inbox = await api(base, "GET", "/notifications/inbox", { token });
    const header = { "Service-Session-Token": token };
    const checks = {};
    for (let i = 0; i < 100; i++) {
      checks[`check_${i}`] =
        i % 10 < 6
          ? { action: "read", object: { resource_type: "notification_template" } }
          : {
              action: "update",
              object: { resource_type: "inbox_notification", resource_id: i % 10 === 6 ? inbox.notifications[0].id : crypto.randomUUID() },
            };
    }
    const scenarios = [
      { name: "trivial Worker", worker: "trivial", url: `${urls.trivial}/` },
      { name: "reference: bare Hono, GET /healthz", worker: "hono-bare", url: `${urls["hono-bare"]}/healthz` },
      {
        name: "reference: Hono + Herald's response headers, GET /healthz",
        worker: "hono-headers",
        url: `${urls["hono-headers"]}/healthz`,
      },
      {
        name: "reference: the trivial Worker + Herald's response headers",
        worker: "plain-headers",
        url: `${urls["plain-headers"]}/`,
      },
      { name: "GET /healthz", url: `${base}/healthz` },
      { name: "GET /notifications/dispatch-methods (authentication alone)", url: `${base}/api/v2/notifications/dispatch-methods`, headers: header },
      { name: "GET /users/me", url: `${base}/api/v2/users/me`, headers: header },
      { name: "GET /notifications/inbox (25 items)", url: `${base}/api/v2/notifications/inbox`, headers: header },
      {
        // Not the page the object keeps (docs/inbox.md, "The last page, kept"): the limit goes 25 … 33 in turn, the
        // same 25 items each time.
        name: "GET /notifications/inbox (25 items), not the page kept",
        url: base,
        headers: header,
        paths: Array.from({ length: 9 }, (_, i) => `/api/v2/notifications/inbox?limit=${25 + i}`),
      },
      { name: "GET /notifications/inbox/counts", url: `${base}/api/v2/notifications/inbox/counts`, headers: header },
      {
        name: "POST /authcheck (100 checks, 40 inbox lookups)",
        url: `${base}/api/v2/authcheck`,
        method: "POST",
        headers: { ...header, "Content-Type": "application/json" },
        body: JSON.stringify({ checks }),
      },
    ].filter((s) => !only || only.some((o) => s.name.includes(o)));
    const report = [];
    for (const s of scenarios) {
      const session = await inspect(await targetUrl(inspectorPort, s.worker ?? "herald"));
      try {
        await session.send("Profiler.enable");
        await session.send("Profiler.setSamplingInterval", { interval: SAMPLING_US });
        const turns = s.paths && { requests: [{ setupRequest: inTurn(s.paths) }] };
        const load = { url: s.url, method: s.method ?? "GET", headers: s.headers ?? {}, body: s.body, connections: CONNECTIONS, ...turns };
        await autocannon({ ...load, duration: 1 });
        await session.send("Profiler.start");
        const run = await autocannon({ ...load, duration: SECONDS });
        const { profile } = await session.send("Profiler.stop");
        if (run.non2xx + run.errors > 0) throw new Error(`${s.name}: ${run.non2xx} non-2xx, ${run.errors} errors`);
        writeFileSync(path.join(root, "bench", `${s.name.replace(/[^a-z0-9]+/gi, "-").replace(/^-|-$/g, "")}.cpuprofile`), JSON.stringify(profile));
        report.push({ scenario: s.name, ...analyse(profile, run.requests.total, s.worker ? undefined : map) });
      } finally {
        session.close();
      }
    }
    for (const r of report) {
      console.log(
        `\n## ${r.scenario}: ${r.busyUsPerRequest.toFixed(1)} µs of sampled CPU per request (GC ${r.gcUsPerRequest.toFixed(1)} µs), ${r.requests} requests`,
      );
      for (const s of r.steps) console.log(`  ${s.usPerRequest.toFixed(1).padStart(7)} µs  ${(s.share * 100).toFixed(1).padStart(5)}%  ${s.step}`);
      console.log("  top functions by self time:");
      for (const f of r.topFunctions.slice(0, 10)) console.log(`  ${f.usPerRequest.toFixed(1).padStart(7)} µs  ${f.fn}`);
    }
    writeFileSync(
      path.join(root, "bench", "profile.json"),
      `${JSON.stringify({ date: new Date().toISOString(), samplingUs: SAMPLING_US, seconds: SECONDS, connections: CONNECTIONS, report }, null, 2)}\n`,
    );
    console.log("\nwrote bench/profile.json and one .cpuprofile per scenario in bench/ (open them in Chrome DevTools)");
  } finally {
    await mf?.dispose();
    rmSync(tmp, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(`[profile] ${error?.stack ?? error}`);
    process.exit(1);
  },
);
