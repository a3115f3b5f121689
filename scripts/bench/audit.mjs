// The audit log figure (docs/benchmarks.md, "The audit log"): 100,000 entries seeded straight into D1, then
// `GET /audit?limit=100` as an owner, sequentially on one keep-alive connection: the newest 100 with the exact count,
// and the same with a search that an index answers (`action:login`), beside the trivial Worker's latency in the same
// run. `npm run bench` measures it with everything else; `node scripts/bench/audit.mjs` measures it alone (build,
// start, seed, measure), for a change to the audit log without the whole bench.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { applyMigrations, build, generateSecretKey, runWhenMain, start } from "./harness.mjs";
import { latency, sequentialClient } from "./measure.mjs";
import { printTable } from "./report.mjs";

/** Entries in the log, and on the page read. */
const AUDIT_ROWS = 100_000;
const PAGE = 100;

async function helperPost(helperUrl, route, body) {
  const res = await fetch(new URL(route, helperUrl), { method: "POST", body: JSON.stringify(body) });
  const text = await res.text();
  if (!res.ok) throw new Error(`helper ${route} → ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

/**
 * Seeds `rows` entries whose actors are `userIds`, checks that GET /audit counts them, then measures. `owner` is
 * `{ token }` of an owner; `client` the bench's sequential client on Herald; `trivialClient` one on the trivial Worker.
 */
export async function auditBench({ helperUrl, client, trivialClient, owner, userIds, rows = AUDIT_ROWS, samples, log }) {
  log(`audit log: ${rows.toLocaleString("en-US")} entries seeded into D1, then GET /audit?limit=${PAGE}, ${samples} samples`);
  const before = await client.request("GET", "/api/v2/audit?limit=1", { headers: { "Service-Session-Token": owner.token } });
  const existing = JSON.parse(before.text).count;
  const seeded = await helperPost(helperUrl, "/seed-audit", { count: rows, userIds });
  const headers = { "Service-Session-Token": owner.token };
  const check = await client.request("GET", `/api/v2/audit?limit=${PAGE}`, { headers });
  const page = JSON.parse(check.text);
  if (check.status !== 200 || page.count !== existing + rows || page.audit_logs.length !== PAGE) {
    throw new Error(`GET /audit answered ${check.status}, count ${page.count}, ${page.audit_logs?.length} entries`);
  }
  return {
    seeded,
    count: page.count,
    bytes: check.text.length,
    newest: await latency(client, { path: `/api/v2/audit?limit=${PAGE}`, headers, samples, warmup: 5, maxSeconds: 30 }),
    action: await latency(client, { path: `/api/v2/audit?limit=${PAGE}&q=action%3Alogin`, headers, samples, warmup: 5, maxSeconds: 30 }),
    trivial: await latency(trivialClient, { path: "/", samples, warmup: 5, maxSeconds: 30 }),
  };
}

/** The rows `npm run bench` prints for it (`row` is run.mjs's). */
export function auditRows(row, result) {
  const r = () => result;
  row(
    "audit_p50",
    `GET /audit?limit=${PAGE} of ${AUDIT_ROWS.toLocaleString("en-US")} entries, p50`,
    () => r().newest.p50,
    "ms",
    "≤ 5 ms",
    (v) => v <= 5,
  );
  row("audit_p95", "  … p95", () => r().newest.p95, "ms");
  row("audit_action_p50", `  … with q=action:login (${Math.round(AUDIT_ROWS / 5).toLocaleString("en-US")} match), p50`, () => r().action.p50, "ms");
  row("audit_trivial_p50", "  … the trivial Worker in the same run, p50", () => r().trivial.p50, "ms");
}

/** Alone: build, start workerd, migrate, bootstrap an owner through the API, measure, print. */
async function main() {
  const samples = Number(process.env.BENCH_AUDIT_SAMPLES ?? 100);
  const tmp = mkdtempSync(path.join(tmpdir(), "herald-bench-audit-"));
  const log = (msg) => console.log(`[bench audit] ${msg}`);
  let running;
  try {
    log("building");
    await build(path.join(tmp, "dist"));
    running = await start({ outdir: path.join(tmp, "dist"), stateDir: path.join(tmp, "state"), host: "127.0.0.1", secretKey: generateSecretKey() });
    await applyMigrations(running.mf);
    const base = running.urls.herald;
    const owner = { email: "ada@bench.example.com", username: "ada", password: "Plum-Kettle-Orbit-97-Lantern" };
    const first = await fetch(`${base}/api/v2/users/first`, { method: "POST", body: JSON.stringify(owner) });
    const { user_id: ownerId } = await first.json();
    const login = await fetch(`${base}/api/v2/users/login`, {
      method: "POST",
      body: JSON.stringify({ email: owner.email, password: owner.password }),
    });
    const { session_token: token } = await login.json();
    const client = sequentialClient(base);
    const trivialClient = sequentialClient(`${running.urls.trivial}/`);
    try {
      const result = await auditBench({ helperUrl: running.urls.helper, client, trivialClient, owner: { token }, userIds: [ownerId], samples, log });
      const rows = [];
      auditRows((id, label, get, unit, target, passes) => {
        const value = get();
        rows.push({ id, label, value, unit, ...(target ? { target: { text: target }, pass: passes(value) } : {}) });
      }, result);
      printTable(rows);
      log(`seeded ${result.seeded.inserted} entries in ${result.seeded.ms} ms; the page is ${result.bytes} bytes; count ${result.count}`);
    } finally {
      client.close();
      trivialClient.close();
    }
  } finally {
    await running?.mf.dispose();
    rmSync(tmp, { recursive: true, force: true });
  }
}

runWhenMain(import.meta.url, "audit", main);
