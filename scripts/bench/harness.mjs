// Builds the Worker and runs it in workerd through miniflare, without wrangler dev's logging proxy (docs/benchmarks.md,
// "How it measures"): bindings from wrangler's own reading of wrangler.toml, the built bundle's modules listed
// explicitly, and a port bound straight to the Worker with `unsafeDirectSockets`.
import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { gzipSync } from "node:zlib";
import { OFFLINE_ENV } from "../offline.mjs";

export const root = path.resolve(import.meta.dirname, "..", "..");
const require = createRequire(path.join(root, "package.json"));
const wranglerPkgPath = require.resolve("wrangler/package.json");
const wranglerPkg = require(wranglerPkgPath);
const wranglerBin = path.join(path.dirname(wranglerPkgPath), wranglerPkg.bin.wrangler);
/** wrangler's own copy of miniflare (and so of workerd), resolved from wrangler's dependency tree. */
const miniflarePath = createRequire(wranglerPkgPath).resolve("miniflare");

// wrangler also runs in this process (its configuration readers), offline as well.
Object.assign(process.env, OFFLINE_ENV);
export const wrangler = require("wrangler");
export const miniflare = require(miniflarePath);
export const versions = {
  wrangler: wranglerPkg.version,
  miniflare: createRequire(wranglerPkgPath)("miniflare/package.json").version,
  workerd: createRequire(miniflarePath)("workerd/package.json").version,
};

export const QUIET_ENV = { ...OFFLINE_ENV, NO_COLOR: "1", FORCE_COLOR: "0" };

/** Limit given to the login Rate Limiting bindings for the bench (wrangler.toml keeps 20/min per IP, 10/min per account). */
export const BENCH_RATE_LIMIT = 1_000_000;

/**
 * `wrangler deploy --dry-run --outdir`: the exact bundle that would be uploaded, plus wrangler's size report.
 * `minify: false` keeps function names for a CPU profile (`npm run bench:profile`); the bench measures the real one.
 */
export function build(outdir, { minify = true } = {}) {
  return new Promise((resolve, reject) => {
    const args = [wranglerBin, "deploy", "--dry-run", "--outdir", outdir, ...(minify ? [] : ["--no-minify"])];
    const child = spawn(process.execPath, args, {
      cwd: root,
      env: { ...process.env, ...QUIET_ENV },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
    child.on("error", reject);
    child.on("exit", (code) => {
      if (code !== 0) return reject(new Error(`wrangler deploy --dry-run failed (exit ${code}):\n${output}`));
      const report = /Total Upload:\s*([\d.]+)\s*KiB\s*\/\s*gzip:\s*([\d.]+)\s*KiB/.exec(output);
      resolve({ totalKiB: report ? Number(report[1]) : undefined, gzipKiB: report ? Number(report[2]) : undefined });
    });
  });
}

/** gzip of every module in the outdir (what the upload carries; the source map is uploaded separately). */
export function gzipSizeOf(outdir, modules) {
  let raw = 0;
  let gz = 0;
  for (const m of modules) {
    const bytes = readFileSync(m.path);
    raw += bytes.length;
    gz += gzipSync(bytes, { level: 9 }).length;
  }
  return { rawKiB: raw / 1024, gzipKiB: gz / 1024, files: readdirSync(outdir) };
}

/** Glob of a wrangler module rule (`**\/*.sql`, `**\/*.wasm?module`) as a file-name test. */
function ruleMatcher(glob) {
  const pattern = glob
    .replace(/^\*\*\//, "")
    .replace(/[.+^${}()|[\]\\?]/g, "\\$&")
    .replace(/\*/g, "[^/]*");
  return new RegExp(`^${pattern}$`);
}

/**
 * The bundle's modules, listed explicitly: the entry first, then every other output file typed by the config's
 * module rules (the argon2 .wasm as CompiledWasm, the inbox migrations' .sql as Text). Maps and the README are not
 * modules.
 */
export function bundleModules(outdir, modulesRules) {
  const rules = (modulesRules ?? []).flatMap((r) => r.include.map((g) => ({ type: r.type, test: ruleMatcher(g) })));
  const files = readdirSync(outdir).filter((f) => !f.endsWith(".map") && f !== "README.md");
  const entry = files.find((f) => f === "index.js") ?? files.find((f) => /\.m?js$/.test(f));
  if (!entry) throw new Error(`no entry module in ${outdir}: ${files.join(", ")}`);
  const modules = [{ type: "ESModule", path: path.join(outdir, entry) }];
  for (const f of files) {
    if (f === entry) continue;
    const rule = rules.find((r) => r.test.test(f));
    if (rule) modules.push({ type: rule.type, path: path.join(outdir, f) });
    else if (/\.m?js$/.test(f)) modules.push({ type: "ESModule", path: path.join(outdir, f) });
    else throw new Error(`no module rule types ${f}; add one to the bench`);
  }
  return modules;
}

const TRIVIAL_WORKER = 'export default { fetch() { return new Response("ok") } }';

/**
 * Three physical references for `/healthz`, bundled from the installed Hono: a bare Hono app with that one route, the
 * same app plus one middleware that sets the headers every Herald answer carries (the 12 security headers and a fresh
 * X-Request-Id), and, with no framework at all, the trivial Worker answering with those same headers: what sending them
 * costs by itself.
 */
const REFERENCE_SOURCES = {
  "hono-bare": `import { Hono } from "hono";
const app = new Hono();
app.get("/healthz", (c) => c.text("OK"));
export default app;`,
  "hono-headers": `import { Hono } from "hono";
const HEADERS = ${JSON.stringify(referenceHeaders())};
const app = new Hono();
app.use(async (c, next) => {
  for (const [name, value] of HEADERS) c.header(name, value);
  c.header("X-Request-Id", crypto.randomUUID());
  await next();
});
app.get("/healthz", (c) => c.text("OK"));
export default app;`,
  // No framework: the trivial Worker, with the headers given in the Response's own init.
  "plain-headers": `const HEADERS = ${JSON.stringify(referenceHeaders())};
export default {
  fetch() {
    return new Response("OK", { headers: [...HEADERS, ["Content-Type", "text/plain; charset=UTF-8"], ["X-Request-Id", crypto.randomUUID()]] });
  },
};`,
};

/**
 * The fixed headers of a Herald JSON or text answer (docs/security.md, V3.4), read from the file Herald's frame
 * middleware imports (src/http/middleware.ts), so the references send exactly what Herald sends.
 */
function referenceHeaders() {
  return Object.entries(JSON.parse(readFileSync(path.join(root, "src/http/frame-headers.json"), "utf8")));
}

/** The reference Workers' modules, bundled (minified, like Herald) by the esbuild the project builds its UI with. */
function referenceModules() {
  const esbuild = require("esbuild");
  return Object.fromEntries(
    Object.entries(REFERENCE_SOURCES).map(([name, contents]) => {
      const out = esbuild.buildSync({
        stdin: { contents, resolveDir: root, loader: "js" },
        bundle: true,
        format: "esm",
        minify: true,
        write: false,
        logLevel: "error",
      });
      return [name, out.outputFiles[0].text];
    }),
  );
}

/**
 * A helper Worker, never on a measured Herald path. `POST /seed` binds Herald's UserInbox class and calls its
 * `deliver` RPC from inside workerd, in parallel batches (the delivery pipeline's own path, far faster than one
 * Node→workerd round trip per notification). The GET routes are cost probes for the report: the bare price of one
 * D1 point read, of one D1 batch shaped like authentication's, of one RPC to a user's inbox object (a point read),
 * and of the inbox list RPC answered as JSON (the inbox route without authentication), each in a handler that does
 * nothing else; `/env` tells whether the runtime hands every request the same `env` object. For the broadcast figure
 * (broadcast.mjs): `POST /seed-users` inserts users straight into D1, `POST /deliver-distinct` times one `deliver` into
 * each of many new inbox objects (the raw rate), `POST /template-copies` asks every recipient's object how many items
 * of a template it holds. For the audit log figure (audit.mjs): `POST /seed-audit` inserts entries straight into D1.
 * For the digest figure (digests.mjs): `POST /hold-digests` delivers one unread item into each of many inbox objects
 * and holds its e-mail copy for a digest window ending at a given time; `POST /digests-queued` counts the digest
 * rows the windows' ends have written to the message log. For the privacy figure (privacy.mjs): `POST /sweep-pages`
 * runs retention's sweep on one inbox object page by page through its `sweep` RPC, timing each call, and
 * `POST /rpc-baseline` times the same number of `counts` calls, the price of the round trip alone; `POST /export-pages`
 * reads every page of one section of an inbox's export through its `exportPage` RPC and drops it.
 */
const HELPER_WORKER = `
// The limits every producer hands the inbox with a delivery: wrangler.toml's INBOX_MAX_ITEMS and INBOX_RETENTION
// (365d). Seeded items are unread, so retention never removes one (docs/inbox.md, "Retention").
const INBOX_LIMITS = { maxItems: 100000, retentionMs: 365 * 86400000 };
const envs = new WeakSet();
let sameEnv = 0;
let newEnv = 0;
export default {
  async fetch(request, env) {
    if (envs.has(env)) sameEnv++; else { envs.add(env); newEnv++; }
    const url = new URL(request.url);
    const q = url.searchParams;
    switch (url.pathname) {
      case "/env":
        return Response.json({ sameEnv, newEnv });
      case "/d1":
        await env.DB.prepare("SELECT * FROM api_keys WHERE id = ?").bind(q.get("key")).first();
        return new Response("ok");
      case "/d1-batch3": {
        const owner = "SELECT user_id FROM api_keys WHERE id = ?";
        await env.DB.batch([
          env.DB.prepare("SELECT * FROM api_keys WHERE id = ?").bind(q.get("key")),
          env.DB.prepare("SELECT * FROM users WHERE id IN (" + owner + ")").bind(q.get("key")),
          env.DB.prepare("SELECT organization_id, roles FROM organization_members WHERE user_id IN (" + owner + ")").bind(q.get("key")),
        ]);
        return new Response("ok");
      }
      case "/do":
        await env.USER_INBOX.get(env.USER_INBOX.idFromName(q.get("user"))).existing([q.get("id")]);
        return new Response("ok");
      case "/do-list": {
        const page = await env.USER_INBOX.get(env.USER_INBOX.idFromName(q.get("user"))).list({ targets: [], templates: [], readStatus: "all", archived: "exclude", snoozed: "exclude" }, undefined, Number(q.get("limit") ?? 25));
        // Answered the way the inbox route answers (its default filter: archived and snoozed left out), whichever
        // shape the object returns (rows or pre-built JSON).
        if (typeof page.notificationsJson === "string") {
          return new Response('{"notifications":' + page.notificationsJson + ',"unread_count":' + page.unreadCount + ',"seq":' + page.seq + "}", { headers: { "Content-Type": "application/json" } });
        }
        if (!Array.isArray(page.notifications)) return new Response("unexpected list result", { status: 500 });
        return Response.json({ notifications: page.notifications, unread_count: page.unreadCount });
      }
      case "/seed":
        return seed(await request.json(), env);
      case "/seed-users":
        return seedUsers(await request.json(), env);
      case "/deliver-distinct":
        return deliverDistinct(await request.json(), env);
      case "/audience-all":
        return audienceAll(await request.json(), env);
      case "/template-copies":
        return templateCopies(await request.json(), env);
      case "/seed-audit":
        return seedAudit(await request.json(), env);
      case "/hold-digests":
        return holdDigests(await request.json(), env);
      case "/digests-queued":
        return digestsQueued(await request.json(), env);
      case "/sweep-pages":
        return sweepPages(await request.json(), env);
      case "/rpc-baseline":
        return rpcBaseline(await request.json(), env);
      case "/export-pages":
        return exportPages(await request.json(), env);
    }
    return new Response("not found", { status: 404 });
  },
};
async function seed({ userId, from, count, parallel, baseTime, templateId, templateGroup }, env) {
  const stub = env.USER_INBOX.get(env.USER_INBOX.idFromName(userId));
  let stored = 0;
  for (let i = from; i < from + count; i += parallel) {
    const batch = [];
    for (let j = i; j < Math.min(i + parallel, from + count); j++) {
      batch.push(stub.deliver({
        id: crypto.randomUUID(), userId, templateId, templateGroup,
        targets: j % 10 === 0 ? [userId] : [],
        title: "Bench notification #" + j,
        content: "Something happened to **resource " + j + "**. This line stands in for a typical rendered body.",
        icon: "", actions: [{ label: "View", url: "http://localhost:8787/notifications/" + j }],
        createdAt: new Date(baseTime + j).toISOString(),
      }, INBOX_LIMITS));
    }
    for (const r of await Promise.all(batch)) if (r.stored) stored++;
  }
  return Response.json({ stored });
}
/** Runs fn over items with at most parallel in flight, each finished one making room for the next (a sliding window). */
async function pool(items, parallel, fn) {
  let next = 0;
  const lanes = [];
  for (let k = 0; k < Math.min(parallel, items.length); k++) {
    lanes.push((async () => {
      while (next < items.length) {
        const i = next++;
        await fn(items[i], i);
      }
    })());
  }
  await Promise.all(lanes);
}
/**
 * count users straight into D1 (no password hashing): random v4 ids, unique e-mails and usernames
 * (prefix + index), active, not system, created at createdAt. A few INSERT … SELECT … FROM json_each(?) in one batch.
 */
async function seedUsers({ count, prefix, createdAt, perStatement = 2500 }, env) {
  const started = Date.now();
  const statements = [];
  for (let from = 0; from < count; from += perStatement) {
    const ids = [];
    for (let i = from; i < Math.min(from + perStatement, count); i++) ids.push(crypto.randomUUID());
    statements.push(env.DB.prepare(
      "INSERT INTO users (id, email, username, name, hashed_password, login_type, status, roles, is_system, deleted, created_at, updated_at, last_seen_at) " +
      "SELECT value, ? || (? + key) || '@bench.example.com', ? || (? + key), '', NULL, 'none', 'active', '[]', 0, 0, ?, ?, NULL FROM json_each(?)"
    ).bind(prefix, from, prefix, from, createdAt, createdAt, JSON.stringify(ids)));
  }
  const results = await env.DB.batch(statements);
  const inserted = results.reduce((sum, r) => sum + (r.meta?.changes ?? 0), 0);
  return Response.json({ inserted, statements: statements.length, ms: Date.now() - started });
}
/**
 * One unread inbox item per user (ids prefix + index), its e-mail copy held for a digest window ending at endsAt:
 * the two RPCs the enqueue makes for a user with a digest (deliver, holdForDigest), parallel at most at a time.
 */
async function holdDigests({ prefix, from, count, parallel, endsAt, spreadMs = 0, total = 1, templateId }, env) {
  const started = Date.now();
  const users = [];
  for (let i = from; i < from + count; i++) users.push(prefix + "-" + i);
  await pool(users, parallel, async (userId) => {
    // User i's window ends i/total of the way through [endsAt, endsAt + spreadMs): windows "ending in the same minute".
    const index = Number(userId.slice(prefix.length + 1));
    const windowEnd = endsAt + Math.floor((index * spreadMs) / total);
    const stub = env.USER_INBOX.get(env.USER_INBOX.idFromName(userId));
    const id = crypto.randomUUID();
    await stub.deliver({
      id, userId, templateId, templateGroup: "Custom Events", targets: [],
      title: "Nightly build passed", content: "All tests passed on main.", icon: "",
      actions: [{ label: "View", url: "http://localhost:8787/builds/1" }], createdAt: new Date().toISOString(),
    }, INBOX_LIMITS);
    await stub.holdForDigest({ notificationId: id, messageId: crypto.randomUUID() }, windowEnd, {
      user_id: userId, user_email: userId + "@bench.example.com", user_name: "", user_username: userId,
    });
  });
  return Response.json({ held: users.length, ms: Date.now() - started });
}
/**
 * Retention's sweep of one inbox at now under limits, a page per sweep RPC until a page comes back not full: each call's
 * duration as this Worker sees it (the clock moves across the await), which is the object's step plus one round trip.
 */
async function sweepPages({ userId, now, limits, maxPages = 10000 }, env) {
  const stub = env.USER_INBOX.get(env.USER_INBOX.idFromName(userId));
  const durations = [];
  let removed = 0;
  let more = true;
  for (let page = 0; page < maxPages && more; page++) {
    const started = Date.now();
    const r = await stub.sweep(now, limits);
    durations.push(Date.now() - started);
    removed += r.removed;
    more = r.more;
  }
  return Response.json({ removed, durations, more });
}
/** Every page of one section of an inbox's export through the exportPage RPC, read and dropped: the object's side alone. */
async function exportPages({ userId, key }, env) {
  const stub = env.USER_INBOX.get(env.USER_INBOX.idFromName(userId));
  const started = Date.now();
  let rows = 0;
  let chars = 0;
  for (let after = 0; after !== null; ) {
    const page = await stub.exportPage(key, after);
    rows += page.rows;
    chars += page.json.length;
    after = page.next;
  }
  return Response.json({ rows, chars, ms: Date.now() - started });
}
/** n counts() calls to one inbox object, each timed as sweepPages times a sweep: the round trip's own price. */
async function rpcBaseline({ userId, n }, env) {
  const stub = env.USER_INBOX.get(env.USER_INBOX.idFromName(userId));
  const durations = [];
  for (let i = 0; i < n; i++) {
    const started = Date.now();
    await stub.counts();
    durations.push(Date.now() - started);
  }
  return Response.json({ durations });
}
async function digestsQueued({ templateId, withRows = false }, env) {
  const row = await env.DB.prepare("SELECT count(*) AS n, min(created_at) AS first, max(created_at) AS last FROM notification_messages WHERE template_id = ?")
    .bind(templateId).first();
  if (!withRows) return Response.json(row);
  // Each digest's user and when it was queued, for the lag behind its own window's end.
  const { results } = await env.DB.prepare("SELECT payload ->> 'user_username' AS user, created_at AS at FROM notification_messages WHERE template_id = ?")
    .bind(templateId).all();
  return Response.json({ ...row, rows: results });
}
/**
 * count audit entries straight into D1 (audit.mjs), one a minute back from now, their actors taken in turn from
 * userIds and their actions from a handful, in INSERT … SELECT statements of 10,000 rows from a recursive CTE.
 */
async function seedAudit({ count, userIds }, env) {
  const started = Date.now();
  const statements = [];
  const now = Math.floor(Date.now() / 1000);
  for (let from = 0; from < count; from += 10000) {
    statements.push(env.DB.prepare(
      "WITH RECURSIVE n(i) AS (SELECT CAST(?1 AS INTEGER) UNION ALL SELECT i + 1 FROM n WHERE i < ?2) " +
      "INSERT INTO audit_logs (id, time, user_id, action, resource_type, resource_id, diff, ip, request_id, user_agent, status_code) " +
      "SELECT printf('%08x-0000-4000-8000-%012x', i, i), strftime('%Y-%m-%dT%H:%M:%fZ', ?3 - i * 60, 'unixepoch'), " +
      "json_extract(?4, '$[' || (i % json_array_length(?4)) || ']'), " +
      "CASE i % 5 WHEN 0 THEN 'login' WHEN 1 THEN 'logout' WHEN 2 THEN 'create' ELSE 'update_roles' END, " +
      "CASE i % 5 WHEN 0 THEN 'api_key' WHEN 1 THEN 'api_key' ELSE 'user' END, printf('%010x', i), " +
      "json_object('login_type', 'password'), '192.0.2.' || (i % 250), printf('%032x', i), 'Mozilla/5.0 (bench)', 200 FROM n"
    ).bind(from, Math.min(from + 10000, count) - 1, now, JSON.stringify(userIds)));
  }
  const results = await env.DB.batch(statements);
  const inserted = results.reduce((sum, r) => sum + (r.meta?.changes ?? 0), 0);
  return Response.json({ inserted, ms: Date.now() - started });
}
/**
 * The raw rate a broadcast is compared with: one deliver into each of count inbox objects that do not exist yet
 * (fresh user ids, not users), parallel in flight, with the item a broadcast delivers (same template, shape, size).
 */
async function deliverDistinct({ count, parallel, templateId, templateGroup, title, content, createdAt }, env) {
  // One request keeps every object it reached open until it ends (3 file descriptors each): callers send a consumer
  // invocation's worth (1,000) per request.
  const userIds = [];
  for (let i = 0; i < count; i++) userIds.push(crypto.randomUUID());
  let stored = 0;
  let failed = 0;
  let lastError;
  const started = Date.now();
  await pool(userIds, parallel, async (userId) => {
    try {
      const r = await env.USER_INBOX.get(env.USER_INBOX.idFromName(userId)).deliver({
        id: crypto.randomUUID(), userId, templateId, templateGroup, targets: [], title, content, icon: "", actions: [], createdAt,
      }, INBOX_LIMITS);
      if (r.stored) stored++;
    } catch (error) {
      failed++;
      lastError = String(error && error.message || error);
    }
  });
  return Response.json({ stored, failed, lastError, ms: Date.now() - started });
}
/**
 * The users a broadcast to everyone reaches, read from D1 here, not from Herald: active, not deleted, not system,
 * created no later than createdAt.
 */
async function audienceAll({ createdAt }, env) {
  const { results } = await env.DB.prepare(
    "SELECT id FROM users WHERE status = 'active' AND deleted = 0 AND is_system = 0 AND created_at <= ? ORDER BY id"
  ).bind(createdAt).all();
  return Response.json(results.map((r) => r.id));
}
/**
 * For each of userIds, how many items of templateId its inbox object holds (its counts() RPC, by_template),
 * parallel in flight: how many hold 0, exactly 1, more.
 */
async function templateCopies({ templateId, userIds, parallel = 50 }, env) {
  const started = Date.now();
  const results = userIds.map((id) => ({ id }));
  const histogram = {};
  const zero = [];
  const more = [];
  let errors = 0;
  let lastError;
  await pool(results, parallel, async ({ id }) => {
    try {
      const counts = await env.USER_INBOX.get(env.USER_INBOX.idFromName(id)).counts();
      const n = counts.by_template.find((t) => t.template_id === templateId)?.total ?? 0;
      histogram[n] = (histogram[n] ?? 0) + 1;
      if (n === 0) zero.push(id);
      if (n > 1) more.push(id);
    } catch (error) {
      errors++;
      lastError = String(error && error.message || error);
    }
  });
  return Response.json({
    checked: results.length, exactlyOne: histogram[1] ?? 0, zero: zero.length, more: more.length, errors, lastError,
    histogram, zeroSample: zero.slice(0, 5), moreSample: more.slice(0, 5), ms: Date.now() - started,
  });
}`;

/** One of wrangler.toml's [vars], as the bench's Herald sees it (a developer's .dev.vars left out, as in `start`). */
export function wranglerVar(name) {
  const { vars } = quietly(() => wrangler.unstable_readConfig({ config: path.join(root, "wrangler.toml") }));
  return vars?.[name];
}

/** Runs a wrangler API call without its "Using secrets defined in .dev.vars" chatter (those vars are dropped anyway). */
function quietly(fn) {
  const before = process.env.WRANGLER_LOG;
  process.env.WRANGLER_LOG = "warn";
  try {
    return fn();
  } finally {
    if (before === undefined) delete process.env.WRANGLER_LOG;
    else process.env.WRANGLER_LOG = before;
  }
}

/** A fresh SECRET_KEY for one bench run (config requires ≥ 32 characters). */
export function generateSecretKey() {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(48))).toString("base64url");
}

/** The Workers `start` serves, each on a direct socket of its own: Herald, the baselines and the bench helper. */
export const WORKERS = ["herald", "trivial", "helper", "hono-bare", "hono-headers", "plain-headers"];

/**
 * Starts Herald, the trivial baseline Worker and the bench helper in one workerd, each Worker with its own direct socket.
 * Every socket (and the inspector's, with `inspect`) is bound to port 0 by workerd itself and read back once it
 * listens, so no port is chosen before it is bound and two starts can never race for one. `urls` maps each name of
 * WORKERS to its base URL. Local D1, SQLite Durable Objects and Queues persist under `stateDir` (like
 * `wrangler dev --persist-to`). `vars` are given to Herald on top of wrangler.toml's [vars] (a standalone bench's own
 * smarthost, push keys and outbound origins).
 */
export async function start({ outdir, stateDir, host, secretKey, vars: extraVars = {}, withoutQueueConsumer = false, inspect = false }) {
  const { workerOptions } = quietly(() => wrangler.unstable_getMiniflareWorkerOptions(path.join(root, "wrangler.toml")));
  // Module rules are for bundling from source; miniflare 5 takes the built modules instead. The every-minute cron
  // (re-drive and purge) is left out so it cannot fire in the middle of a measurement.
  const { modulesRules, cronTriggers: _cron, ...withAssets } = workerOptions;
  // Without Static Assets: locally miniflare puts an asset router Worker in front of Herald's for `[assets]`, which
  // cost about 140 µs of CPU per request on this thread (3× Herald's own /healthz; docs/benchmarks.md, "How it
  // measures"). No measured route is an asset, and on Cloudflare that routing is not the Worker's CPU.
  // BENCH_WITH_ASSETS=1 keeps the router, to measure it.
  // Herald still reads one file through its ASSETS binding, the password policy's common-password list
  // (docs/security.md, "Password policy"): without the router, the binding is workerd's own disk service over the
  // directory wrangler.toml's [assets] names, which answers a GET of a path with that file.
  const { assets, ...withoutAssets } = withAssets;
  const herald =
    process.env.BENCH_WITH_ASSETS === "1"
      ? withAssets
      : {
          ...withoutAssets,
          serviceBindings: { ...withoutAssets.serviceBindings, [assets.binding]: { disk: { path: assets.directory, writable: false } } },
        };
  const modules = bundleModules(outdir, modulesRules);
  // Only wrangler.toml's [vars]: a developer's .dev.vars (which wrangler merges in) must not change what is measured.
  const { vars } = quietly(() => wrangler.unstable_readConfig({ config: path.join(root, "wrangler.toml") }));
  // The values too: wrangler's merged bindings carry .dev.vars values under the same names.
  const bindings = Object.fromEntries(
    Object.entries(vars ?? {}).map(([name, value]) => [name, typeof value === "string" ? value : JSON.stringify(value)]),
  );
  const ratelimits = Object.fromEntries(
    Object.entries(herald.ratelimits ?? {}).map(([name, rl]) => [name, { ...rl, simple: { ...rl.simple, limit: BENCH_RATE_LIMIT } }]),
  );
  const { Miniflare, Log, LogLevel, convertV4MiniflareOptions } = miniflare;
  const direct = [{ host, port: 0, proxy: false }];
  const references = Object.entries(referenceModules()).map(([name, contents]) => ({
    name,
    compatibilityDate: herald.compatibilityDate,
    modules: [{ type: "ESModule", path: `${name}.mjs`, contents }],
    unsafeDirectSockets: direct,
  }));
  const options = convertV4MiniflareOptions({
    resourcePersistencePath: stateDir,
    log: new Log(LogLevel.WARN),
    // The security log writes one line per refused sign-in, and the timing rows refuse hundreds on purpose: those
    // lines are dropped here, everything else the Worker logs is shown.
    handleStructuredLogs: ({ level, message }) => {
      if (message.startsWith('{"herald":"security"')) return;
      (level === "error" || level === "warn" ? process.stderr : process.stdout).write(`${message}\n`);
    },
    cf: false,
    // Only for `npm run bench:profile`: workerd's V8 inspector, for CPU profiles of the Herald Worker.
    ...(inspect ? { inspectorPort: 0 } : {}),
    workers: [
      {
        ...herald,
        name: "herald",
        modules,
        modulesRoot: outdir,
        bindings: { ...bindings, ...extraVars, SECRET_KEY: secretKey },
        ratelimits,
        // Diagnostics only (BENCH_WITHOUT_QUEUE_CONSUMER=1): queued e-mail copies then wait instead of competing.
        ...(withoutQueueConsumer ? { queueConsumers: {} } : {}),
        unsafeDirectSockets: direct,
      },
      {
        name: "trivial",
        compatibilityDate: herald.compatibilityDate,
        modules: [{ type: "ESModule", path: "trivial.mjs", contents: TRIVIAL_WORKER }],
        unsafeDirectSockets: direct,
      },
      {
        name: "helper",
        compatibilityDate: herald.compatibilityDate,
        modules: [{ type: "ESModule", path: "helper.mjs", contents: HELPER_WORKER }],
        // The same local database as Herald's (D1 storage is keyed by database id) and Herald's inbox objects.
        d1Databases: herald.d1Databases,
        durableObjects: { USER_INBOX: { className: "UserInbox", scriptName: "herald", useSQLite: true } },
        unsafeDirectSockets: direct,
      },
      ...references,
    ],
  });
  const mf = new Miniflare(options);
  await mf.ready;
  const urls = Object.fromEntries(await Promise.all(WORKERS.map(async (name) => [name, (await mf.unsafeGetDirectURL(name)).origin])));
  const inspectorPort = inspect ? Number((await mf.getInspectorURL()).port) : undefined;
  return { mf, modules, ratelimits, urls, inspectorPort };
}

/** Applies drizzle/*.sql in order through the D1 binding (each file's statements in one batch). */
export async function applyMigrations(mf) {
  const db = await mf.getD1Database("DB", "herald");
  const dir = path.join(root, "drizzle");
  const files = readdirSync(dir)
    .filter((f) => /^\d+.*\.sql$/.test(f))
    .sort();
  for (const file of files) {
    const text = readFileSync(path.join(dir, file), "utf8");
    const statements = text
      .split("--> statement-breakpoint")
      .flatMap((chunk) => wrangler.unstable_splitSqlQuery(chunk))
      .map((s) => s.trim())
      .filter((s) => s !== "");
    await db.batch(statements.map((s) => db.prepare(s)));
  }
  return files;
}

/**
 * Runs a bench script's `main` when that script is the one node was started with (`node scripts/bench/<name>.mjs`),
 * not when another imports it: exits 0 when it ends, 1 with the error when it fails.
 */
export function runWhenMain(moduleUrl, name, main) {
  if (moduleUrl !== pathToFileURL(process.argv[1] ?? "").href) return;
  main().then(
    () => process.exit(0),
    (error) => {
      console.error(`[bench ${name}] could not run: ${error?.stack ?? error}`);
      process.exit(1);
    },
  );
}
