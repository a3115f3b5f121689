// Builds what the browser loads (docs/dashboard.md): the dashboard (src/dashboard, Preact), its service worker
// (src/sw, docs/push.md) with the Herald icon, and the embeddable inbox (src/embed, no framework) into dist/public, the directory wrangler.toml's [assets] serves. esbuild does the work;
// nothing is fetched at build or run time. Beside them, the password policy's common-password list, which the Worker
// reads through its ASSETS binding instead of carrying it in its bundle (docs/security.md, "Password policy").
// Run by wrangler's [build] step (npm start, the deploy, build:check) and by
// the test suites' global setup, so every path that serves the Worker serves a fresh build.
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import commonPasswords from "@zxcvbn-ts/language-common/dist/passwords.json.mjs";
import { build } from "esbuild";
import { heraldIconPng } from "./icon.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const PUBLIC_DIR = path.join(root, "dist", "public");

/**
 * Where the common-password list goes, under dist/public; src/auth/passwords/common-list.ts reads that path. Not
 * under /assets/, so the Worker's router, which runs first for every request, never serves it
 * (docs/security.md, "Password policy").
 */
const COMMON_PASSWORDS_FILE = "password-policy/common-passwords.json";

/** Budgets of the first load, gzip (docs/dashboard.md#budgets). */
export const BUDGETS = { dashboard: 100 * 1024, embed: 25 * 1024 };

const common = {
  bundle: true,
  minify: true,
  format: "esm",
  // light-dark() in the dashboard's colours (Chrome 123, Firefox 120, Safari 17.5) sets the floor.
  target: ["chrome123", "firefox121", "safari17.5"],
  legalComments: "none",
  logLevel: "warning",
  write: false,
  absWorkingDir: root,
};

const hash = (bytes) => createHash("sha256").update(bytes).digest("hex").slice(0, 10);

/**
 * Builds both bundles and writes them with the HTML page that loads the dashboard. Returns the gzip size of each
 * first load, which the budget test compares with BUDGETS.
 */
export async function buildUi() {
  const dashboard = await build({
    ...common,
    entryPoints: { dashboard: "src/dashboard/main.tsx" },
    outdir: "dist/public/assets",
    jsx: "automatic",
    jsxImportSource: "preact",
  });
  const embed = await build({ ...common, entryPoints: { inbox: "src/embed/inbox.ts" }, outdir: "dist/public/embed" });
  // The icon push notifications show, named by its content like the bundles; the service worker is told its name.
  const icon = heraldIconPng(192);
  const iconName = `herald-icon-${hash(icon)}.png`;
  // A classic script (not a module), so every browser that has push can register it; at the root, so its scope is
  // the whole origin.
  const serviceWorker = await build({
    ...common,
    format: "iife",
    entryPoints: { sw: "src/sw/sw.ts" },
    outdir: "dist/public",
    define: { HERALD_ICON: JSON.stringify(`/assets/${iconName}`) },
  });

  // The directory is never emptied: several Heralds of one checkout (the suites start them in parallel) build into it
  // while others already serve from it, and a file that is briefly missing is an empty 404 to a browser. Each file
  // is written whole under a temporary name and renamed into place; only stale hashed files are removed, after.
  mkdirSync(path.join(PUBLIC_DIR, "assets"), { recursive: true });
  mkdirSync(path.join(PUBLIC_DIR, "embed"), { recursive: true });
  mkdirSync(path.join(PUBLIC_DIR, path.dirname(COMMON_PASSWORDS_FILE)), { recursive: true });
  const written = new Set();
  const put = (relative, contents) => {
    const target = path.join(PUBLIC_DIR, relative);
    const temporary = `${target}.${process.pid}.${Date.now()}.tmp`;
    writeFileSync(temporary, contents);
    renameSync(temporary, target);
    written.add(relative);
  };

  // Content-hashed names: the page is revalidated on every load, the files it names can be cached for a year.
  const names = {};
  for (const file of dashboard.outputFiles) {
    const ext = path.extname(file.path);
    const name = `dashboard-${hash(file.contents)}${ext}`;
    put(path.join("assets", name), file.contents);
    names[ext] = `/assets/${name}`;
  }
  const [embedFile] = embed.outputFiles;
  put(path.join("embed", "inbox.js"), embedFile.contents);
  put(path.join("assets", iconName), icon);
  const [serviceWorkerFile] = serviceWorker.outputFiles;
  put("sw.js", serviceWorkerFile.contents);
  // zxcvbn-ts's list as the package holds it, in its order (zxcvbn ranks a match by its position), as a JSON array:
  // a file cut short does not parse, so the Worker refuses passwords rather than check them against part of it.
  put(COMMON_PASSWORDS_FILE, JSON.stringify(commonPasswords));

  const template = readFileSync(path.join(root, "src", "dashboard", "index.html"), "utf8");
  const html = template.replace("%STYLE%", names[".css"]).replace("%SCRIPT%", names[".js"]);
  put("index.html", html);

  const gz = (bytes) => gzipSync(bytes, { level: 9 }).length;
  const sizes = {
    dashboard: dashboard.outputFiles.reduce((sum, file) => sum + gz(file.contents), 0) + gz(Buffer.from(html)),
    embed: gz(embedFile.contents),
  };
  put(".assetsignore", "sizes.json\n");
  put("sizes.json", `${JSON.stringify(sizes, null, 2)}\n`);
  // Bundles of earlier builds: their names carry another content hash. A build of the same code in parallel wrote
  // the same names, so it loses nothing here.
  for (const name of readdirSync(path.join(PUBLIC_DIR, "assets"))) {
    const relative = path.join("assets", name);
    const hashed = /^dashboard-[0-9a-f]{10}\.(js|css)$/.test(name) || /^herald-icon-[0-9a-f]{10}\.png$/.test(name);
    if (hashed && !written.has(relative)) rmSync(path.join(PUBLIC_DIR, relative), { force: true });
  }
  return sizes;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const sizes = await buildUi();
  const kib = (n) => `${(n / 1024).toFixed(1)} KiB`;
  console.log(
    `Built the dashboard (${kib(sizes.dashboard)} gzip, budget ${kib(BUDGETS.dashboard)}) and the embed (${kib(sizes.embed)} gzip, budget ${kib(BUDGETS.embed)}) into dist/public.`,
  );
}
