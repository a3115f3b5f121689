import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { PINNED_VARS } from "../fixtures/vars";

const root = path.resolve(import.meta.dirname, "../..");

export function freePort(): Promise<number> {
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

export interface RunningHerald {
  url: string;
  stop(): Promise<void>;
}

/**
 * Starts Herald exactly as `npm start` does (scripts/dev.mjs: local migrations, wrangler dev), on the given port with
 * its own fresh local storage, and waits until it answers /healthz. Every configuration variable comes from an env
 * file of its own (PINNED_VARS, then `vars`, and a fresh SECRET_KEY): with --env-file, wrangler ignores the
 * developer's .dev.vars, so nothing local changes what the suite sees.
 */
export async function startHerald(port: number, vars: Record<string, string>, options: { unset?: string[] } = {}): Promise<RunningHerald> {
  const persist = mkdtempSync(path.join(tmpdir(), "herald-e2e-"));
  const envFile = path.join(persist, "herald.env");
  const settings: Record<string, string> = { ...PINNED_VARS, ACCESS_URL: `http://localhost:${port}`, SECRET_KEY: randomBytes(32).toString("hex"), ...vars };
  // `unset` leaves a variable to npm start's own defaults (e.g. ACCESS_URL following PORT).
  for (const key of options.unset ?? []) delete settings[key];
  writeFileSync(envFile, Object.entries(settings).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join("\n"), { mode: 0o600 });
  const args = ["scripts/dev.mjs", "--persist-to", persist, "--env-file", envFile];
  const child: ChildProcess = spawn(process.execPath, args, {
    cwd: root,
    env: { ...process.env, PORT: String(port), CLOUDFLARE_CF_FETCH_ENABLED: "false", WRANGLER_SEND_METRICS: "false", CI: "true" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr?.on("data", (d: Buffer) => (output += d.toString()));
  const url = `http://localhost:${port}`;
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`npm start's machinery exited early:\n${output.slice(-2000)}`);
    try {
      if ((await fetch(`${url}/healthz`)).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill("SIGTERM");
      throw new Error(`Herald did not answer /healthz in time:\n${output.slice(-2000)}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return {
    url,
    async stop() {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
      rmSync(persist, { recursive: true, force: true });
    },
  };
}
