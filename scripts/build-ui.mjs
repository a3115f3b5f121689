// Builds what the browser loads (docs/dashboard.md): the dashboard (src/dashboard, Preact) and the embeddable inbox
// (src/embed, no framework) into dist/public, the directory wrangler.toml's [assets] serves. esbuild does the work;
// nothing is fetched at build or run time. Run by wrangler's [build] step (npm start, the deploy, build:check) and by
// the test suites' global setup, so every path that serves the Worker serves a fresh build.
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { build } from "esbuild";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const PUBLIC_DIR = path.join(root, "dist", "public");

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

  rmSync(PUBLIC_DIR, { recursive: true, force: true });
  mkdirSync(path.join(PUBLIC_DIR, "assets"), { recursive: true });
  mkdirSync(path.join(PUBLIC_DIR, "embed"), { recursive: true });

  // Content-hashed names: the page is revalidated on every load, the files it names can be cached for a year.
  const names = {};
  for (const file of dashboard.outputFiles) {
    const ext = path.extname(file.path);
    const name = `dashboard-${hash(file.contents)}${ext}`;
    writeFileSync(path.join(PUBLIC_DIR, "assets", name), file.contents);
    names[ext] = `/assets/${name}`;
  }
  const [embedFile] = embed.outputFiles;
  writeFileSync(path.join(PUBLIC_DIR, "embed", "inbox.js"), embedFile.contents);

  const template = readFileSync(path.join(root, "src", "dashboard", "index.html"), "utf8");
  const html = template.replace("%STYLE%", names[".css"]).replace("%SCRIPT%", names[".js"]);
  writeFileSync(path.join(PUBLIC_DIR, "index.html"), html);

  const gz = (bytes) => gzipSync(bytes, { level: 9 }).length;
  const sizes = {
    dashboard: dashboard.outputFiles.reduce((sum, file) => sum + gz(file.contents), 0) + gz(Buffer.from(html)),
    embed: gz(embedFile.contents),
  };
  writeFileSync(path.join(PUBLIC_DIR, ".assetsignore"), "sizes.json\n");
  writeFileSync(path.join(PUBLIC_DIR, "sizes.json"), `${JSON.stringify(sizes, null, 2)}\n`);
  return sizes;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const sizes = await buildUi();
  const kib = (n) => `${(n / 1024).toFixed(1)} KiB`;
  console.log(
    `Built the dashboard (${kib(sizes.dashboard)} gzip, budget ${kib(BUDGETS.dashboard)}) and the embed (${kib(sizes.embed)} gzip, budget ${kib(BUDGETS.embed)}) into dist/public.`,
  );
}
