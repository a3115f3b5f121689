// `npm start`: a fresh clone to a running local Herald in one command.
// Run it through npm, which puts node_modules/.bin (with the pinned Node 24) first in PATH: wrangler needs Node ≥ 22.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { OFFLINE_ENV } from "./offline.mjs";

const root = path.resolve(import.meta.dirname, "..");
const devVars = path.join(root, ".dev.vars");

// Resolved through wrangler's package.json so a wrangler upgrade that moves its entry point does not break us.
const require = createRequire(import.meta.url);
const wranglerPkg = require.resolve("wrangler/package.json");
const wranglerBin = path.join(path.dirname(wranglerPkg), require(wranglerPkg).bin.wrangler);

/** SECRET_KEY is required (docs/configuration.md). Locally it lives in the gitignored .dev.vars; an existing key is never replaced,
 *  because changing it would invalidate signed cookies and stored one-time-passcode HMACs. */
function ensureSecretKey() {
  const current = existsSync(devVars) ? readFileSync(devVars, "utf8") : "";
  if (/^\s*SECRET_KEY\s*=\s*\S/m.test(current)) return;
  const separator = current === "" || current.endsWith("\n") ? "" : "\n";
  const secret = randomBytes(48).toString("base64url"); // 64 characters, 384 bits
  writeFileSync(devVars, `${current}${separator}SECRET_KEY=${secret}\n`, { mode: 0o600 });
  console.log("Generated a development SECRET_KEY in .dev.vars (local use only; production uses `wrangler secret put`).");
}

/** Runs wrangler with our Node; Ctrl-C / SIGTERM reach it and we wait for it to finish cleanly. */
function wrangler(args, extraEnv = {}) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [wranglerBin, ...args], {
      cwd: root,
      stdio: "inherit",
      env: { ...process.env, ...OFFLINE_ENV, ...extraEnv },
    });
    const forward = (signal) => child.kill(signal);
    const signals = ["SIGINT", "SIGTERM", "SIGHUP"];
    for (const s of signals) process.on(s, forward);
    child.on("exit", (code, signal) => {
      for (const s of signals) process.off(s, forward);
      resolve(code ?? (signal === "SIGINT" ? 130 : 143));
    });
  });
}

// The same machinery serves the end-to-end suite: PORT picks the port, and any extra arguments (--persist-to DIR,
// --var KEY:VALUE, --env-file FILE …) go to `wrangler dev`; --persist-to also decides where the migrations are applied.
const port = process.env.PORT ?? "8787";
const extra = process.argv.slice(2);
const envFiles = extra.flatMap((arg, i) => (arg === "--env-file" && extra[i + 1] ? [path.resolve(extra[i + 1])] : []));

// With --env-file, wrangler reads those files instead of .dev.vars, and they must bring their own SECRET_KEY.
if (envFiles.length === 0) ensureSecretKey();

/**
 * ACCESS_URL follows PORT, so links in notifications and the OAuth callback URLs point at this server, unless it is
 * set explicitly: as an environment variable, a --var, or in .dev.vars (or the --env-file files).
 */
function accessUrlArgs() {
  if (extra.some((arg, i) => extra[i - 1] === "--var" && arg.startsWith("ACCESS_URL:"))) return [];
  if (process.env.ACCESS_URL) return ["--var", `ACCESS_URL:${process.env.ACCESS_URL}`];
  const files = envFiles.length > 0 ? envFiles : [devVars];
  if (files.some((file) => existsSync(file) && /^\s*ACCESS_URL\s*=/m.test(readFileSync(file, "utf8")))) return [];
  return ["--var", `ACCESS_URL:http://localhost:${port}`];
}
const persistAt = extra.indexOf("--persist-to");
const persist = persistAt >= 0 && extra[persistAt + 1] ? ["--persist-to", extra[persistAt + 1]] : [];

// CI=true makes wrangler take the default "yes" instead of asking before applying migrations.
const migrated = await wrangler(["d1", "migrations", "apply", "DB", "--local", ...persist], { CI: "true" });
if (migrated !== 0) process.exit(migrated);

process.exit(await wrangler(["dev", "--port", port, "--ip", "localhost", ...accessUrlArgs(), ...extra]));
