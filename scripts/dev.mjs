// `npm start`: a fresh clone to a running local Herald in one command.
// Run it through npm, which puts node_modules/.bin (with the pinned Node 24) first in PATH: wrangler needs Node ≥ 22.
import { spawn } from "node:child_process";
import { generateKeyPairSync, randomBytes } from "node:crypto";
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

/** Appends `lines` to .dev.vars (created owner-only), on a line of their own. */
function appendDevVars(lines) {
  const current = existsSync(devVars) ? readFileSync(devVars, "utf8") : "";
  const separator = current === "" || current.endsWith("\n") ? "" : "\n";
  writeFileSync(devVars, `${current}${separator}${lines.join("\n")}\n`, { mode: 0o600 });
}

const isSetIn = (text, name) => new RegExp(`^\\s*${name}\\s*=\\s*\\S`, "m").test(text);

/**
 * SECRET_KEY is required (docs/configuration.md). Locally it lives in the gitignored .dev.vars; an existing key is
 * never replaced, because changing it would invalidate signed cookies and stored one-time-passcode HMACs.
 */
function ensureSecretKey() {
  if (isSetIn(existsSync(devVars) ? readFileSync(devVars, "utf8") : "", "SECRET_KEY")) return;
  appendDevVars([`SECRET_KEY=${randomBytes(48).toString("base64url")}`]); // 64 characters, 384 bits
  console.log("Generated a development SECRET_KEY in .dev.vars (local use only; production uses `wrangler secret put`).");
}

/**
 * The VAPID key pair that signs Web Push (docs/push.md, "Keys"), made like SECRET_KEY when neither key is there. An
 * existing pair is never replaced: every browser subscribed with its public key, and a new one would orphan them all.
 */
function ensureVapidKeys() {
  const current = existsSync(devVars) ? readFileSync(devVars, "utf8") : "";
  if (isSetIn(current, "VAPID_PUBLIC_KEY") || isSetIn(current, "VAPID_PRIVATE_KEY")) return;
  const { x, y, d } = generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ format: "jwk" });
  const publicKey = Buffer.concat([Buffer.of(4), Buffer.from(x, "base64url"), Buffer.from(y, "base64url")]).toString("base64url");
  appendDevVars([`VAPID_PUBLIC_KEY=${publicKey}`, `VAPID_PRIVATE_KEY=${d}`]);
  console.log("Generated a development VAPID key pair for Web Push in .dev.vars (local use only; production uses `wrangler secret put`).");
}

/**
 * A server whose starter is gone would hold its port and database until someone finds it: a test run killed midway
 * leaves its Heralds behind, in process groups of their own (scripts/local-herald.mjs). So when this process is handed
 * to another parent, it stops as on SIGTERM (docs/deployment.md, "Running locally").
 */
function stopWithStarter() {
  const starter = process.ppid;
  setInterval(() => {
    if (process.ppid !== starter) process.kill(process.pid, "SIGTERM");
  }, 1000).unref();
}
stopWithStarter();

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

// With --env-file, wrangler reads those files instead of .dev.vars, and they must bring their own keys.
if (envFiles.length === 0) {
  ensureSecretKey();
  ensureVapidKeys();
}

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
/** Whether `name` is set in the environment, a --var, or the file wrangler reads (the --env-file files, else .dev.vars, else .env). */
function isSet(name) {
  if (process.env[name] !== undefined) return true;
  if (extra.some((arg, i) => extra[i - 1] === "--var" && arg.startsWith(`${name}:`))) return true;
  const fallback = [devVars, path.join(root, ".env")].find((file) => existsSync(file));
  const files = envFiles.length > 0 ? envFiles : fallback ? [fallback] : [];
  const line = new RegExp(`^\\s*${name}\\s*=`, "m");
  return files.some((file) => existsSync(file) && line.test(readFileSync(file, "utf8")));
}

/**
 * E-mail goes to the local mail catcher (scripts/mail-catcher.mjs) unless EMAIL_SMARTHOST is set, to anything, even
 * nothing: an environment variable, a --var, or a line in .dev.vars (or the --env-file files)
 * (docs/deployment.md, "Running locally"). An EMAIL_SMARTHOST from the environment is handed to wrangler as a --var,
 * like ACCESS_URL. MAIL_CATCHER_PORT picks the page's port (default 8025, or a free one when 8025 is taken).
 */
async function mailArgs() {
  if (isSet("EMAIL_SMARTHOST")) {
    const fromEnv = process.env.EMAIL_SMARTHOST;
    const passed = extra.some((arg, i) => extra[i - 1] === "--var" && arg.startsWith("EMAIL_SMARTHOST:"));
    return fromEnv && !passed ? ["--var", `EMAIL_SMARTHOST:${fromEnv}`] : [];
  }
  // Loaded only when used: the suites that pin EMAIL_SMARTHOST never start a catcher.
  const { startMailCatcher } = await import("./mail-catcher.mjs");
  const chosen = process.env.MAIL_CATCHER_PORT;
  let catcher;
  try {
    catcher = await startMailCatcher({ webPort: chosen ? Number(chosen) : 8025 });
  } catch (error) {
    if (chosen || error?.code !== "EADDRINUSE") throw error;
    catcher = await startMailCatcher({ webPort: 0 });
  }
  console.log(
    `Mail catcher: e-mail Herald sends is at ${catcher.url} (SMTP on 127.0.0.1:${catcher.smtpPort}; set EMAIL_SMARTHOST to use a real server).`,
  );
  return ["--var", `EMAIL_SMARTHOST:127.0.0.1:${catcher.smtpPort}`, "--var", "EMAIL_TLS:none"];
}

const persistAt = extra.indexOf("--persist-to");
const persist = persistAt >= 0 && extra[persistAt + 1] ? ["--persist-to", extra[persistAt + 1]] : [];

// CI=true makes wrangler take the default "yes" instead of asking before applying migrations.
const migrated = await wrangler(["d1", "migrations", "apply", "DB", "--local", ...persist], { CI: "true" });
if (migrated !== 0) process.exit(migrated);

const mail = await mailArgs();
process.exit(await wrangler(["dev", "--port", port, "--ip", "localhost", ...accessUrlArgs(), ...mail, ...extra]));
