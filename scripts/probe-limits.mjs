// `node scripts/probe-limits.mjs`: what one user can make Herald hold, and what Herald displays, asked the way an
// outside probe would (docs/security.md, "What one user can make Herald hold"; docs/api.md, "Displayed text").
// Starts Herald as `npm start` does, on a free port with a fresh database in a temporary directory, makes the first
// user, then prints one line per probe. Stops Herald at the end.
import { randomBytes } from "node:crypto";
import { freePort, startLocalHerald } from "./local-herald.mjs";

const WATCHES = Number(process.env.PROBE_WATCHES ?? 3_000);
const BROADCASTS = 40;
const CUSTOM = 100;
// Small inbox limits, so that retention shows within the probe (docs/inbox.md, "Retention"): a cap the probe's own
// notifications pass, and a retention short enough to wait out but longer than the flood and its sweep take.
const MAX_ITEMS = 50;
const RETENTION_S = 20;

const port = await freePort();
const herald = await startLocalHerald({
  port,
  label: "herald-probe",
  settings: {
    SECRET_KEY: randomBytes(48).toString("base64url"),
    ACCESS_URL: `http://localhost:${port}`,
    EMAIL_SMARTHOST: "",
    INBOX_MAX_ITEMS: String(MAX_ITEMS),
    INBOX_RETENTION: `${RETENTION_S}s`,
  },
});
const base = `${herald.url}/api/v2`;

async function api(method, path, token, body) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { "Service-Session-Token": token, "Content-Type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

/** Polls until `done(value)` holds for what `read()` returns, or the deadline passes; returns the last value and when. */
async function until(read, done, deadlineMs) {
  const started = performance.now();
  for (;;) {
    const value = await read();
    const seconds = (performance.now() - started) / 1000;
    if (done(value) || seconds * 1000 > deadlineMs) return { value, seconds };
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Opens one watch with the token as a subprotocol; resolves when it opened or failed, and records how it ends. */
function openWatch(token, outcome) {
  return new Promise((resolve) => {
    const ws = new WebSocket(`${base.replace(/^http/, "ws")}/notifications/inbox/watch`, ["herald.v1", `herald.token.${token}`]);
    const record = { ws, frames: 0, closed: undefined };
    ws.addEventListener("open", () => resolve(record), { once: true });
    ws.addEventListener("message", () => {
      record.frames += 1;
    });
    ws.addEventListener("close", (event) => {
      record.closed = event.code;
      outcome.push(event.code);
      resolve(record);
    });
  });
}

try {
  const owner = { email: "probe@herald.test", username: "probe", password: "Plum-Kettle-Orbit-97" };
  await fetch(`${base}/users/first`, { method: "POST", body: JSON.stringify(owner) }).then((r) => r.arrayBuffer());
  const login = await fetch(`${base}/users/login`, { method: "POST", body: JSON.stringify(owner) });
  const session = (await login.json()).session_token;
  const me = (await api("GET", "/users/me", session)).body;
  const reader = (await api("POST", "/users/me/keys/tokens", session, { token_name: "reader", scopes: ["inbox_notification:read"] })).body.key;

  console.log("probe | result");
  console.log("---|---");

  // Watches: opened in groups of 100, then one notification; who is still open receives it.
  const closes = [];
  const watches = [];
  const started = performance.now();
  for (let i = 0; i < WATCHES; i += 100) {
    watches.push(...(await Promise.all(Array.from({ length: Math.min(100, WATCHES - i) }, () => openWatch(reader, closes)))));
  }
  const openedIn = (performance.now() - started) / 1000;
  // Close frames of thousands of sockets take a while to cross the local proxy: wait until they stop arriving.
  for (let last = -1; last !== closes.length; ) {
    last = closes.length;
    await new Promise((r) => setTimeout(r, 2_000));
  }
  await api("POST", "/notifications/custom", session, { content: { title: "probe frame" } });
  await new Promise((r) => setTimeout(r, 2_000));
  const open = watches.filter((w) => w.closed === undefined);
  const codes = new Map();
  for (const code of closes) codes.set(code, (codes.get(code) ?? 0) + 1);
  const byCode = [...codes].map(([code, n]) => `${n} closed with ${code}`).join(", ");
  // What the server holds is what the next frame reaches; a close frame's arrival at this client is reported too
  // (Node's WebSocket reports a close only once the connection is gone).
  const reached = watches.filter((w) => w.frames === 1).length;
  console.log(
    `${WATCHES} watches with one inbox_notification:read token | ${watches.length} accepted (opened in ${openedIn.toFixed(1)} s); ` +
      `the next frame reached ${reached}; close frames seen here: ${byCode || "none"}`,
  );
  for (const w of open) w.ws.close();

  // Broadcasts: as many as the probe sent, one after another, as the owner to the owner.
  const statuses = [];
  let retryAfter;
  const t0 = performance.now();
  for (let i = 0; i < BROADCASTS; i++) {
    const r = await api("POST", "/notifications/broadcasts", session, { audience: { user_ids: [me.id] }, content: { title: `probe ${i}` } });
    statuses.push(r.status);
    retryAfter ??= r.headers.get("Retry-After") ?? undefined;
  }
  const count = (s) => statuses.filter((x) => x === s).length;
  console.log(
    `${BROADCASTS} broadcasts in a row | ${count(202)} × 202, ${count(429)} × 429 (first Retry-After ${retryAfter} s) in ${((performance.now() - t0) / 1000).toFixed(2)} s`,
  );

  // Displayed text.
  const bidi = await api("POST", "/notifications/broadcasts", session, {
    audience: { user_ids: [me.id] },
    content: { title: "Invoice \u202Egnp.exe\u202C paid" },
  });
  console.log(
    `broadcast titled "Invoice \\u202Egnp.exe\\u202C paid" | ${bidi.status} ${bidi.body?.message ?? ""} ${bidi.body?.validations?.[0]?.detail ?? ""}`,
  );
  const named = await api("POST", "/users", session, {
    email: "line@herald.test",
    username: "line",
    password: "Plum-Kettle-Orbit-97",
    name: "line1\r\nBcc: x@evil.test\u0000nul",
  });
  console.log(`POST /users with name "line1\\r\\nBcc: x@evil.test\\u0000nul" | ${named.status} ${named.body?.validations?.[0]?.detail ?? ""}`);

  // Plaintext keeps the author's text.
  await api("POST", "/notifications/custom", session, { content: { title: "<script>x</script>T2", message: "<b></b><i></i>" } });
  const listed = (await api("GET", "/notifications/inbox?format=plaintext&limit=1", session)).body.notifications[0];
  console.log(
    `title "<script>x</script>T2", message "<b></b><i></i>", listed as plaintext | title ${JSON.stringify(listed.title)}, content ${JSON.stringify(listed.content)}`,
  );

  // Custom notifications: as many as the probe sends, one after another, as the owner to themself.
  const customStatuses = [];
  let customRetryAfter;
  const c0 = performance.now();
  for (let i = 0; i < CUSTOM; i++) {
    const r = await api("POST", "/notifications/custom", session, { content: { title: `flood ${i}` } });
    customStatuses.push(r.status);
    customRetryAfter ??= r.headers.get("Retry-After") ?? undefined;
  }
  const customCount = (s) => customStatuses.filter((x) => x === s).length;
  console.log(
    `${CUSTOM} custom notifications in a row | ${customCount(204)} × 204, ${customCount(429)} × 429 (first Retry-After ${customRetryAfter} s) in ${((performance.now() - c0) / 1000).toFixed(2)} s`,
  );

  // The cap: everything the probe sent the owner, read at once, is past it; the oldest read items give way.
  const counts = (token) => api("GET", "/notifications/inbox/counts", token).then((r) => r.body);
  const landed = await until(
    () => counts(session),
    (c) => c.total >= 2 + customCount(204) + count(202),
    10_000,
  );
  await api("PUT", "/notifications/inbox/mark-all-as-read", session);
  const capped = await until(
    () => counts(session),
    (c) => c.total <= MAX_ITEMS,
    10_000,
  );
  console.log(
    `INBOX_MAX_ITEMS=${MAX_ITEMS}: the owner's ${landed.value.total} items, then mark-all-as-read | total ${capped.value.total} after ${capped.seconds.toFixed(2)} s, unread ${capped.value.unread}, seq ${landed.value.seq} → ${capped.value.seq}`,
  );

  // Retention by age: a member's 4 notifications, 3 of them read once older than the retention, which lets them go.
  // (Read earlier, they would go at the first sweep after they aged, which for items a moment apart can be a day
  // after the first of them: sweeps for age run at most daily; docs/inbox.md, "Retention".)
  const member = { email: "member@herald.test", username: "member", password: "Plum-Kettle-Orbit-97" };
  await api("POST", "/users", session, member);
  const memberSession = (await (await fetch(`${base}/users/login`, { method: "POST", body: JSON.stringify(member) })).json()).session_token;
  for (let i = 0; i < 4; i++) await api("POST", "/notifications/custom", memberSession, { content: { title: `member ${i}` } });
  await until(
    () => counts(memberSession),
    (c) => c.total === 4,
    10_000,
  );
  const [, ...older] = (await api("GET", "/notifications/inbox", memberSession)).body.notifications.map((n) => n.id);
  await new Promise((r) => setTimeout(r, (RETENTION_S + 1) * 1000));
  await api("POST", "/notifications/inbox/bulk", memberSession, { action: "read", ids: older });
  const aged = await until(
    () => counts(memberSession),
    (c) => c.total === 1,
    10_000,
  );
  console.log(
    `INBOX_RETENTION=${RETENTION_S}s: a member's 4 notifications, ${RETENTION_S + 1} s later the 3 oldest read | total ${aged.value.total} (unread ${aged.value.unread}) ${aged.seconds.toFixed(2)} s after`,
  );
} finally {
  await herald.stop();
}
