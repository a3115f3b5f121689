// The Web Push broadcast figure (docs/benchmarks.md, "Web Push broadcasts"): N users seeded straight into D1, one
// Herald with its real queue consumers, an SMTP sink and a push-service stand-in in this process. A broadcast whose
// copies go by e-mail to the sink, then one whose copies go by push to the stand-in (one subscription per user), each
// timed from its 202 until the last copy arrived, and each copy checked to have arrived exactly once. The target: a
// push broadcast at ≥ 50% of the e-mail broadcast's rate in the same run.
//
//   node scripts/bench/push-broadcast.mjs                          (10,000 users)
//   BENCH_PUSH_BROADCAST_USERS=1000 node scripts/bench/push-broadcast.mjs
//   BENCH_PUSH_BROADCAST_ROUNDS=1 …  one e-mail and one push broadcast, not e-mail, push, push, e-mail (2 rounds)
//   BENCH_PUSH_BROADCAST_MIXED=1 …   then one broadcast with both copies of everyone at once (e-mail and push)
import { createECDH, generateKeyPairSync, randomBytes, randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { createRequire } from "node:module";
import { loadavg, tmpdir } from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { SMTPServer } from "smtp-server";
import { applyMigrations, build, generateSecretKey, root, runWhenMain, start } from "./harness.mjs";
import { cpuNs, workerdPids } from "./push.mjs";
import { codeInfo, printTable } from "./report.mjs";

/** The Broadcast template (drizzle/0006_broadcasts.sql): the message log's rows of every broadcast carry it. */
const BROADCAST_TEMPLATE_ID = "e9b4efe4-cf44-4038-8d36-187f0011cb5f";
const USER_PREFIX = "pushb-";
/** Rows per INSERT … SELECT … FROM json_each(?) statement. */
const PER_STATEMENT = 2500;
/**
 * workerd closes the inbox objects a request reached a few seconds after it ends (docs/benchmarks.md, "Broadcasts"):
 * each broadcast starts once the previous one's are closed, and the exactly-once counts are read after this long
 * too, so a late duplicate has had time to arrive.
 */
const SETTLE_MS = 6000;
/**
 * Connections each peer's kernel queues before it accepts them. The queue consumer opens about 1,000 at once (10 queue
 * messages of 100 copies, docs/broadcasts.md, "The fan-out"); Node's default of 511 would let the kernel hold back
 * the rest, and a push service or a mail server does not. Linux caps it at net.core.somaxconn (4096 here).
 */
const LISTEN_BACKLOG = 4096;
/** Copies still on their way: the message log's statuses that are not final. */
const UNFINISHED = ["pending", "leased", "temporary_failure"];

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(", ");
const count = (n) => n.toLocaleString("en-US");
/** Milliseconds as seconds to one decimal, for the table (report.mjs prints a unit it does not know as "<value> <unit>"). */
const seconds = (ms) => (ms / 1000).toFixed(1);

/**
 * Counts arrivals by key (an e-mail's recipient, a push's endpoint path) for one phase at a time: `expect(keys)`
 * starts a phase and answers a promise of the instant (performance.now()) the last expected key first arrived. It
 * also keeps each arrival's instant, and the most connections (SMTP) or requests (HTTP) open at once.
 */
function arrivals() {
  let expected = new Set();
  let seen = new Map();
  let covered = 0;
  let times = [];
  let open = 0;
  let mostOpen = 0;
  let resolveDone = () => {};
  return {
    expect(keys) {
      expected = new Set(keys);
      seen = new Map();
      covered = 0;
      times = [];
      mostOpen = open;
      const done = new Promise((resolve) => {
        resolveDone = resolve;
      });
      if (expected.size === 0) resolveDone(performance.now());
      return done;
    },
    opened() {
      mostOpen = Math.max(mostOpen, ++open);
    },
    closed() {
      open--;
    },
    record(key) {
      times.push(performance.now());
      const n = (seen.get(key) ?? 0) + 1;
      seen.set(key, n);
      if (n === 1 && expected.has(key) && ++covered === expected.size) resolveDone(performance.now());
    },
    /** Every key seen this phase: how many were expected and came once, never came, came more than once, or were not expected. */
    tally() {
      let once = 0;
      let duplicates = 0;
      let strays = 0;
      for (const [key, n] of seen) {
        if (!expected.has(key)) strays += n;
        else if (n === 1) once++;
        else duplicates += n - 1;
      }
      return { expected: expected.size, once, missing: expected.size - covered, duplicates, strays, received: times.length, mostOpen, times };
    },
    progress: () => ({ covered, of: expected.size }),
  };
}

/**
 * The SMTP sink: accepts every message on 127.0.0.1 in plain text (`EMAIL_TLS=none`), without AUTH, and counts each
 * message once per recipient at the end of its DATA.
 */
async function smtpSink() {
  const counter = arrivals();
  const server = new SMTPServer({
    disabledCommands: ["AUTH", "STARTTLS"],
    hideSTARTTLS: true,
    authOptional: true,
    disableReverseLookup: true,
    logger: false,
    onConnect(_session, callback) {
      counter.opened();
      callback();
    },
    onClose() {
      counter.closed();
    },
    onData(stream, session, callback) {
      stream.on("data", () => {});
      stream.on("end", () => {
        for (const rcpt of session.envelope.rcptTo) counter.record(rcpt.address.toLowerCase());
        callback();
      });
    },
  });
  server.on("error", (error) => console.error(`[bench push-broadcast] SMTP sink: ${error.message}`));
  await new Promise((resolve) => server.listen(0, "127.0.0.1", LISTEN_BACKLOG, resolve));
  return { ...counter, port: server.server.address().port, close: () => new Promise((resolve) => server.close(resolve)) };
}

/**
 * The push-service stand-in: answers 201 to a push that carries what RFC 8030, 8291 and 8292 ask of it
 * (`Content-Encoding: aes128gcm`, a `TTL`, `Authorization: vapid t=<JWT>, k=<the deployment's public key>` whose
 * `aud` is this origin and whose `exp` is ahead, a body at least one aes128gcm header and tag long) and counts it by
 * endpoint path; anything else gets 400 and is counted as refused. It does not verify signatures or decrypt, so its
 * own CPU stays small beside workerd's; the first push is decrypted, as a check that the copies are real.
 */
async function pushStandIn({ vapidPublicKey, browser }) {
  const counter = arrivals();
  const refused = { n: 0, sample: [] };
  let first;
  const server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (chunk) => chunks.push(chunk));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const problem = pushProblem(req, body, origin, vapidPublicKey);
      if (problem) {
        refused.n++;
        if (refused.sample.length < 5) refused.sample.push(problem);
        res.writeHead(400, { "Content-Type": "text/plain" }).end(problem);
        return;
      }
      counter.record(req.url);
      first ??= body;
      res.writeHead(201, { Location: `${origin}/message/${randomUUID()}` }).end();
    });
  });
  // Idle connections stay open until workerd closes them. With Node's 5 s keep-alive timeout, three of four
  // broadcasts with pushes to 10,000 had dozens fail with "could not connect" or "timed out" and sent again, most
  // likely the stand-in closing connections as workerd used them again (docs/benchmarks.md, "Web Push broadcasts").
  server.keepAliveTimeout = 0;
  server.on("connection", (socket) => {
    counter.opened();
    socket.on("close", () => counter.closed());
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", LISTEN_BACKLOG, resolve));
  const origin = `http://127.0.0.1:${server.address().port}`;
  return {
    ...counter,
    origin,
    refused,
    /** The first push received, decrypted with the browser's private key (http_ece, not Herald's code). */
    firstPayload() {
      if (!first) return undefined;
      const { decrypt } = createRequire(path.join(root, "package.json"))("http_ece");
      return JSON.parse(decrypt(first, { version: "aes128gcm", privateKey: browser.ecdh, authSecret: browser.auth }).toString("utf8"));
    },
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/** Why the stand-in refuses a push, or undefined. */
function pushProblem(req, body, origin, vapidPublicKey) {
  if (req.method !== "POST") return `method ${req.method}`;
  if (!/^\/push\/[\w-]+$/.test(req.url ?? "")) return `path ${req.url}`;
  if (req.headers["content-encoding"] !== "aes128gcm") return `Content-Encoding ${req.headers["content-encoding"]}`;
  if (!/^\d+$/.test(req.headers.ttl ?? "")) return `TTL ${req.headers.ttl}`;
  const vapid = /^vapid t=([\w-]+)\.([\w-]+)\.([\w-]+),\s*k=([\w-]+)$/.exec(req.headers.authorization ?? "");
  if (!vapid) return `Authorization ${req.headers.authorization}`;
  if (vapid[4] !== vapidPublicKey) return "k is not the deployment's VAPID public key";
  let claims;
  try {
    claims = JSON.parse(Buffer.from(vapid[2], "base64url").toString("utf8"));
  } catch {
    return "the VAPID token's claims are not JSON";
  }
  if (claims.aud !== origin) return `aud ${claims.aud}`;
  if (!(claims.exp > Date.now() / 1000)) return `exp ${claims.exp}`;
  // RFC 8188: salt (16), record size (4), key id length (1), the sender's public key (65); RFC 8291: then the
  // ciphertext of at least the delimiter, and the 16-byte tag.
  if (body.length < 86 + 17) return `body of ${body.length} bytes`;
  return undefined;
}

/** A deployment's VAPID key pair (docs/push.md, "Keys"), made for this run. */
function vapidKeys() {
  const jwk = generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ format: "jwk" });
  const publicKey = Buffer.concat([Buffer.of(4), Buffer.from(jwk.x, "base64url"), Buffer.from(jwk.y, "base64url")]).toString("base64url");
  return { publicKey, privateKey: jwk.d };
}

/** One browser's keys, which every subscription shares: its P-256 key pair and 16-byte auth secret. */
function browserKeys() {
  const ecdh = createECDH("prime256v1");
  ecdh.generateKeys();
  return { ecdh, p256dh: ecdh.getPublicKey().toString("base64url"), auth: randomBytes(16).toString("base64url") };
}

async function api(base, method, route, { token, body } = {}) {
  const res = await fetch(`${base}/api/v2${route}`, {
    method,
    headers: { ...(token ? { "Service-Session-Token": token } : {}), ...(body ? { "Content-Type": "application/json" } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, text };
}

async function helperPost(helperUrl, route, body) {
  const res = await fetch(new URL(route, helperUrl), { method: "POST", body: JSON.stringify(body) });
  const text = await res.text();
  if (!res.ok) throw new Error(`helper ${route} → ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

/**
 * Which of every user's broadcast copies go out: the channel switches a user sets with
 * `PUT /users/{user}/notifications/channels` (docs/channels.md, "Channel preferences"), `email` and `push` (all their
 * browsers), written straight into D1 for everyone. A copy switched off is written to the message log as `inhibited`
 * and never queued.
 */
async function setChannels(db, { email, push }) {
  const off = [...(email ? [] : ["email"]), ...(push ? [] : ["push"])];
  await db.batch([
    db.prepare("DELETE FROM channel_preferences WHERE template_id = ?").bind(BROADCAST_TEMPLATE_ID),
    ...off.map((channel) =>
      db
        .prepare("INSERT INTO channel_preferences (user_id, template_id, channel, enabled, updated_at) SELECT id, ?, ?, 0, ? FROM users")
        .bind(BROADCAST_TEMPLATE_ID, channel, new Date().toISOString()),
    ),
  ]);
}

/**
 * One push subscription for each seeded user, straight into D1 (the `push_subscriptions` row
 * `POST /users/{user}/push-subscriptions` writes): the stand-in's endpoint `/push/<subscription id>`, the shared
 * browser's keys.
 */
async function subscribeSeeded(db, { userIds, origin, browser }) {
  const createdAt = new Date().toISOString();
  const statements = [];
  for (let i = 0; i < userIds.length; i += PER_STATEMENT) {
    const rows = userIds.slice(i, i + PER_STATEMENT).map((userId) => [randomUUID(), userId]);
    statements.push(
      db
        .prepare(
          "INSERT INTO push_subscriptions (id, user_id, name, endpoint, p256dh, auth, created_at) " +
            "SELECT value ->> '$[0]', value ->> '$[1]', 'Bench browser', ? || '/push/' || (value ->> '$[0]'), ?, ?, ? FROM json_each(?)",
        )
        .bind(origin, browser.p256dh, browser.auth, createdAt, JSON.stringify(rows)),
    );
  }
  const results = await db.batch(statements);
  return results.reduce((sum, r) => sum + (r.meta?.changes ?? 0), 0);
}

/** The message log's rows of the broadcasts made since `since`, by method and status. */
async function messageLog(db, since) {
  const { results } = await db
    .prepare("SELECT method, status, count(*) AS n FROM notification_messages WHERE template_id = ? AND created_at >= ? GROUP BY method, status")
    .bind(BROADCAST_TEMPLATE_ID, since)
    .all();
  const byMethod = {};
  for (const { method, status, n } of results) byMethod[method] = { ...byMethod[method], [status]: n };
  const { results: retried } = await db
    .prepare(
      "SELECT method, count(*) AS n, max(attempts) AS most FROM notification_messages WHERE template_id = ? AND created_at >= ? AND attempts > 1 GROUP BY method",
    )
    .bind(BROADCAST_TEMPLATE_ID, since)
    .all();
  for (const r of retried) byMethod[r.method] = { ...byMethod[r.method], [`tried more than once (up to ${r.most} times)`]: r.n };
  return byMethod;
}

/** When the copies of a phase arrived: the first, and how many had by every 5 s after the 202. */
function timeline(times, accepted) {
  if (times.length === 0) return "none arrived";
  const offsets = times.map((t) => (t - accepted) / 1000);
  const steps = [];
  for (let at = 5; at < offsets.at(-1) + 5; at += 5) steps.push(`${at} s ${count(offsets.filter((o) => o <= at).length)}`);
  return `first after ${offsets[0].toFixed(2)} s; by ${steps.join(", ")}`;
}

/**
 * The reasons of copies waiting for a retry right now (a row's reason is cleared once it is sent), read through
 * `GET /notifications/messages` (docs/api.md): each reason with the most rows seen waiting with it at once, kept in
 * `retries` (method: reason → count). Over HTTP, not through miniflare's D1 proxy, whose calls can hold up this
 * process's event loop, and with it the sink and the stand-in, while workerd is busy.
 */
async function noteRetries(base, token, retries) {
  const r = await api(base, "GET", `/notifications/messages?status=temporary_failure&template_id=${BROADCAST_TEMPLATE_ID}&limit=100`, { token });
  if (r.status !== 200) throw new Error(`GET /notifications/messages → ${r.status}`);
  const now = new Map();
  for (const m of r.body.messages) now.set(`${m.method}: ${m.status_reason}`, (now.get(`${m.method}: ${m.status_reason}`) ?? 0) + 1);
  for (const [key, n] of now) retries.set(key, Math.max(retries.get(key) ?? 0, n));
}

const describeRetries = (retries) =>
  retries.size === 0
    ? "none seen waiting for a retry"
    : [...retries].map(([reason, n]) => `${reason} (up to ${count(n)} at once${n === 100 ? ", or more: one page of 100 read" : ""})`).join("; ");

/** The inbox fan-out's `delivered` every 5 s after the 202, from the GETs' samples ([seconds, delivered]). */
function fanoutTimeline(samples) {
  const steps = [];
  for (let at = 5; at < (samples.at(-1)?.[0] ?? 0) + 5; at += 5) {
    steps.push(`${at} s ${count(samples.filter(([t]) => t <= at).at(-1)?.[1] ?? 0)}`);
  }
  return steps.join(", ");
}

const tallyText = (t) =>
  `${count(t.once)} of ${count(t.expected)} exactly once, ${count(t.missing)} missing, ${count(t.duplicates)} duplicates, ${count(t.strays)} not expected`;

const describeLog = (byMethod) =>
  Object.entries(byMethod)
    .map(
      ([method, statuses]) =>
        `${method}: ${Object.entries(statuses)
          .map(([s, n]) => `${count(n)} ${s}`)
          .join(", ")}`,
    )
    .join("; ") || "no rows";

/**
 * One broadcast to everyone, timed from its 202 until every expected copy arrived at its sinks (`waits`: name → the
 * promise of an `arrivals().expect`). Then, before the counts are read: the broadcast's `completed_at`, every row of
 * its message log final, and SETTLE_MS more.
 */
async function timedBroadcast({ base, token, db, workerd, title, waits, progress, timeoutS, log }) {
  const loadBefore = load();
  const cpuBefore = { workerd: cpuNs(workerd), node: process.cpuUsage() };
  const res = await fetch(`${base}/api/v2/notifications/broadcasts`, {
    method: "POST",
    headers: { "Service-Session-Token": token, "Content-Type": "application/json" },
    body: JSON.stringify({ audience: { all: true }, content: { title, message: "hello" } }),
  });
  const accepted = performance.now();
  const acceptedWall = Date.now();
  const text = await res.text();
  if (res.status !== 202) throw new Error(`POST /notifications/broadcasts → ${res.status} ${text.slice(0, 300)}`);
  const { id, recipients } = JSON.parse(text);
  log(`  202 for ${count(recipients)} recipients (load average ${loadBefore})`);

  const deadline = accepted + timeoutS * 1000;
  // The inbox fan-out's progress beside the arrivals: GET every second until completed_at (docs/broadcasts.md, "Progress").
  const fanout = [];
  const retries = new Map();
  let polling = true;
  // The reasons of copies waiting for a retry are read until the last copy arrives, after completed_at too. Both are
  // context: a failed read is skipped, not an error of the run.
  const poller = (async () => {
    let progressRead;
    while (polling) {
      try {
        if (!progressRead?.completed_at) {
          progressRead = (await api(base, "GET", `/notifications/broadcasts/${id}`, { token })).body;
          fanout.push([(performance.now() - accepted) / 1000, progressRead?.delivered ?? 0]);
        }
        await noteRetries(base, token, retries);
      } catch (error) {
        log(`  (a progress read failed: ${error?.message ?? error})`);
      }
      await sleep(1000);
    }
  })();
  const ticker = setInterval(
    () => log(`  … ${((performance.now() - accepted) / 1000).toFixed(0)} s: ${count(fanout.at(-1)?.[1] ?? 0)} inbox items, ${progress()}`),
    10_000,
  );
  const at = {};
  try {
    await Promise.all(
      Object.entries(waits).map(async ([name, wait]) => {
        const timeout = sleep(Math.max(0, deadline - performance.now())).then(() => undefined);
        at[name] = await Promise.race([wait, timeout]);
        if (at[name] === undefined) throw new Error(`not every ${name} copy arrived within ${timeoutS} s: ${progress()}`);
      }),
    );
  } finally {
    clearInterval(ticker);
    polling = false;
  }
  // CPU from the POST until the last copy arrived: workerd's (Herald, D1, the inbox objects, the queues) and this
  // process's (the sink or the stand-in, and the progress reads), in seconds.
  const nodeCpu = process.cpuUsage(cpuBefore.node);
  const cpu = { workerd: (cpuNs(workerd) - cpuBefore.workerd) / 1e9, node: (nodeCpu.user + nodeCpu.system) / 1e6 };
  const loadAfter = load();
  await poller;

  let status;
  while (performance.now() < deadline) {
    const r = await api(base, "GET", `/notifications/broadcasts/${id}`, { token });
    status = r.body;
    if (status?.completed_at) break;
    await sleep(200);
  }
  if (!status?.completed_at) throw new Error(`broadcast ${id} not completed within ${timeoutS} s: ${JSON.stringify(status)}`);
  let rows;
  while (performance.now() < deadline) {
    rows = await messageLog(db, status.created_at);
    if (!Object.values(rows).some((statuses) => UNFINISHED.some((s) => statuses[s]))) break;
    await sleep(500);
  }
  await sleep(SETTLE_MS);
  rows = await messageLog(db, status.created_at);
  const ms = Object.fromEntries(Object.entries(at).map(([name, t]) => [name, t - accepted]));
  // The server's clock and this process's are the machine's: how long after completed_at (every inbox item stored)
  // the last copy arrived.
  const completedAt = accepted + (Date.parse(status.completed_at) - acceptedWall);
  const afterFanout = Object.fromEntries(Object.entries(at).map(([name, t]) => [name, t - completedAt]));
  return {
    id,
    recipients,
    accepted,
    fanout,
    retries,
    ms,
    afterFanout,
    cpu,
    serverMs: Date.parse(status.completed_at) - Date.parse(status.created_at),
    status,
    rows,
    loadBefore,
    loadAfter,
  };
}

async function main() {
  const users = Number(process.env.BENCH_PUSH_BROADCAST_USERS ?? 10_000);
  const rounds = Number(process.env.BENCH_PUSH_BROADCAST_ROUNDS ?? 2);
  const timeoutS = Number(process.env.BENCH_PUSH_BROADCAST_TIMEOUT_S ?? 900);
  const mixed = process.env.BENCH_PUSH_BROADCAST_MIXED === "1";
  const log = (msg) => console.log(`[bench push-broadcast] ${msg}`);
  const tmp = mkdtempSync(path.join(tmpdir(), "herald-bench-push-broadcast-"));
  const vapid = vapidKeys();
  const browser = browserKeys();
  const sink = await smtpSink();
  const pushService = await pushStandIn({ vapidPublicKey: vapid.publicKey, browser });
  let running;
  try {
    log(`load average at the start: ${load()}`);
    log("building");
    await build(path.join(tmp, "dist"));
    const code = codeInfo(root, path.join(tmp, "dist", "index.js"));
    log(
      `commit ${code.commit}${code.uncommitted_changes.length ? ` with uncommitted changes (${code.uncommitted_changes.join(", ")})` : ""}, bundle ${code.bundle_sha256}`,
    );
    running = await start({
      outdir: path.join(tmp, "dist"),
      stateDir: path.join(tmp, "state"),
      host: "127.0.0.1",
      secretKey: generateSecretKey(),
      vars: {
        EMAIL_SMARTHOST: `127.0.0.1:${sink.port}`,
        EMAIL_TLS: "none",
        EMAIL_FROM: "Herald <herald@bench.example.com>",
        VAPID_PUBLIC_KEY: vapid.publicKey,
        VAPID_PRIVATE_KEY: vapid.privateKey,
        OUTBOUND_ALLOWED_ORIGINS: pushService.origin,
        // Several broadcasts by one owner within minutes: the default of 5 a minute is not what is measured.
        BROADCASTS_PER_MINUTE: "100",
      },
    });
    await applyMigrations(running.mf);
    const db = await running.mf.getD1Database("DB", "herald");
    const base = running.urls.herald;

    const owner = { email: "ada@bench.example.com", username: "ada", password: "Plum-Kettle-Orbit-97-Lantern" };
    const first = await api(base, "POST", "/users/first", { body: owner });
    if (first.status !== 201) throw new Error(`POST /users/first → ${first.status} ${first.text}`);
    const login = await api(base, "POST", "/users/login", { body: { email: owner.email, password: owner.password } });
    const token = login.body?.session_token;
    if (!token) throw new Error(`POST /users/login → ${login.status} ${login.text}`);

    const seedStarted = performance.now();
    const seeded = await helperPost(running.urls.helper, "/seed-users", {
      count: users,
      prefix: USER_PREFIX,
      createdAt: new Date(Date.now() - 3_600_000).toISOString(),
    });
    if (seeded.inserted !== users) throw new Error(`seeding users inserted ${seeded.inserted} of ${users}`);
    const { results: audienceRows } = await db.prepare("SELECT id, email FROM users WHERE status = 'active' AND deleted = 0 AND is_system = 0").all();
    const emails = audienceRows.map((u) => u.email.toLowerCase());
    const seededIds = audienceRows.filter((u) => u.email.startsWith(USER_PREFIX)).map((u) => u.id);

    // One push subscription per user: the owner's through the API (the allow-list and the key checks a browser's
    // passes), the others straight into D1 with the same keys.
    const ownerSubscription = await api(base, "POST", `/users/${first.body.user_id}/push-subscriptions`, {
      token,
      body: { endpoint: `${pushService.origin}/push/${randomUUID()}`, keys: { p256dh: browser.p256dh, auth: browser.auth }, name: "Bench browser" },
    });
    if (ownerSubscription.status !== 201) throw new Error(`POST push-subscriptions → ${ownerSubscription.status} ${ownerSubscription.text}`);
    const inserted = await subscribeSeeded(db, { userIds: seededIds, origin: pushService.origin, browser });
    const { results: endpointRows } = await db.prepare("SELECT endpoint FROM push_subscriptions").all();
    const endpoints = endpointRows.map((r) => new URL(r.endpoint).pathname);
    log(
      `${count(users)} users inserted into D1 (plus the owner) and ${count(endpoints.length)} push subscriptions (the owner's through the API, ${count(inserted)} into D1) in ${((performance.now() - seedStarted) / 1000).toFixed(1)} s`,
    );

    const [workerd, ...otherWorkerds] = workerdPids();
    if (!workerd || otherWorkerds.length > 0)
      throw new Error(`expected one workerd child, found ${[workerd, ...otherWorkerds].join(", ") || "none"}`);
    const broadcast = (title, waits, progress) => timedBroadcast({ base, token, db, workerd, title, waits, progress, timeoutS, log });

    // Every recipient's inbox object made first, by a broadcast with both copies switched off: the e-mail and the
    // push broadcasts then both write into objects that exist, and neither pays for creating them.
    log("warm-up: a broadcast with e-mail and push switched off, so that every recipient's inbox object exists");
    await setChannels(db, { email: false, push: false });
    const warm = await broadcast("Bench warm-up", {}, () => "");
    log(`warm-up: completed_at ${(warm.serverMs / 1000).toFixed(1)} s after created_at; message log: ${describeLog(warm.rows)}`);

    // The e-mail and the push broadcasts in turn, e-mail first in odd rounds and push first in even ones, so that a
    // change in the machine's load moves both alike. Each has the other channel switched off; the sink of the
    // channel switched off expects nothing, so whatever reaches it counts as not expected.
    const order = [];
    for (let r = 0; r < rounds; r++) order.push(...(r % 2 === 0 ? ["email", "push"] : ["push", "email"]));
    const phases = [];
    for (const [i, kind] of order.entries()) {
      const byEmail = kind === "email";
      const [own, other] = byEmail ? [sink, pushService] : [pushService, sink];
      const keys = byEmail ? emails : endpoints;
      const name = byEmail ? "e-mail" : "push";
      await setChannels(db, { email: byEmail, push: !byEmail });
      const wait = own.expect(keys);
      other.expect([]);
      log(
        `${name} ${i + 1} of ${order.length}: a broadcast to everyone, each copy by ${byEmail ? "e-mail to the SMTP sink" : "push to the stand-in"}`,
      );
      const result = await broadcast(
        `Bench ${name} broadcast ${i + 1}`,
        { [kind]: wait },
        () => `${count(own.progress().covered)} of ${count(keys.length)}`,
      );
      const phase = {
        ...result,
        kind,
        name,
        copies: keys.length,
        ms: result.ms[kind],
        afterFanout: result.afterFanout[kind],
        tally: own.tally(),
        other: other.tally(),
      };
      phases.push(phase);
      log(
        `${name} ${i + 1}: ${count(phase.copies)} copies in ${(phase.ms / 1000).toFixed(2)} s, ${Math.round(phase.copies / (phase.ms / 1000))}/s; ${tallyText(phase.tally)}; ${phase.other.received} copies by the channel switched off; inbox fan-out completed_at after ${(phase.serverMs / 1000).toFixed(1)} s, the last copy ${(phase.afterFanout / 1000).toFixed(1)} s later; load average ${phase.loadBefore} → ${phase.loadAfter}`,
      );
      log(`${name} ${i + 1}: arrivals ${timeline(phase.tally.times, phase.accepted)}; at most ${phase.tally.mostOpen} connections open at once`);
      log(
        `${name} ${i + 1}: CPU from the POST to the last copy: workerd ${phase.cpu.workerd.toFixed(1)} s (${((phase.cpu.workerd * 1000) / phase.copies).toFixed(2)} ms a recipient), this process (the ${byEmail ? "sink" : "stand-in"}) ${phase.cpu.node.toFixed(1)} s`,
      );
      log(`${name} ${i + 1}: inbox items delivered by ${fanoutTimeline(phase.fanout)}`);
      log(`${name} ${i + 1}: message log: ${describeLog(phase.rows)}; retries: ${describeRetries(phase.retries)}`);
    }
    const payload = pushService.firstPayload();
    log(`the first push, decrypted by the stand-in: ${JSON.stringify(payload)}`);

    // Optional: both copies of everyone on the same queue at once.
    let both;
    if (mixed) {
      await setChannels(db, { email: true, push: true });
      log("mixed: a broadcast to everyone with both copies, e-mail and push");
      both = await broadcast(
        "Bench mixed broadcast",
        { push: pushService.expect(endpoints), email: sink.expect(emails) },
        () => `${count(pushService.progress().covered)} pushes, ${count(sink.progress().covered)} e-mails of ${count(endpoints.length)} each`,
      );
      both.pushTally = pushService.tally();
      both.emailTally = sink.tally();
      both.exact = [both.pushTally, both.emailTally].every((t) => t.once === t.expected && t.missing === 0 && t.duplicates === 0 && t.strays === 0);
      log(
        `mixed: every push after ${(both.ms.push / 1000).toFixed(2)} s (${tallyText(both.pushTally)}), every e-mail after ${(both.ms.email / 1000).toFixed(2)} s (${tallyText(both.emailTally)}); load average ${both.loadBefore} → ${both.loadAfter}`,
      );
      log(`mixed: pushes ${timeline(both.pushTally.times, both.accepted)}; e-mails ${timeline(both.emailTally.times, both.accepted)}`);
      log(`mixed: inbox items delivered by ${fanoutTimeline(both.fanout)}`);
      log(`mixed: message log: ${describeLog(both.rows)}; retries: ${describeRetries(both.retries)}`);
    }

    const total = (kind) => {
      const of = phases.filter((p) => p.kind === kind);
      const copies = of.reduce((sum, p) => sum + p.copies, 0);
      const ms = of.reduce((sum, p) => sum + p.ms, 0);
      const sum = (field) => of.reduce((n, p) => n + p.tally[field], 0);
      const exact = { expected: sum("expected"), once: sum("once"), missing: sum("missing"), duplicates: sum("duplicates"), strays: sum("strays") };
      exact.ok = exact.once === exact.expected && exact.missing === 0 && exact.duplicates === 0 && exact.strays === 0;
      exact.ok &&= of.every((p) => p.other.received === 0);
      return { copies, ms, rate: copies / (ms / 1000), exact, n: of.length };
    };
    const email = total("email");
    const push = total("push");
    push.exact.ok &&= pushService.refused.n === 0 && typeof payload?.title === "string" && payload.title.startsWith("Bench push broadcast");
    const ratio = push.rate / email.rate;
    const rows = [{ label: "recipients of each broadcast (seeded users + the owner)", value: phases[0]?.recipients, unit: "count" }];
    for (const [i, p] of phases.entries()) {
      rows.push({
        label: `${p.name} broadcast ${i + 1}: 202 → every ${p.kind === "email" ? "e-mail" : "push"} arrived`,
        value: seconds(p.ms),
        unit: "s",
      });
    }
    rows.push(
      { label: `e-mail: copies/s over ${email.n} broadcast(s)`, value: email.rate, unit: "/s" },
      { label: `push: copies/s over ${push.n} broadcast(s)`, value: push.rate, unit: "/s" },
      { label: "push rate ÷ e-mail rate", value: ratio, unit: "%", target: { text: "≥ 50%" }, pass: ratio >= 0.5 },
      {
        label: "e-mails that arrived exactly once",
        value: email.exact.once,
        unit: "count",
        target: { text: `${count(email.exact.expected)}, none missing or extra` },
        pass: email.exact.ok,
      },
      {
        label: "pushes that arrived exactly once",
        value: push.exact.once,
        unit: "count",
        target: { text: `${count(push.exact.expected)}, none missing or extra` },
        pass: push.exact.ok,
      },
    );
    if (both) {
      rows.push(
        { label: "mixed broadcast: 202 → every push arrived", value: seconds(both.ms.push), unit: "s" },
        { label: "  … 202 → every e-mail arrived", value: seconds(both.ms.email), unit: "s" },
        {
          label: "  … pushes and e-mails that arrived exactly once",
          value: both.pushTally.once + both.emailTally.once,
          unit: "count",
          target: { text: `${count(both.pushTally.expected + both.emailTally.expected)}, none missing or extra` },
          pass: both.exact,
        },
      );
    }
    printTable(rows);
    log(
      `e-mail: ${count(email.exact.missing)} missing, ${count(email.exact.duplicates)} duplicates, ${count(email.exact.strays)} not expected; push: ${count(push.exact.missing)} missing, ${count(push.exact.duplicates)} duplicates, ${count(push.exact.strays)} not expected, ${pushService.refused.n} refused by the stand-in${pushService.refused.n ? ` (${pushService.refused.sample.join("; ")})` : ""}`,
    );
    log(`load average at the end: ${load()}`);
    if (!email.exact.ok || !push.exact.ok || (both && !both.exact))
      throw new Error("a copy was missing, duplicated, refused or not what was sent: see above");
  } finally {
    await running?.mf.dispose();
    await Promise.all([sink.close(), pushService.close()]);
    rmSync(tmp, { recursive: true, force: true });
  }
}

runWhenMain(import.meta.url, "push-broadcast", main);
