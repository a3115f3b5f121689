/**
 * Herald started exactly as `npm start` starts it (scripts/dev.mjs: local migrations, wrangler dev), for the tools
 * that need a real local server: the documentation's walkthrough (scripts/walkthrough.mjs) and the end-to-end suite
 * (test/e2e/herald.ts). Plain Node ESM, so the walkthrough runs without a build step on any Node ≥ 20.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { OFFLINE_ENV } from "./offline.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/**
 * Ports handed out by `freePort`. A port is taken from below the range the kernel hands out for port 0 (Linux:
 * 32768–60999, macOS and Windows: 49152–65535), so no program binding port 0 — workerd, wrangler, the test peers —
 * can take it in the moment between this choice and Herald's bind. Within this process the set keeps a port from
 * being handed out twice; across processes a lock file in the temporary directory does, held until this process
 * exits (a lock whose process is gone is taken over).
 */
const PORT_RANGE = { from: 20_000, to: 32_000 };
const PORT_LOCKS = path.join(tmpdir(), "herald-ports");
const handedOut = new Set();
let releaseOnExit = false;

function processAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === "EPERM";
  }
}

/** Takes the cross-process lock on `port`; false when a live process holds it. */
function lockPort(port) {
  mkdirSync(PORT_LOCKS, { recursive: true });
  const file = path.join(PORT_LOCKS, String(port));
  for (let tries = 0; tries < 2; tries++) {
    try {
      writeFileSync(file, String(process.pid), { flag: "wx" });
      if (!releaseOnExit) {
        releaseOnExit = true;
        process.once("exit", () => {
          for (const p of handedOut) rmSync(path.join(PORT_LOCKS, String(p)), { force: true });
        });
      }
      return true;
    } catch (error) {
      if (error.code !== "EEXIST") throw error;
      const holder = Number(readFileSync(file, "utf8"));
      if (Number.isInteger(holder) && holder > 0 && processAlive(holder)) return false;
      rmSync(file, { force: true });
    }
  }
  return false;
}

/** Whether nothing listens on `port` on loopback right now. */
function bindable(port) {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/** A loopback TCP port that nothing listens on, reserved for this process (see PORT_RANGE). */
export async function freePort() {
  const span = PORT_RANGE.to - PORT_RANGE.from;
  const start = Math.floor(Math.random() * span);
  for (let i = 0; i < span; i++) {
    const port = PORT_RANGE.from + ((start + i) % span);
    if (handedOut.has(port)) continue;
    if (!lockPort(port)) continue;
    handedOut.add(port);
    if (await bindable(port)) return port;
  }
  throw new Error(`no free port between ${PORT_RANGE.from} and ${PORT_RANGE.to}`);
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
 * `persistTo` names a directory of the caller's instead: its database and inbox objects outlive `stop()`, so a second
 * start on it is the same Herald restarted (the caller removes it).
 *
 * npm start's mail catcher (scripts/mail-catcher.mjs) starts only for a caller that asks for it (`mailCatcher`,
 * with no EMAIL_SMARTHOST in `settings`); its page's address is then returned as `mailUrl`. Otherwise a missing
 * EMAIL_SMARTHOST is written to the env file as empty, which configures no mail server and tells npm start not to
 * start the catcher (docs/deployment.md, "Running locally"), so the walkthrough and the suites see no mail server
 * unless they name one. `output()` is what npm start's machinery has printed so far.
 *
 * @param {{ port: number, settings: Record<string, string>, label?: string, timeoutMs?: number, mailCatcher?: boolean, onSpawn?: (stop: () => Promise<void>) => void, persistTo?: string }} options
 * @returns {Promise<{ url: string, mailUrl?: string, output(): string, stop(): Promise<void> }>}
 */
export async function startLocalHerald({ port, settings, label = "herald", timeoutMs = 120_000, mailCatcher = false, onSpawn, persistTo }) {
  if (mailCatcher && "EMAIL_SMARTHOST" in settings) throw new Error("mailCatcher starts only when settings have no EMAIL_SMARTHOST");
  const mailPort = mailCatcher ? await freePort() : undefined;
  // wrangler dev takes the first free port from 9229 for its inspector, checked and then bound a moment later: two
  // starting at once can both find 9229 free, and the second fails with "Address already in use". Each gets one
  // of its own instead.
  const inspectorPort = await freePort();
  const written = mailCatcher || "EMAIL_SMARTHOST" in settings ? settings : { ...settings, EMAIL_SMARTHOST: "" };
  const persist = persistTo ?? mkdtempSync(path.join(tmpdir(), `${label}-`));
  const envFile = path.join(persist, "herald.env");
  writeFileSync(
    envFile,
    `${Object.entries(written)
      .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
      .join("\n")}\n`,
    { mode: 0o600 },
  );
  const env = { ...process.env, PORT: String(port), ...OFFLINE_ENV, CI: "true" };
  delete env.ACCESS_URL;
  delete env.EMAIL_SMARTHOST;
  delete env.MAIL_CATCHER_PORT;
  if (mailPort !== undefined) env.MAIL_CATCHER_PORT = String(mailPort);
  env.PATH = `${path.join(root, "node_modules", ".bin")}${path.delimiter}${env.PATH ?? ""}`;
  const child = spawn(serverNode(), ["scripts/dev.mjs", "--persist-to", persist, "--env-file", envFile, "--inspector-port", String(inspectorPort)], {
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
    if (persistTo === undefined) rmSync(persist, { recursive: true, force: true });
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
      const res = await fetch(`${url}/healthz`);
      // Read, so the connection is let go: an unread body holds it open.
      await res.arrayBuffer();
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`Herald did not answer /healthz within ${timeoutMs / 1000} s:\n${output.slice(-3000)}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return { url, ...(mailPort === undefined ? {} : { mailUrl: `http://localhost:${mailPort}` }), output: () => output, stop };
}
