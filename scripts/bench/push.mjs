// The CPU one Web Push message costs Herald (docs/benchmarks.md, "Web Push"): encrypting the payload to the browser
// (RFC 8291) and signing its VAPID token (RFC 8292), the code delivery runs (src/push/message.ts, `pushRequest`),
// bundled into a Worker and run in workerd through miniflare. workerd's clocks do not move while a request computes,
// so the CPU is read from outside: the workerd process's own CPU time (/proc/<pid>/task/*/schedstat, nanoseconds) around
// a request that builds `n` messages, less the same around a request that builds none, over `n`.
//
//   node scripts/bench/push.mjs          (BENCH_PUSH_SAMPLES=200 samples of BENCH_PUSH_BATCH=20 messages)
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { miniflare, root, runWhenMain } from "./harness.mjs";
import { summarize } from "./measure.mjs";

/** A browser's subscription keys (RFC 8291's example user agent) and a deployment's VAPID key pair (the suites'). */
const SUBSCRIBER = {
  endpoint: "https://fcm.googleapis.com/fcm/send/bench",
  p256dh: "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4",
  auth: "BTBZMqHH6r4Tts7J_aSIgg",
};

/**
 * The bench Worker: `GET /?n=…&what=push|encrypt|sign` builds n messages of a typical payload (a 200-character body)
 * and answers their total size, so nothing is optimised away. `push` is the whole of it, `encrypt` and `sign` its parts.
 */
const WORKER_SOURCE = `
import { encryptPayload, fromBase64url } from "./src/push/encryption.ts";
import { encodePayload, inboxItemUrl, pushRequest } from "./src/push/message.ts";
import { vapidSigner } from "./src/push/vapid.ts";
import { TEST_VAPID_KEYS } from "./test/fixtures/vars.ts";

const SUBSCRIBER = ${JSON.stringify(SUBSCRIBER)};
const CONFIG = { ...TEST_VAPID_KEYS, vapidSubject: "mailto:herald@herald.test" };
const KEYS = { p256dh: fromBase64url(SUBSCRIBER.p256dh), auth: fromBase64url(SUBSCRIBER.auth) };

function payload(i) {
  const id = crypto.randomUUID();
  return encodePayload({
    id,
    title: "Deploy finished #" + i,
    body: "The deploy of herald to production finished: 42 checks passed, nothing failed. ".repeat(3).slice(0, 200),
    url: inboxItemUrl("https://herald.example.com", id),
    created_at: new Date().toISOString(),
  });
}

export default {
  async fetch(request) {
    const url = new URL(request.url);
    const n = Number(url.searchParams.get("n") ?? 0);
    const what = url.searchParams.get("what") ?? "push";
    const signer = await vapidSigner(CONFIG);
    let bytes = 0;
    for (let i = 0; i < n; i++) {
      if (what === "push") bytes += (await pushRequest(signer, SUBSCRIBER, payload(i), "normal")).body.byteLength;
      else if (what === "encrypt") bytes += (await encryptPayload(payload(i), KEYS)).byteLength;
      else bytes += (await signer.authorization("https://fcm.googleapis.com")).length;
    }
    return new Response(String(bytes));
  },
};`;

async function bundle() {
  const esbuild = createRequire(path.join(root, "package.json"))("esbuild");
  const out = await esbuild.build({
    stdin: { contents: WORKER_SOURCE, resolveDir: root, loader: "ts" },
    bundle: true,
    format: "esm",
    platform: "browser",
    conditions: ["workerd", "worker", "browser"],
    minify: true,
    write: false,
    logLevel: "error",
  });
  return out.outputFiles[0].text;
}

/** The workerd processes this one started (miniflare's), by their parent. */
export function workerdPids() {
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
        const [, comm, rest] = /^\d+ \((.*)\) (.*)$/s.exec(stat) ?? [];
        return comm === "workerd" && rest?.split(" ")[1] === String(process.pid);
      } catch {
        return false;
      }
    });
}

/** CPU time of every thread of the process, in ns (the first field of each task's schedstat). */
export function cpuNs(pid) {
  let total = 0;
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    total += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, "utf8").split(" ")[0]);
  }
  return total;
}

async function main() {
  const samples = Number(process.env.BENCH_PUSH_SAMPLES ?? 200);
  const batch = Number(process.env.BENCH_PUSH_BATCH ?? 20);
  const log = (msg) => console.log(`[bench push] ${msg}`);
  const { Miniflare, Log, LogLevel, convertV4MiniflareOptions } = miniflare;
  // The runtime Herald runs on: wrangler.toml's compatibility date.
  const compatibilityDate = /^compatibility_date = "([\d-]+)"/m.exec(readFileSync(path.join(root, "wrangler.toml"), "utf8"))?.[1];
  const mf = new Miniflare(
    convertV4MiniflareOptions({
      log: new Log(LogLevel.WARN),
      workers: [
        {
          name: "push",
          modules: [{ type: "ESModule", path: "push.mjs", contents: await bundle() }],
          compatibilityDate,
          unsafeDirectSockets: [{ host: "127.0.0.1", port: 0, proxy: false }],
        },
      ],
    }),
  );
  try {
    await mf.ready;
    const base = (await mf.unsafeGetDirectURL("push")).origin;
    const [pid, ...others] = workerdPids();
    if (!pid || others.length > 0) throw new Error(`expected one workerd child, found ${[pid, ...others].join(", ") || "none"}`);
    const call = async (query) => {
      const res = await fetch(`${base}/?${query}`);
      if (!res.ok) throw new Error(`${query}: ${res.status} ${await res.text()}`);
      return res.text();
    };
    /** CPU of one request, ns. */
    const cost = async (query) => {
      const before = cpuNs(pid);
      await call(query);
      return cpuNs(pid) - before;
    };
    const results = {};
    for (const what of ["push", "encrypt", "sign"]) {
      for (let i = 0; i < 20; i++) await call(`n=${batch}&what=${what}`); // warm-up: JIT, key import
      const perMessage = [];
      const wall = [];
      for (let i = 0; i < samples; i++) {
        // Interleaved with an empty request, so the request's own cost is taken off the one beside it.
        const empty = await cost("n=0");
        const started = performance.now();
        const full = await cost(`n=${batch}&what=${what}`);
        wall.push((performance.now() - started) / batch);
        perMessage.push((full - empty) / batch / 1e6);
      }
      results[what] = { cpu: summarize(perMessage), wall: summarize(wall) };
      const { cpu } = results[what];
      log(`${what}: CPU per message p50 ${cpu.p50.toFixed(3)} ms, p95 ${cpu.p95.toFixed(3)} ms (wall p50 ${results[what].wall.p50.toFixed(3)} ms)`);
    }
    const p50 = results.push.cpu.p50;
    log(`encryption + VAPID signature, CPU per message: p50 ${p50.toFixed(3)} ms (target ≤ 2 ms: ${p50 <= 2 ? "pass" : "miss"})`);
  } finally {
    await mf.dispose();
  }
}

runWhenMain(import.meta.url, "push", main);
