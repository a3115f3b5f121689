// The terminal table and bench/results.json.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

const fmt = (value, unit) => {
  if (value === undefined || value === null || Number.isNaN(value)) return "n/a";
  if (unit === "req/s") return `${Math.round(value).toLocaleString("en-US")} req/s`;
  if (unit === "ms") return `${value < 10 ? value.toFixed(2) : value.toFixed(1)} ms`;
  if (unit === "%") return `${(value * 100).toFixed(1)}%`;
  if (unit === "x") return `${value.toFixed(2)}×`;
  if (unit === "KiB") return `${value.toFixed(1)} KiB`;
  if (unit === "/s") return `${Math.round(value).toLocaleString("en-US")}/s`;
  if (unit === "count") return value.toLocaleString("en-US");
  return `${value} ${unit}`;
};

/** Which code was measured: the commit, the uncommitted changes to what the bundle is built from, the bundle's hash. */
export function codeInfo(root, entryModulePath) {
  const git = (args) => {
    try {
      return execFileSync("git", args, { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
    } catch {
      return undefined;
    }
  };
  const dirty = git(["status", "--porcelain", "--", "src", "drizzle", "wrangler.toml", "package-lock.json"]);
  return {
    commit: git(["rev-parse", "--short", "HEAD"]),
    uncommitted_changes: dirty ? dirty.split("\n").map((l) => l.trim()) : [],
    bundle_sha256: entryModulePath ? createHash("sha256").update(readFileSync(entryModulePath)).digest("hex").slice(0, 16) : undefined,
  };
}

/** The 1, 5 and 15-minute load averages, to two decimals. */
export const loadAverage = () => os.loadavg().map((l) => Number(l.toFixed(2)));

/** The machine, with its load average now: call it before the run starts. */
export function machineInfo(versions) {
  const cpus = os.cpus();
  return {
    cpu: cpus[0]?.model ?? "unknown",
    cores: cpus.length,
    memory_gib: Math.round(os.totalmem() / 2 ** 30),
    load_average_at_start: loadAverage(),
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    ...versions,
  };
}

/**
 * rows: { id, label, value, unit, target?: { text, pass(value) }, note? }. Rows without a target are context
 * (baselines, diagnostics) and show "—".
 */
export function printTable(rows) {
  const cells = rows.map((r) => {
    const verdict = r.error ? "ERROR" : r.target ? (r.pass ? "pass" : "MISS") : "—";
    return [r.label, r.error ? "error" : fmt(r.value, r.unit), r.target?.text ?? "", verdict];
  });
  const header = ["measure", "measured", "target (docs/benchmarks.md)", "result"];
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const line = (c) => c.map((x, i) => (i === 1 ? x.padStart(widths[i]) : x.padEnd(widths[i]))).join("  ");
  console.log("");
  console.log(line(header));
  console.log(widths.map((w) => "-".repeat(w)).join("  "));
  for (const c of cells) console.log(line(c));
  console.log("");
}

export function writeResults(file, data) {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify(data, null, 2)}\n`);
}
