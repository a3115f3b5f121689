// `npm run soak`: the suites where timing and interleaving vary from run to run, run again and again. The inbox chaos
// test under 20 seeds (each seed is a different workload and schedule of cut sockets), then the whole end-to-end suite
// three times. Not part of `npm test`: it takes about 20 minutes. A failure is a bug in the product or in the test,
// never a reason to run again (docs/testing.md, "Soak").
//
// HERALD_SOAK_SEEDS=1,2,3 picks the seeds; HERALD_SOAK_E2E_RUNS=N the number of end-to-end runs.
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

const root = path.resolve(import.meta.dirname, "..");

/** The chaos test's own default seed, three seeds that once exposed a bug, and sixteen more spread out. */
const DEFAULT_SEEDS = [20_260_611, 1, 77, 4242, ...Array.from({ length: 16 }, (_, i) => 10_007 + i * 7_919)];
const seeds = process.env.HERALD_SOAK_SEEDS ? process.env.HERALD_SOAK_SEEDS.split(",").map(Number) : DEFAULT_SEEDS;
const e2eRuns = Number(process.env.HERALD_SOAK_E2E_RUNS ?? 3);
const logs = mkdtempSync(path.join(tmpdir(), "herald-soak-"));

/** Runs vitest once; resolves to its exit code and duration, with its whole output written to `logFile`. */
function vitest(args, env, logFile) {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn("vitest", ["run", "--config", "vitest.e2e.config.ts", ...args], {
      cwd: root,
      env: { ...process.env, ...env, NO_COLOR: "1", FORCE_COLOR: "0" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
    child.on("exit", (code) => {
      writeFileSync(logFile, output);
      resolve({ code: code ?? 1, seconds: (Date.now() - started) / 1000 });
    });
  });
}

const results = [];
async function run(label, args, env, logName) {
  const logFile = path.join(logs, logName);
  const { code, seconds } = await vitest(args, env, logFile);
  results.push({ label, ok: code === 0, seconds, logFile });
  console.log(`${code === 0 ? "pass" : "FAIL"}  ${label}  ${seconds.toFixed(1)} s${code === 0 ? "" : `  (log: ${logFile})`}`);
}

for (const seed of seeds)
  await run(`inbox chaos, seed ${seed}`, ["test/e2e/inbox-chaos.test.ts"], { HERALD_CHAOS_SEED: String(seed) }, `chaos-${seed}.log`);
for (let i = 1; i <= e2eRuns; i++) await run(`end-to-end suite, run ${i} of ${e2eRuns}`, [], {}, `e2e-${i}.log`);

const chaos = results.filter((r) => r.label.startsWith("inbox chaos"));
const e2e = results.filter((r) => r.label.startsWith("end-to-end"));
const passed = (rs) => rs.filter((r) => r.ok).length;
console.log(`\nsoak: chaos ${passed(chaos)} of ${chaos.length} seeds green, end-to-end ${passed(e2e)} of ${e2e.length} runs green; logs in ${logs}`);
process.exit(results.every((r) => r.ok) ? 0 : 1);
