/**
 * Wrangler's calls home, switched off for everything but `npm run deploy`: no request for the `cf` object of a
 * Cloudflare account and no usage metrics. Local runs, tests and benchmarks then work offline and quietly. These are
 * process environment variables, never `.dev.vars` (wrangler hands that file to the Worker).
 *
 * The one place they are set: the scripts that start wrangler import OFFLINE_ENV, and an npm script that runs wrangler
 * directly goes through this file: `node scripts/offline.mjs wrangler deploy --dry-run`.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

export const OFFLINE_ENV = { CLOUDFLARE_CF_FETCH_ENABLED: "false", WRANGLER_SEND_METRICS: "false" };

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [command, ...args] = process.argv.slice(2);
  if (!command) {
    console.error("usage: node scripts/offline.mjs <command> [arguments…]");
    process.exit(2);
  }
  const child = spawn(command, args, { stdio: "inherit", env: { ...process.env, ...OFFLINE_ENV } });
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(signal, () => child.kill(signal));
  child.on("error", (error) => {
    console.error(`${command}: ${error.message}`);
    process.exit(127);
  });
  child.on("exit", (code, signal) => process.exit(code ?? (signal === "SIGINT" ? 130 : 143)));
}
