/**
 * Herald started exactly as `npm start` starts it (scripts/dev.mjs: local migrations, wrangler dev), for the tools
 * that need a real local server: the documentation's walkthrough (scripts/walkthrough.mjs) and the end-to-end suite
 * (test/e2e/herald.ts). Plain Node ESM, so the walkthrough runs without a build step on any Node ≥ 20.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** A TCP port nothing listens on right now, on loopback. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** The Node `npm start` would use: npm scripts put node_modules/.bin (the pinned Node 24) first on PATH. */
function serverNode() {
  const major = Number(process.versions.node.split(".")[0]);
  const pinned = path.join(root, "node_modules", ".bin", process.platform === "win32" ? "node.exe" : "node");
  if (major >= 22) return process.execPath;
  if (existsSync(pinned)) return pinned;
  throw new Error(`Herald needs Node ≥ 22.12 and this is ${process.version}: run \`npm install\` first.`);
}

/**
 * Starts Herald on `port` with a fresh local database in a temporary directory and waits until it answers
 * /healthz. Its configuration is exactly `settings`, written to an env file of its own: with --env-file, wrangler
 * ignores the developer's .dev.vars, and an exported ACCESS_URL is dropped from the environment, so nothing local
 * changes what the caller sees. The server runs in its own process group, so `stop()` also stops wrangler and
 * workerd (SIGTERM, then SIGKILL after 10 s) and removes the directory.
 *
 * `onSpawn` receives `stop` as soon as the process exists, so a caller interrupted during start-up can stop it.
 *
 * @param {{ port: number, settings: Record<string, string>, label?: string, timeoutMs?: number, onSpawn?: (stop: () => Promise<void>) => void }} options
 * @returns {Promise<{ url: string, stop(): Promise<void> }>}
 */
export async function startLocalHerald({ port, settings, label = "herald", timeoutMs = 120_000, onSpawn }) {
  const persist = mkdtempSync(path.join(tmpdir(), `${label}-`));
  const envFile = path.join(persist, "herald.env");
  writeFileSync(
    envFile,
    `${Object.entries(settings)
      .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
      .join("\n")}\n`,
    { mode: 0o600 },
  );
  const env = { ...process.env, PORT: String(port), CLOUDFLARE_CF_FETCH_ENABLED: "false", WRANGLER_SEND_METRICS: "false", CI: "true" };
  delete env.ACCESS_URL;
  env.PATH = `${path.join(root, "node_modules", ".bin")}${path.delimiter}${env.PATH ?? ""}`;
  const child = spawn(serverNode(), ["scripts/dev.mjs", "--persist-to", persist, "--env-file", envFile], {
    cwd: root,
    env,
    stdio: ["ignore", "pipe", "pipe"],
    detached: process.platform !== "win32",
  });
  let output = "";
  child.stdout.on("data", (d) => (output += d));
  child.stderr.on("data", (d) => (output += d));
  const exited = new Promise((resolve) => child.once("exit", resolve));

  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    const signal = (name) => {
      try {
        if (process.platform === "win32") child.kill(name);
        else process.kill(-child.pid, name);
      } catch {
        // already gone
      }
    };
    if (child.exitCode === null && child.signalCode === null) {
      signal("SIGTERM");
      const timer = setTimeout(() => signal("SIGKILL"), 10_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(persist, { recursive: true, force: true });
  };
  onSpawn?.(stop);

  const url = `http://localhost:${port}`;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) {
      await stop();
      throw new Error(`npm start's machinery exited early:\n${output.slice(-3000)}`);
    }
    try {
      if ((await fetch(`${url}/healthz`)).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`Herald did not answer /healthz within ${timeoutMs / 1000} s:\n${output.slice(-3000)}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return { url, stop };
}
