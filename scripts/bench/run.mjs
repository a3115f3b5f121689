// `npm run bench`: Herald in workerd without wrangler dev's proxy, against a trivial Worker run the same way, in
// one run. Prints a table with the targets of docs/benchmarks.md and writes bench/results.json. A missed target is a
// finding, not a failure: the run exits 0 unless the harness itself cannot run (build, start, bootstrap).
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { BUDGETS, PUBLIC_DIR } from "../build-ui.mjs";
import { auditBench, auditRows } from "./audit.mjs";
import { broadcastBench, RPCS_IN_FLIGHT } from "./broadcast.mjs";
import { applyMigrations, BENCH_RATE_LIMIT, build, generateSecretKey, gzipSizeOf, root, start, versions, wranglerVar } from "./harness.mjs";
import {
  followUpSamples,
  interleavedLatency,
  interleavedSamples,
  latency,
  resumeLatency,
  sequentialClient,
  summarize,
  throughput,
  watchLatency,
} from "./measure.mjs";
import { codeInfo, loadAverage, machineInfo, printTable, writeResults } from "./report.mjs";
import { secondFactorBench } from "./second-factor.mjs";
import { securityNoticesBench } from "./security-notices.mjs";
import { deliverThroughObject, growInboxOffline, objectFile } from "./seed.mjs";
import { mannWhitney } from "./stats.mjs";

const num = (name, fallback) => (process.env[name] ? Number(process.env[name]) : fallback);
const settings = {
  connections: num("BENCH_CONNECTIONS", 32),
  durationS: num("BENCH_DURATION", 6),
  latencySamples: num("BENCH_LATENCY_SAMPLES", 300),
  loginSamples: num("BENCH_LOGIN_SAMPLES", 40),
  enumerationSamples: num("BENCH_ENUMERATION_SAMPLES", 70),
  secondFactorSamples: num("BENCH_SECOND_FACTOR_SAMPLES", 30),
  noticeSamples: num("BENCH_NOTICE_SAMPLES", 30),
  watchSamples: num("BENCH_WATCH_SAMPLES", 200),
  resumeSamples: num("BENCH_RESUME_SAMPLES", 40),
  resumeMissed: 100,
  bigInbox: num("BENCH_BIG_INBOX", 100_000),
  smallInbox: 100,
  listedInbox: 25,
  realDeliveries: num("BENCH_REAL_DELIVERIES", 1000),
  authChecks: 100,
  broadcastUsers: num("BENCH_BROADCAST_USERS", 10_000),
};
const diagnostics = {
  withoutQueueConsumer: process.env.BENCH_WITHOUT_QUEUE_CONSUMER === "1",
  tmpdir: process.env.BENCH_TMPDIR || undefined,
};
const HOST = "127.0.0.1";
const PASSWORD = "Plum-Kettle-Orbit-97-Lantern";
const clock = performance.now();
const log = (msg) => console.log(`[bench ${((performance.now() - clock) / 1000).toFixed(1).padStart(5)}s] ${msg}`);

/** A JSON API call the bench cannot go on without. */
async function api(base, method, route, { token, body, expect = [200, 201, 204] } = {}) {
  const res = await fetch(`${base}/api/v2${route}`, {
    method,
    headers: { ...(token ? { "Service-Session-Token": token } : {}), ...(body ? { "Content-Type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  if (!expect.includes(res.status)) throw new Error(`${method} ${route} → ${res.status} ${text.slice(0, 300)}`);
  return text ? JSON.parse(text) : undefined;
}

async function login(base, email) {
  return (await api(base, "POST", "/users/login", { body: { email, password: PASSWORD } })).session_token;
}

async function createUser(base, ownerToken, username) {
  const email = `${username}@bench.example.com`;
  const user = await api(base, "POST", "/users", { token: ownerToken, body: { email, username, password: PASSWORD } });
  return { id: user.id, email, token: await login(base, email) };
}

/** 100 checks in ten shapes; four of them name a stored resource (user, API key, organization, inbox notification). */
function authcheckBody(caller, other, orgId, notificationId) {
  const keyId = caller.token.split("-")[0];
  const shapes = [
    { action: "read", object: { resource_type: "user", owner_id: "me" } },
    { action: "update_personal", object: { resource_type: "user", owner_id: "me" } },
    { action: "create", object: { resource_type: "api_key", owner_id: "me" } },
    { action: "update", object: { resource_type: "deployment_config" } },
    { action: "read", object: { resource_type: "notification_template" } },
    { action: "read", object: { resource_type: "organization_member", any_org: true } },
    { action: "read", object: { resource_type: "user", resource_id: other.id } },
    { action: "delete", object: { resource_type: "api_key", resource_id: keyId } },
    { action: "read", object: { resource_type: "organization", resource_id: orgId } },
    { action: "update", object: { resource_type: "inbox_notification", resource_id: notificationId } },
  ];
  const checks = {};
  for (let i = 0; i < settings.authChecks; i++) {
    const object = { ...shapes[i % shapes.length].object };
    // Several distinct user ids per request (unknown ones answer false), as a dashboard asking about a list would.
    if (object.resource_type === "user" && object.resource_id && i >= 10) object.resource_id = crypto.randomUUID();
    checks[`check_${i}`] = { action: shapes[i % shapes.length].action, object };
  }
  return { checks };
}

/** The running Miniflare and where each of its Workers answers (`start` binds every socket to a port of its own). */
function urlsOf(running) {
  const { urls } = running;
  return {
    mf: running.mf,
    base: urls.herald,
    trivialUrl: `${urls.trivial}/`,
    honoBareUrl: `${urls["hono-bare"]}/healthz`,
    honoHeadersUrl: `${urls["hono-headers"]}/healthz`,
    plainHeadersUrl: `${urls["plain-headers"]}/`,
    helperUrl: urls.helper,
  };
}

/** Builds, starts workerd, applies migrations, bootstraps users through the API and seeds their inboxes. */
async function prepare(tmp, notes, env) {
  const outdir = path.join(tmp, "dist");
  const stateDir = path.join(tmp, "state");
  log(`building with wrangler deploy --dry-run --outdir ${outdir}`);
  const size = await build(outdir);
  // wrangler's [build] step (scripts/build-ui.mjs) wrote the browser bundles and their first-load sizes, gzip. A commit
  // from before the dashboard has no such step, and its rows then say "error".
  let ui;
  try {
    ui = JSON.parse(readFileSync(path.join(PUBLIC_DIR, "sizes.json"), "utf8"));
  } catch {
    notes.push(`The build wrote no ${path.relative(root, path.join(PUBLIC_DIR, "sizes.json"))}: the browser bundles were not measured.`);
  }
  const startOptions = {
    outdir,
    stateDir,
    host: HOST,
    secretKey: generateSecretKey(),
    withoutQueueConsumer: diagnostics.withoutQueueConsumer,
  };
  log(`starting workerd ${versions.workerd} through miniflare ${versions.miniflare}; state in ${stateDir}`);
  let running = await start(startOptions);
  Object.assign(env, {
    size,
    ui,
    gz: gzipSizeOf(outdir, running.modules),
    code: codeInfo(root, running.modules[0].path),
    ...urlsOf(running),
  });
  const migrations = await applyMigrations(running.mf);
  log(`applied D1 migrations ${migrations.join(", ")}; bootstrapping users through the API`);

  let { base, helperUrl } = env;
  const first = await api(base, "POST", "/users/first", { body: { email: "ada@bench.example.com", username: "ada", password: PASSWORD } });
  const ada = { id: first.user_id, email: "ada@bench.example.com", token: await login(base, "ada@bench.example.com") };
  const users = {
    ada,
    small: await createUser(base, ada.token, "small"),
    big: await createUser(base, ada.token, "big"),
    watcher: await createUser(base, ada.token, "watcher"),
    resumer: await createUser(base, ada.token, "resumer"),
  };
  env.users = users;
  env.organizationId = first.organization_id;

  await deliverThroughObject(helperUrl, ada.id, settings.listedInbox);
  await deliverThroughObject(helperUrl, users.small.id, settings.smallInbox);
  env.realDeliveries = await deliverThroughObject(helperUrl, users.big.id, Math.min(settings.realDeliveries, settings.bigInbox));
  log(`delivered ${env.realDeliveries.stored} notifications into one inbox through the deliver RPC: ${Math.round(env.realDeliveries.perSecond)}/s`);

  const ns = await running.mf.getDurableObjectNamespace("USER_INBOX", "herald");
  const bigObjectId = ns.idFromName(users.big.id).toString();
  await running.mf.dispose();
  env.mf = undefined;
  const grown = growInboxOffline(objectFile(stateDir, "herald-UserInbox", bigObjectId), settings.bigInbox);
  log(`grew big's inbox offline to ${grown.rows.toLocaleString("en-US")} rows in ${grown.seconds.toFixed(1)} s; restarting workerd`);
  running = await start(startOptions);
  // A new workerd binds new ports.
  Object.assign(env, urlsOf(running));
  ({ base, helperUrl } = env);

  // The inboxes hold what the measurements claim.
  const inbox = async (u) => api(base, "GET", "/notifications/inbox", { token: u.token });
  env.inboxes = { ada: await inbox(ada), small: await inbox(users.small), big: await inbox(users.big) };
  if (env.inboxes.ada.notifications.length !== settings.listedInbox) throw new Error(`ada's inbox lists ${env.inboxes.ada.notifications.length}`);
  if (env.inboxes.small.unread_count !== settings.smallInbox) throw new Error(`small's inbox has ${env.inboxes.small.unread_count} unread`);
  if (env.inboxes.big.unread_count !== settings.bigInbox) throw new Error(`big's inbox has ${env.inboxes.big.unread_count} unread`);
  // The counts row is only meaningful if the counters it reads are right: checked, and said when they are not.
  const counts = async (u) => api(base, "GET", "/notifications/inbox/counts", { token: u.token });
  env.counts = { small: await counts(users.small), big: await counts(users.big) };
  for (const [name, expected] of [
    ["small", settings.smallInbox],
    ["big", settings.bigInbox],
  ]) {
    const c = env.counts[name];
    const byTemplate = c.by_template?.reduce((sum, t) => sum + t.total, 0);
    if (c.total !== expected || c.unread !== expected || byTemplate !== expected) {
      notes.push(
        `${name}'s counts do not match its ${expected} items: total ${c.total}, unread ${c.unread}, by template ${byTemplate} (seq ${c.seq})`,
      );
    }
  }
  notes.push(
    `Inboxes of ${settings.listedInbox} and ${settings.smallInbox} were filled through the UserInbox deliver RPC; the ${settings.bigInbox.toLocaleString("en-US")}-row inbox got ${env.realDeliveries.stored} real deliveries, then clones of those rows written into the object's SQLite file with workerd stopped (unread and total counters and per-template counts set to match; the clones are not events, so its seq is ${env.counts.big.seq}).`,
  );
}

async function main() {
  // Before anything of the bench's own runs: the load others put on the machine.
  const machine = machineInfo(versions);
  log(`load average at the start: ${machine.load_average_at_start.join(", ")} (${machine.cores} cores)`);
  const tmp = mkdtempSync(path.join(diagnostics.tmpdir ?? tmpdir(), "herald-bench-"));
  /** What prepare() built: the running Miniflare among it, so cleanup can always stop it. */
  const env = {};
  const cleanup = async () => {
    try {
      await env.mf?.dispose();
    } catch {
      // already stopped
    }
    env.mf = undefined;
    rmSync(tmp, { recursive: true, force: true });
  };
  const onSignal = (signal) => {
    log(`${signal}: stopping workerd and removing ${tmp}`);
    cleanup().finally(() => process.exit(130));
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);

  const notes = [];
  const details = {};
  /** One measurement; if it breaks, the run records the error and goes on. */
  const attempt = async (name, fn) => {
    try {
      return await fn();
    } catch (error) {
      log(`${name} failed: ${error?.message ?? error}`);
      notes.push(`${name} could not be measured: ${String(error?.message ?? error).slice(0, 300)}`);
      return undefined;
    }
  };

  try {
    const prepareStarted = performance.now();
    await prepare(tmp, notes, env);
    details.setupSeconds = (performance.now() - prepareStarted) / 1000;
    const { base, trivialUrl, helperUrl, users, inboxes, honoBareUrl, honoHeadersUrl, plainHeadersUrl } = env;
    const { ada, small, big, watcher, resumer } = users;
    const header = (u) => ({ "Service-Session-Token": u.token });

    // --- throughput (autocannon) ---
    // Others may share the machine, so each measurement follows a trivial-Worker run and its ratio is taken against
    // that neighbour; the baseline shown is the median of those trivial runs.
    const trivialRuns = [];
    const tp = {};
    const pair = (name, label, opts) =>
      attempt(name, async () => {
        log(`throughput: ${label}`);
        const trivialRun = await throughput({
          url: trivialUrl,
          connections: settings.connections,
          duration: Math.max(2, settings.durationS / 2),
          warmup: trivialRuns.length === 0 ? 1 : 0,
        });
        trivialRuns.push(trivialRun.reqPerSec);
        const r = await throughput({ connections: settings.connections, duration: settings.durationS, ...opts });
        Object.assign(r, { trivialReqPerSec: trivialRun.reqPerSec, ratio: r.reqPerSec / trivialRun.reqPerSec });
        if (r.bad > 0) notes.push(`${name}: ${r.bad} non-2xx or failed responses (${JSON.stringify(r.statusCodes)})`);
        tp[name] = r;
        return r;
      });
    const adaKeyId = ada.token.split("-")[0];
    const adaNotification = inboxes.ada.notifications[0].id;
    await pair("healthz", "Herald GET /healthz", { url: `${base}/healthz` });
    // The physical references for /healthz (harness.mjs): Hono alone, and Hono plus the headers every answer carries.
    await pair("honoBare", "reference: a bare Hono app, GET /healthz", { url: honoBareUrl });
    await pair("honoHeaders", "reference: Hono + Herald's response headers, GET /healthz", { url: honoHeadersUrl });
    await pair("plainHeaders", "reference: a plain Worker answering with Herald's response headers", { url: plainHeadersUrl });
    await pair("authOnly", "GET /notifications/dispatch-methods (authentication only)", {
      url: `${base}/api/v2/notifications/dispatch-methods`,
      headers: header(ada),
    });
    await pair("inbox", "GET /notifications/inbox (25 items)", { url: `${base}/api/v2/notifications/inbox`, headers: header(ada) });
    // The object keeps the last page it listed (docs/inbox.md, "The last page, kept"), so the row above is mostly
    // answered from memory. Here the limit goes 25, 26, … 33 in turn, so the page asked for is almost never the one
    // kept, while each answer is the same 25 items (ada has 25): what a list costs when the inbox changed since.
    const limits = Array.from({ length: 9 }, (_, i) => `/api/v2/notifications/inbox?limit=${settings.listedInbox + i}`);
    await pair("inboxUnkept", "GET /notifications/inbox (25 items), not the page kept (limit 25–33 in turn)", {
      url: base,
      paths: limits,
      headers: header(ada),
    });
    await pair("me", "GET /users/me", { url: `${base}/api/v2/users/me`, headers: header(ada) });
    await pair("countsBig", `GET /notifications/inbox/counts (${settings.bigInbox.toLocaleString("en-US")} items)`, {
      url: `${base}/api/v2/notifications/inbox/counts`,
      headers: header(big),
    });
    // Cost probes: the same D1 database and inbox objects, from a handler doing only that one thing.
    await pair("probeD1", "probe: one D1 point read", { url: `${helperUrl}/d1?key=${adaKeyId}` });
    await pair("probeD1Batch", "probe: one D1 batch shaped like authentication's", { url: `${helperUrl}/d1-batch3?key=${adaKeyId}` });
    await pair("probeDo", "probe: one RPC to an inbox object (point read)", { url: `${helperUrl}/do?user=${ada.id}&id=${adaNotification}` });
    await pair("probeDoList", "probe: the inbox list RPC (25 items) as JSON, no auth", { url: `${helperUrl}/do-list?user=${ada.id}` });
    const sortedTrivial = [...trivialRuns].sort((a, b) => a - b);
    const trivial = sortedTrivial[Math.floor(sortedTrivial.length / 2)];
    details.trivialRuns = trivialRuns;
    details.throughput = tp;
    details.envIdentity = await attempt("env identity", async () => (await fetch(`${helperUrl}/env`)).json());
    if (sortedTrivial.at(-1) / sortedTrivial[0] > 1.3) {
      notes.push(
        `The trivial baseline ranged ${Math.round(sortedTrivial[0])}–${Math.round(sortedTrivial.at(-1))} req/s during the run: the machine was busy; each ratio uses the trivial run just before it.`,
      );
    }

    // --- latency (sequential) ---
    const client = sequentialClient(base);
    const lat = {};
    lat.basics = await attempt("basic latencies", async () => {
      log("latency: trivial Worker, authentication alone, probes");
      const trivialClient = sequentialClient(trivialUrl);
      const helper = sequentialClient(helperUrl);
      try {
        return {
          trivial: await latency(trivialClient, { path: "/", samples: settings.latencySamples }),
          authOnly: await latency(client, { path: "/api/v2/notifications/dispatch-methods", headers: header(ada), samples: settings.latencySamples }),
          probeD1: await latency(helper, { path: `/d1?key=${adaKeyId}`, samples: settings.latencySamples }),
          probeDo: await latency(helper, { path: `/do?user=${ada.id}&id=${adaNotification}`, samples: settings.latencySamples }),
        };
      } finally {
        trivialClient.close();
        helper.close();
      }
    });
    lat.list = await attempt("inbox list latency", async () => {
      log(`latency: inbox list at ${settings.smallInbox} and at ${settings.bigInbox.toLocaleString("en-US")} notifications, alternating`);
      const path_ = "/api/v2/notifications/inbox";
      const both = await interleavedLatency(
        client,
        { at100: { path: path_, headers: header(small) }, atBig: { path: path_, headers: header(big) } },
        { samples: settings.latencySamples },
      );
      const unread = await latency(client, { path: `${path_}?read_status=unread`, headers: header(big), samples: settings.latencySamples });
      // Filters that match nothing: served by their own index (templates) and side table (targets), docs/inbox.md.
      const templatesNone = await latency(client, {
        path: `${path_}?templates=${crypto.randomUUID()}`,
        headers: header(big),
        samples: 30,
        warmup: 2,
        maxSeconds: 15,
      });
      const targetsNone = await latency(client, {
        path: `${path_}?targets=${crypto.randomUUID()}`,
        headers: header(big),
        samples: 30,
        warmup: 2,
        maxSeconds: 15,
      });
      return { ...both, unread, templatesNone, targetsNone };
    });
    lat.counts = await attempt("counts latency", async () => {
      log(`latency: inbox counts at ${settings.smallInbox} and at ${settings.bigInbox.toLocaleString("en-US")} notifications, alternating`);
      const path_ = "/api/v2/notifications/inbox/counts";
      return interleavedLatency(
        client,
        { small: { path: path_, headers: header(small) }, big: { path: path_, headers: header(big) } },
        { samples: settings.latencySamples },
      );
    });
    lat.authcheck = await attempt("authcheck latency", async () => {
      log("latency: POST /authcheck with 100 checks");
      const body = authcheckBody(small, ada, env.organizationId, inboxes.small.notifications[0].id);
      const answer = await api(base, "POST", "/authcheck", { token: small.token, body });
      if (Object.keys(answer).length !== settings.authChecks) throw new Error(`authcheck answered ${JSON.stringify(answer).slice(0, 200)}`);
      const allowed = Object.values(answer).filter(Boolean).length;
      const withoutIds = {
        checks: Object.fromEntries(
          Object.entries(body.checks).map(([k, v]) => [k, { action: v.action, object: { ...v.object, resource_id: undefined } }]),
        ),
      };
      return {
        answer: { allowed, denied: settings.authChecks - allowed },
        withLookups: await latency(client, {
          method: "POST",
          path: "/api/v2/authcheck",
          headers: header(small),
          body,
          samples: settings.latencySamples,
        }),
        withoutLookups: await latency(client, {
          method: "POST",
          path: "/api/v2/authcheck",
          headers: header(small),
          body: withoutIds,
          samples: settings.latencySamples,
        }),
      };
    });
    lat.audit = await attempt("audit log latency", async () => {
      const trivialClient = sequentialClient(trivialUrl);
      try {
        return await auditBench({
          helperUrl,
          client,
          trivialClient,
          owner: ada,
          userIds: [ada.id, small.id, big.id, watcher.id, resumer.id],
          samples: settings.latencySamples,
          log,
        });
      } finally {
        trivialClient.close();
      }
    });
    lat.login = await attempt("login latency", async () => {
      log(`latency: POST /users/login (argon2id); the login rate limits are raised to ${BENCH_RATE_LIMIT} per period for the bench`);
      return {
        known: await latency(client, {
          method: "POST",
          path: "/api/v2/users/login",
          body: { email: ada.email, password: PASSWORD },
          samples: settings.loginSamples,
          warmup: 3,
          maxSeconds: 20,
        }),
        unknownEmail: await latency(client, {
          method: "POST",
          path: "/api/v2/users/login",
          body: { email: "nobody@bench.example.com", password: PASSWORD },
          samples: Math.min(20, settings.loginSamples),
          warmup: 2,
          maxSeconds: 10,
          expect: (s) => s === 401,
        }),
      };
    });
    lat.enumeration = await attempt("enumeration timing", async () => {
      const n = settings.enumerationSamples;
      log(`timing: A3, A4, A5 for an existing account vs an unknown e-mail, ${n} interleaved pairs each (Mann–Whitney)`);
      const unknown = "nobody-at-all@bench.example.com";
      const pair = async (known, other) => {
        const r = await interleavedSamples(client, { known, unknown: other }, { samples: n });
        return {
          ...mannWhitney(r.known.samples, r.unknown.samples),
          known: { ...summarize(r.known.samples), statuses: r.known.statuses },
          unknown: { ...summarize(r.unknown.samples), statuses: r.unknown.statuses },
        };
      };
      const post = (route, body) => ({ method: "POST", path: `/api/v2${route}`, body });
      const code = "00000000-0000-4000-8000-000000000000";
      const newPassword = "Quince-Harbor-Lamp-58-Violet";
      return {
        a3: await pair(
          post("/users/login", { email: ada.email, password: "Wrong-Password-12-Xylophone" }),
          post("/users/login", { email: unknown, password: "Wrong-Password-12-Xylophone" }),
        ),
        a4: await pair(
          post("/users/otp/change-password", { email: ada.email, one_time_passcode: code, password: newPassword }),
          post("/users/otp/change-password", { email: unknown, one_time_passcode: code, password: newPassword }),
        ),
        a5: await pair(post("/users/otp/request", { email: ada.email }), post("/users/otp/request", { email: unknown })),
        // The request that follows A5 on the same connection, timed: the work A5 leaves behind for a real account
        // must not slow it.
        a5next: await (async () => {
          const r = await followUpSamples(
            client,
            { known: post("/users/otp/request", { email: ada.email }), unknown: post("/users/otp/request", { email: unknown }) },
            { method: "GET", path: "/api/v2/users/first" },
            { samples: n },
          );
          return {
            ...mannWhitney(r.known.samples, r.unknown.samples),
            known: { ...summarize(r.known.samples), statuses: r.known.statuses },
            unknown: { ...summarize(r.unknown.samples), statuses: r.unknown.statuses },
          };
        })(),
      };
    });
    lat.secondFactor = await attempt("second factor", () =>
      secondFactorBench({
        client,
        api: (method, route, options) => api(base, method, route, options),
        newUser: (username) => createUser(base, ada.token, username),
        password: PASSWORD,
        origin: new URL(wranglerVar("ACCESS_URL")).origin,
        samples: settings.secondFactorSamples,
        enumerationSamples: settings.enumerationSamples,
        log,
      }),
    );
    lat.notices = await attempt("security notices", async () => {
      const r = await securityNoticesBench({
        base,
        newUser: (username) => createUser(base, ada.token, username),
        password: PASSWORD,
        samples: settings.noticeSamples,
        log,
      });
      notes.push(...r.notes.map((n) => `security notices: ${n}`));
      return r;
    });
    lat.watch = await attempt("watch latency", async () => {
      log(`latency: watch delivery, ${settings.watchSamples} custom notifications one after another`);
      const w = await watchLatency({ base, client, token: watcher.token, samples: settings.watchSamples });
      if (w.missed > 0) notes.push(`watch: ${w.missed} notifications never reached the socket within 5 s`);
      if (w.badPosts > 0) notes.push(`watch: ${w.badPosts} POST /notifications/custom failed (${w.lastBad})`);
      return w;
    });
    lat.resume = await attempt("resume latency", async () => {
      const n = settings.resumeMissed;
      log(`latency: resume, ${settings.resumeSamples} reconnects with after_seq, each after ${n} deliveries with no socket open`);
      const makeEvents = async (count) => (await deliverThroughObject(helperUrl, resumer.id, count)).stored;
      const r = await resumeLatency({ base, client, token: resumer.token, samples: settings.resumeSamples, missed: n, makeEvents });
      if (r.incomplete > 0 || r.outOfOrder > 0) {
        notes.push(
          `resume: ${r.incomplete} reconnect(s) without all ${n} frames, ${r.outOfOrder} with other seqs than seq+1…seq+${n} in order (${r.problems.join("; ")})`,
        );
      }
      return r;
    });
    client.close();
    details.latency = lat;

    // --- broadcast (last: it adds 10,000 users and 20,000 inbox objects, which nothing above should see) ---
    if (diagnostics.withoutQueueConsumer) {
      notes.push("The broadcast was not measured: without the queue consumer (BENCH_WITHOUT_QUEUE_CONSUMER=1) its fan-out never runs.");
    } else {
      details.broadcast = await attempt("broadcast", async () => {
        log(
          `broadcast: ${settings.broadcastUsers.toLocaleString("en-US")} users seeded into D1, the raw deliver rate into as many new inboxes, then one broadcast to all`,
        );
        const bcClient = sequentialClient(base);
        try {
          return await broadcastBench({ helperUrl, client: bcClient, owner: ada, users: settings.broadcastUsers, log });
        } finally {
          bcClient.close();
        }
      });
    }
    for (const [group, set] of Object.entries(lat)) {
      for (const [name, r] of Object.entries(set ?? {})) {
        if (r && typeof r === "object" && r.bad > 0) notes.push(`${group}.${name}: ${r.bad} unexpected statuses (last: ${r.lastBad})`);
      }
    }

    // --- the table ---
    const rows = [];
    const add = (row) => rows.push(row);
    const value = (get) => {
      try {
        const v = get();
        return typeof v === "number" && Number.isFinite(v) ? v : undefined;
      } catch {
        return undefined;
      }
    };
    const row = (id, label, get, unit, target, passes) => {
      const v = value(get);
      add({ id, label, value: v, unit, error: v === undefined, ...(target ? { target: { text: target }, pass: v !== undefined && passes(v) } : {}) });
    };
    row("trivial_rps", `trivial Worker (baseline, median of ${trivialRuns.length} runs)`, () => trivial, "req/s");
    row(
      "healthz_ratio",
      "Herald GET /healthz vs trivial (no I/O)",
      () => tp.healthz.ratio,
      "%",
      "≥ 65% of trivial",
      (v) => v >= 0.65,
    );
    row("hono_bare_ratio", "  reference: a bare Hono app, GET /healthz, vs trivial", () => tp.honoBare.ratio, "%");
    row("hono_headers_ratio", "  reference: Hono + the 13 headers every answer carries, vs trivial", () => tp.honoHeaders.ratio, "%");
    row(
      "healthz_vs_hono_headers",
      "  Herald GET /healthz vs the Hono + 13 headers reference",
      () => tp.healthz.ratio / tp.honoHeaders.ratio,
      "x",
      "≥ 1.1× the reference",
      (v) => v >= 1.1,
    );
    row("plain_headers_ratio", "  reference: no Hono, the trivial Worker + those 13 headers, vs trivial", () => tp.plainHeaders.ratio, "%");
    row(
      "auth_only_ratio",
      "GET /notifications/dispatch-methods vs trivial (auth only)",
      () => tp.authOnly.ratio,
      "%",
      "≥ 50% of trivial",
      (v) => v >= 0.5,
    );
    row("probe_d1_ratio", "probe: handler with one D1 point read vs trivial", () => tp.probeD1.ratio, "%");
    row("probe_d1_batch_ratio", "probe: handler with one 3-statement D1 batch vs trivial", () => tp.probeD1Batch.ratio, "%");
    row("probe_do_ratio", "probe: handler with one inbox-object RPC vs trivial", () => tp.probeDo.ratio, "%");
    row("probe_do_list_ratio", "probe: handler with the inbox list RPC (25 items) vs trivial", () => tp.probeDoList.ratio, "%");
    row("inbox_rps", "GET /notifications/inbox (25 items)", () => tp.inbox.reqPerSec, "req/s");
    row(
      "inbox_ratio",
      "  … vs trivial",
      () => tp.inbox.ratio,
      "%",
      "≥ 18% of trivial",
      (v) => v >= 0.18,
    );
    row("inbox_unkept_ratio", "  … not the page kept (limit 25–33 in turn, same 25 items), vs trivial", () => tp.inboxUnkept.ratio, "%");
    row("me_rps", "GET /users/me", () => tp.me.reqPerSec, "req/s");
    row(
      "me_ratio",
      "  … vs trivial",
      () => tp.me.ratio,
      "%",
      "≥ 50% of trivial",
      (v) => v >= 0.5,
    );
    row("counts_rps", `GET /notifications/inbox/counts (${settings.bigInbox.toLocaleString("en-US")} items)`, () => tp.countsBig.reqPerSec, "req/s");
    row("counts_ratio", "  … vs trivial", () => tp.countsBig.ratio, "%");
    const watchOk = lat.watch?.missed === 0;
    row(
      "watch_p50",
      "watch: custom notification → frame, p50",
      () => lat.watch.p50,
      "ms",
      "≤ 4 ms",
      (v) => v <= 4 && watchOk,
    );
    row(
      "watch_p99",
      "watch: custom notification → frame, p99",
      () => lat.watch.p99,
      "ms",
      "≤ 12 ms",
      (v) => v <= 12 && watchOk,
    );
    row("watch_post_p50", "  (POST /notifications/custom answered, p50)", () => lat.watch.post.p50, "ms");
    const resumed = `reconnect with after_seq → ${settings.resumeMissed} missed frames`;
    row("resume_first_p50", `resume: ${resumed}, first frame, p50`, () => lat.resume.firstFrame.p50, "ms");
    // The target is the first replayed frame's (docs/benchmarks.md, "Targets"); a resume that loses or reorders an
    // event misses it whatever its time.
    const resumeOk = lat.resume?.incomplete === 0 && lat.resume?.outOfOrder === 0;
    row(
      "resume_first_p95",
      "  … first frame, p95",
      () => lat.resume.firstFrame.p95,
      "ms",
      "≤ 15 ms",
      (v) => v <= 15 && resumeOk,
    );
    row("resume_all_p50", `  … all ${settings.resumeMissed} frames, p50`, () => lat.resume.allFrames.p50, "ms");
    row("resume_all_p95", `  … all ${settings.resumeMissed} frames, p95`, () => lat.resume.allFrames.p95, "ms");
    row("trivial_p50", "trivial Worker request, p50 (sequential)", () => lat.basics.trivial.p50, "ms");
    row("auth_only_p50", "authentication alone (dispatch-methods), p50", () => lat.basics.authOnly.p50, "ms");
    row("probe_d1_p50", "probe: one D1 point read, p50", () => lat.basics.probeD1.p50, "ms");
    row("probe_do_p50", "probe: one inbox-object RPC, p50", () => lat.basics.probeDo.p50, "ms");
    row("list_100_p50", `inbox list p50, ${settings.smallInbox} notifications`, () => lat.list.at100.p50, "ms");
    row("list_big_p50", `inbox list p50, ${settings.bigInbox.toLocaleString("en-US")} notifications`, () => lat.list.atBig.p50, "ms");
    row(
      "list_ratio",
      `  … ratio ${settings.bigInbox.toLocaleString("en-US")} / ${settings.smallInbox}`,
      () => lat.list.atBig.p50 / lat.list.at100.p50,
      "x",
    );
    row("list_big_unread_p50", "  … big, read_status=unread, p50", () => lat.list.unread.p50, "ms");
    row(
      "list_big_templates_none_p50",
      "  … big, templates filter matching nothing, p50",
      () => lat.list.templatesNone.p50,
      "ms",
      "≤ 1 ms",
      (v) => v <= 1,
    );
    row(
      "list_big_targets_none_p50",
      "  … big, targets filter matching nothing, p50",
      () => lat.list.targetsNone.p50,
      "ms",
      "≤ 1 ms",
      (v) => v <= 1,
    );
    row(
      "counts_big_p50",
      `inbox counts p50, ${settings.bigInbox.toLocaleString("en-US")} notifications`,
      () => lat.counts.big.p50,
      "ms",
      "≤ 1 ms",
      (v) => v <= 1,
    );
    row("counts_big_p95", "  … p95", () => lat.counts.big.p95, "ms");
    row("counts_small_p50", `  … p50 at ${settings.smallInbox} notifications`, () => lat.counts.small.p50, "ms");
    row(
      "authcheck_p50",
      "POST /authcheck, 100 checks (40 name a resource), p50",
      () => lat.authcheck.withLookups.p50,
      "ms",
      "≤ 2.5 ms",
      (v) => v <= 2.5,
    );
    row("authcheck_no_lookup_p50", "  … same checks without resource_id, p50", () => lat.authcheck.withoutLookups.p50, "ms");
    auditRows(row, lat.audit);
    row(
      "login_p50",
      "POST /users/login (argon2id 19 MiB, t=2), p50",
      () => lat.login.known.p50,
      "ms",
      "≤ 40 ms",
      (v) => v <= 40,
    );
    row("login_unknown_p50", "  … unknown e-mail (dummy hash), p50", () => lat.login.unknownEmail.p50, "ms");
    for (const [id, label] of [
      ["a3", "A3 login, wrong password"],
      ["a4", "A4 change-password, wrong code"],
      ["a5", "A5 passcode request"],
      ["a5next", "A5, then GET /users/first (the follow-up timed)"],
    ]) {
      const r = () => lat.enumeration[id];
      row(
        `enumeration_${id}_z`,
        `${label}: existing vs unknown e-mail, Mann–Whitney z`,
        () => Math.round(r().z * 100) / 100,
        "",
        "|z| < 1.96",
        (v) => Math.abs(v) < 1.96,
      );
      row(`enumeration_${id}_known_p50`, "  … existing account, p50", () => r().known.p50, "ms");
      row(`enumeration_${id}_unknown_p50`, "  … unknown e-mail, p50", () => r().unknown.p50, "ms");
    }
    const sf = () => lat.secondFactor;
    row(
      "mfa_totp_p50",
      "POST /users/login/mfa with an app's code, p50",
      () => sf().mfaTotp.p50,
      "ms",
      "≤ A3's p50 + 5 ms",
      (v) => v <= lat.login.known.p50 + 5,
    );
    row("mfa_password_step_p50", "  … its password step (200 mfa_required), p50", () => sf().mfaPasswordStep.p50, "ms");
    row(
      "passkey_signin_p50",
      "POST /users/login/passkey (passwordless, ES256), p50",
      () => sf().passkeySignIn.p50,
      "ms",
      "≤ 15 ms",
      (v) => v <= 15,
    );
    row("passkey_options_p50", "  … its options, p50", () => sf().passkeyOptions.p50, "ms");
    row(
      "stepup_code_p50",
      "POST /users/me/step-up with an app's code, p50",
      () => sf().stepUpCode.p50,
      "ms",
      "≤ 5 ms",
      (v) => v <= 5,
    );
    row(
      "enumeration_a3factor_z",
      "A3 login, wrong password: account with a factor vs unknown e-mail, Mann–Whitney z",
      () => Math.round(sf().a3Factor.z * 100) / 100,
      "",
      "|z| < 1.96",
      (v) => Math.abs(v) < 1.96,
    );
    row("enumeration_a3factor_known_p50", "  … account with a factor, p50", () => sf().a3Factor.known.p50, "ms");
    row("enumeration_a3factor_unknown_p50", "  … unknown e-mail, p50", () => sf().a3Factor.unknown.p50, "ms");
    row(
      "notice_frame_p95",
      "sign-in from a new browser → New sign-in frame on an open watch, p95",
      () => lat.notices.notice.p95,
      "ms",
      "≤ 2,000 ms",
      (v) => v <= 2_000,
    );
    row("notice_frame_p50", "  … p50", () => lat.notices.notice.p50, "ms");
    row(
      "not_me_close_p95",
      "POST /users/not-me → the close frame of the last of 3 watch sockets, p95",
      () => lat.notices.notMe.p95,
      "ms",
      "≤ 1,000 ms",
      (v) => v <= 1_000,
    );
    row("not_me_close_p50", "  … p50", () => lat.notices.notMe.p50, "ms");
    const gzipKiB = env.size.gzipKiB ?? env.gz.gzipKiB;
    row(
      "bundle_gzip",
      `bundle, gzip (${env.size.gzipKiB === undefined ? "own gzip of the modules" : "wrangler's report"})`,
      () => gzipKiB,
      "KiB",
      "≤ 450 KiB",
      (v) => v <= 450,
    );
    row(
      "dashboard_gzip",
      "dashboard first load (page, script, style), gzip",
      () => env.ui.dashboard / 1024,
      "KiB",
      `≤ ${BUDGETS.dashboard / 1024} KiB`,
      (v) => v <= BUDGETS.dashboard / 1024,
    );
    row(
      "embed_gzip",
      "embed (/embed/inbox.js), gzip",
      () => env.ui.embed / 1024,
      "KiB",
      `≤ ${BUDGETS.embed / 1024} KiB`,
      (v) => v <= BUDGETS.embed / 1024,
    );
    row("deliver_rate", "deliver RPC into one inbox (seeding, context)", () => env.realDeliveries.perSecond, "/s");
    const bc = details.broadcast;
    const bcUsers = settings.broadcastUsers.toLocaleString("en-US");
    row("deliver_distinct_rate", `deliver RPC into ${bcUsers} new inboxes, ${RPCS_IN_FLIGHT} in flight (raw rate)`, () => bc.raw.perSecond, "/s");
    row("broadcast_recipients", `broadcast to all: recipients (${bcUsers} seeded + the bench's users)`, () => bc.recipients, "count");
    row("broadcast_10k_ms", "  … 202 → GET shows completed_at", () => bc.ms, "ms");
    row("broadcast_server_ms", "  … completed_at − created_at (server side)", () => bc.serverMs, "ms");
    row("broadcast_rate", "  … deliveries/s (recipients / time to completed_at)", () => bc.perSecond, "/s");
    row(
      "broadcast_vs_deliver",
      "  … vs the raw deliver RPC rate",
      () => bc.ratio,
      "%",
      "≥ 80% of raw deliver",
      (v) => v >= 0.8,
    );
    row(
      "broadcast_delivered",
      "  … GET: delivered (failed must be 0)",
      () => bc.final.delivered,
      "count",
      "= recipients, 0 failed",
      (v) => v === bc.recipients && bc.final.failed === 0,
    );
    row(
      "broadcast_exact_copies",
      "  … recipients whose inbox holds exactly 1 copy",
      () => bc.copies.exactlyOne,
      "count",
      "all; none 0 or > 1",
      (v) => v === bc.recipients && bc.copies.checked === bc.recipients && bc.copies.zero === 0 && bc.copies.more === 0 && bc.copies.errors === 0,
    );
    printTable(rows);

    notes.push(
      `Rate limits (every [[ratelimits]] binding of wrangler.toml) were raised to ${BENCH_RATE_LIMIT} per period in the bench's miniflare options only.`,
      "Enumeration timing: each pair alternates an existing account and an unknown e-mail (which goes first alternates too); Mann–Whitney U, two-sided, normal approximation with tie correction (scripts/bench/stats.mjs). |z| < 1.96 means no difference at p = 0.05.",
      process.env.BENCH_WITH_ASSETS === "1"
        ? "BENCH_WITH_ASSETS=1: miniflare's local Static Assets router ran in front of Herald's Worker for every request."
        : "Static Assets ([assets]) were left out of the bench's miniflare options: locally they put an asset router Worker in front of Herald's on the same thread (BENCH_WITH_ASSETS=1 measures it); no measured route is an asset. Herald's ASSETS binding, for the password policy's common-password list, was workerd's disk service over dist/public.",
      "Vars come from wrangler.toml only (a local .dev.vars is ignored); SECRET_KEY is generated for the run. The every-minute cron trigger is not registered, so it cannot fire mid-measurement.",
      "POST /notifications/custom also enqueues an e-mail copy (NOTIFICATIONS_METHOD=smtp, no EMAIL_SMARTHOST): it is recorded as a permanent failure at enqueue, as it would be in this configuration, so no queue work runs beside the watch.",
      `Throughput: autocannon, ${settings.connections} connections, ${settings.durationS} s per measurement after a 1 s warm-up, from the Node process that hosts miniflare, on the same machine as workerd. Latency: one keep-alive connection, sequential requests, timed in microseconds.`,
    );
    if (details.envIdentity) {
      const { newEnv, sameEnv } = details.envIdentity;
      notes.push(
        `The runtime handed ${newEnv === 1 ? "the same env object to every request" : `${newEnv} distinct env objects to ${newEnv + sameEnv} requests`} (checked in the helper Worker): per-isolate caches keyed on env hold.`,
      );
    }
    if (bc) {
      const c = bc.copies;
      notes.push(
        `Broadcast: ${bc.seeded.inserted.toLocaleString("en-US")} users inserted straight into D1 (${bc.seeded.statements} INSERT … SELECT … FROM json_each statements, no password hashing). Raw rate: the helper Worker made one deliver RPC into each of ${bc.raw.stored.toLocaleString("en-US")} new inbox objects (fresh ids, not the recipients), ${RPCS_IN_FLIGHT} in flight, 1,000 per request, ${bc.raw.before.stored.toLocaleString("en-US")} before the broadcast (${Math.round(bc.raw.before.perSecond)}/s) and ${bc.raw.after.stored.toLocaleString("en-US")} after it (${Math.round(bc.raw.after.perSecond)}/s), ${(bc.raw.ms / 1000).toFixed(2)} s in all. Then POST /notifications/broadcasts {"audience":{"all":true}} as the owner (202 in ${bc.post.ms.toFixed(1)} ms, ${bc.recipients.toLocaleString("en-US")} recipients), timed from the 202 until GET /notifications/broadcasts/{id} showed completed_at, polled every ${bc.pollMs} ms (${bc.polls} polls); GET then said delivered ${bc.final.delivered}, failed ${bc.final.failed}, pending ${bc.final.pending}.`,
        `Broadcast copies: ${c.checked.toLocaleString("en-US")} recipients (read from D1 by the helper: active, not deleted, not system, created by the broadcast's created_at) asked through counts(): ${c.exactlyOne.toLocaleString("en-US")} hold exactly 1 item of the Broadcast template, ${c.zero} hold none, ${c.more} more than 1${c.errors ? `, ${c.errors} RPCs failed (${c.lastError})` : ""}${c.zero || c.more ? ` (e.g. ${[...c.zeroSample, ...c.moreSample].join(", ")})` : ""}.`,
      );
    }
    if (diagnostics.withoutQueueConsumer)
      notes.push("DIAGNOSTIC RUN: the queue consumer was not registered (BENCH_WITHOUT_QUEUE_CONSUMER=1); e-mail copies stayed queued.");
    if (diagnostics.tmpdir) notes.push(`DIAGNOSTIC RUN: state lived under BENCH_TMPDIR=${diagnostics.tmpdir}.`);
    for (const n of notes) console.log(`note: ${n}`);

    const file = path.join(root, "bench", "results.json");
    writeResults(file, {
      date: new Date().toISOString(),
      // At the end the bench's own load is in the figure: workerd and autocannon keep both cores busy.
      machine: { ...machine, load_average_at_end: loadAverage() },
      code: env.code,
      settings,
      diagnostics,
      bundle: { wrangler: env.size, own_gzip_of_modules: env.gz },
      results: rows.map(({ id, label, value: v, unit, target, pass }) => ({
        id,
        label: label.trim(),
        value: v ?? null,
        unit,
        target: target?.text ?? null,
        pass: target ? pass : null,
      })),
      details,
      notes,
    });
    const missed = rows.filter((r) => r.target && !r.pass).length;
    const { commit, uncommitted_changes: changes, bundle_sha256: bundle } = env.code;
    log(
      `measured commit ${commit}${changes.length > 0 ? ` plus ${changes.length} uncommitted change(s) under src/ and config` : ""}, bundle ${bundle}`,
    );
    log(`wrote ${path.relative(root, file)}; ${missed} target(s) missed`);
  } finally {
    await cleanup();
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(`[bench] the harness could not run: ${error?.stack ?? error}`);
    process.exit(1);
  },
);
