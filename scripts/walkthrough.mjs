// `npm run docs:walkthrough`: every request/response example in README.md and docs/ is produced here, against Herald
// started exactly as `npm start` starts it, so an example cannot go stale silently.
//
//   node scripts/walkthrough.mjs           rewrites each block between its markers
//   node scripts/walkthrough.mjs --check   writes nothing; exits 1 (with a diff) when a block differs
//
// Blocks are delimited by `<!-- walkthrough:start -->` … `<!-- walkthrough:end -->` (README.md) and
// `<!-- walkthrough:<name>:start -->` … `<!-- walkthrough:<name>:end -->` (docs/*.md). Ids, tokens and times change on
// every run, so they are replaced by stable placeholders (`<ada-id>`, `<session-token>`, 2026-01-01T00:00:00.000Z).
//
// Plain Node ESM with no dependencies; it runs on Node 20. Herald itself needs Node ≥ 22.12 (wrangler): the server is
// started with the Node that npm scripts use, the project's pinned one in node_modules/.bin, when this one is older.
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { STATUS_CODES } from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { freePort, startLocalHerald } from "./local-herald.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const check = process.argv.includes("--check");
const unknownArgs = process.argv.slice(2).filter((arg) => arg !== "--check");
if (unknownArgs.length > 0) {
  console.error(`usage: node scripts/walkthrough.mjs [--check]   (unknown: ${unknownArgs.join(" ")})`);
  process.exit(2);
}

/** The file each block lives in. README.md's block is the five-minute walkthrough; the others illustrate docs/api.md. */
const BLOCKS = {
  walkthrough: "README.md",
  "first-user": "docs/api.md",
  "member-authcheck": "docs/api.md",
  "message-log": "docs/api.md",
  errors: "docs/api.md",
  "inbox-states": "docs/inbox.md",
};

// ---------------------------------------------------------------------------------------------------------------
// Starting Herald as `npm start` does

/** Stops the server when this script is interrupted, also while it is still starting. */
let stopOnSignal = async () => {};
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.once(signal, () => void stopOnSignal().finally(() => process.exit(signal === "SIGINT" ? 130 : 143)));
}

/**
 * `npm start` (scripts/dev.mjs) on a free port with a fresh local database in a temporary directory. Its settings
 * come from an env file of its own (with --env-file, wrangler ignores the developer's .dev.vars), so the examples
 * show a fresh clone's defaults: wrangler.toml's [vars], a SECRET_KEY, and ACCESS_URL as on port 8787. No mail
 * server, not even npm start's mail catcher (EMAIL_SMARTHOST empty): the message log's example shows what a
 * deployment without one records (docs/deployment.md, "The mail catcher").
 */
async function startHerald() {
  const port = await freePort();
  return startLocalHerald({
    port,
    label: "herald-walkthrough",
    settings: { SECRET_KEY: randomBytes(48).toString("base64url"), ACCESS_URL: "http://localhost:8787", EMAIL_SMARTHOST: "" },
    onSpawn: (stop) => {
      stopOnSignal = stop;
    },
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Stable placeholders

const TIMESTAMP = "2026-01-01T00:00:00.000Z";
const HTTP_DATE = "Thu, 01 Jan 2026 00:00:00 GMT";
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;
const TOKEN = /\b[0-9A-Za-z]{10}-[0-9A-Za-z]{22}\b/g;

/** Ids that are the same in every deployment (the seeded template catalogue): shown as they are. */
const NO_SUCH_USER = "00000000-0000-4000-8000-000000000000";
const STABLE_IDS = new Set([
  NO_SUCH_USER,
  ...readdirSync(path.join(root, "drizzle"))
    .filter((f) => f.endsWith(".sql"))
    .flatMap((f) => readFileSync(path.join(root, "drizzle", f), "utf8").match(UUID) ?? [])
    .map((id) => id.toLowerCase()),
]);

/** Each run-specific value, once known, and the placeholder that stands for it. */
const placeholders = new Map();
let unnamed = 0;

function name(value, placeholder) {
  if (typeof value !== "string" || value === "") throw new Error(`no value to name ${placeholder}`);
  if (!placeholders.has(value)) placeholders.set(value, placeholder);
  return value;
}

function scrub(text) {
  let out = text;
  for (const [value, placeholder] of [...placeholders].sort((a, b) => b[0].length - a[0].length)) {
    out = out.split(value).join(placeholder);
  }
  out = out
    .replace(/\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z\b/g, TIMESTAMP)
    .replace(/\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT\b/g, HTTP_DATE);
  // Anything random that was not named above still gets a stable name, in order of appearance.
  const fallback = (value) => {
    if (!placeholders.has(value)) placeholders.set(value, `<id-${++unnamed}>`);
    return placeholders.get(value);
  };
  return out.replace(UUID, (id) => (STABLE_IDS.has(id.toLowerCase()) ? id : fallback(id))).replace(TOKEN, fallback);
}

// ---------------------------------------------------------------------------------------------------------------
// Rendering requests (as curl) and responses (status line, chosen headers, JSON)

/**
 * JSON that keeps what fits on one line on one line (`{"a": 1, "b": [2, 3]}`) and otherwise puts one entry per line.
 * `prefix` is how many characters precede the value on its first line (e.g. its key).
 */
function formatJson(value, indent = "", width = 110, prefix = 0) {
  const flat = (v) => {
    if (Array.isArray(v)) return `[${v.map(flat).join(", ")}]`;
    if (v && typeof v === "object")
      return `{${Object.entries(v)
        .map(([k, x]) => `${JSON.stringify(k)}: ${flat(x)}`)
        .join(", ")}}`;
    return JSON.stringify(v);
  };
  const one = flat(value);
  if (!value || typeof value !== "object" || indent.length + prefix + one.length <= width) return one;
  const inner = `${indent}  `;
  if (Array.isArray(value)) {
    if (value.length === 0) return "[]";
    return `[\n${value.map((v) => inner + formatJson(v, inner, width)).join(",\n")}\n${indent}]`;
  }
  const entries = Object.entries(value);
  if (entries.length === 0) return "{}";
  const lines = entries.map(([k, v]) => {
    const key = `${JSON.stringify(k)}: `;
    return inner + key + formatJson(v, inner, width, key.length + 1);
  });
  return `{\n${lines.join(",\n")}\n${indent}}`;
}

const AUTH_HEADERS = {
  session: (variable) => `-H "Service-Session-Token: $${variable}"`,
  bearer: (variable) => `-H "Authorization: Bearer $${variable}"`,
};

function curlLine({ method, display, body, raw, auth }) {
  const parts = ["curl -s"];
  // curl -d already means POST; other methods are spelled out.
  if (method !== "GET" && !(method === "POST" && (body !== undefined || raw !== undefined))) parts.push(`-X ${method}`);
  parts.push(`"$HERALD/api/v2${display}"`);
  if (auth) parts.push(AUTH_HEADERS[auth.kind](auth.variable));
  let line = parts.join(" ");
  if (body !== undefined || raw !== undefined) {
    const json = raw ?? formatJson(body, "", 120);
    line += json.includes("\n") || line.length + json.length > 110 ? ` \\\n  -d '${json}'` : ` -d '${json}'`;
  }
  return line;
}

// ---------------------------------------------------------------------------------------------------------------
// The steps

const blocks = Object.fromEntries(Object.keys(BLOCKS).map((b) => [b, []]));
let baseUrl = "";
/** Shell variables the steps use: name → actual value (the curl line shows `$NAME`, the request sends the value). */
const vars = {};

/**
 * One request: sent, recorded in `block` as a curl line and its response, and returned. `path` may use `$NAME`
 * variables. `until` repeats the request (for work Herald does after answering) until it holds, up to 15 s.
 */
async function step(block, { text, method = "GET", path: display, body, raw, as, bearer, headers: shown = [], until, after }) {
  const actualPath = display.replace(/\$([A-Z_]+)/g, (_, v) => {
    if (!(v in vars)) throw new Error(`unknown variable $${v}`);
    return vars[v];
  });
  const credential = as ?? bearer;
  const auth = credential ? { kind: bearer ? "bearer" : "session", variable: credential } : undefined;
  const headers = {};
  if (auth) {
    if (auth.kind === "bearer") headers.authorization = `Bearer ${vars[credential]}`;
    else headers["service-session-token"] = vars[credential];
  }
  // Like curl -d: no JSON content type (Herald reads the body as JSON whatever the Content-Type).
  const payload = raw ?? (body === undefined ? undefined : JSON.stringify(body));
  const send = () => fetch(`${baseUrl}/api/v2${actualPath}`, { method, headers, ...(payload === undefined ? {} : { body: payload }) });

  let res;
  let answer = "";
  let json;
  const deadline = Date.now() + 15_000;
  for (;;) {
    res = await send();
    answer = await res.text();
    json = answer !== "" && res.headers.get("content-type")?.includes("json") ? JSON.parse(answer) : undefined;
    if (!until || until(json, res) || Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  if (until && !until(json, res)) throw new Error(`${method} ${display}: the expected answer never came:\n${answer}`);

  const response = [`HTTP/1.1 ${res.status} ${STATUS_CODES[res.status] ?? ""}`.trimEnd()];
  for (const h of shown) {
    const value = res.headers.get(h);
    if (value !== null) response.push(`${h}: ${value}`);
  }
  if (json !== undefined) response.push("", formatJson(json));
  else if (answer !== "") response.push("", answer);

  const parts = [];
  if (text) parts.push(text.trim());
  parts.push(`\`\`\`sh\n${curlLine({ method, display, body, raw, auth })}\n\`\`\``);
  parts.push(`\`\`\`http\n${response.join("\n")}\n\`\`\``);
  blocks[block].push({ parts, after });
  return { status: res.status, json };
}

const ada = { email: "ada@example.com", username: "ada", password: "Plum-Kettle-Orbit-97" };
const grace = { email: "grace@example.com", username: "grace", password: "Velvet-Harbor-Lantern-31" };

async function walkthrough() {
  // Before anyone exists.
  await step("first-user", {
    text: "`GET /api/v2/users/first` tells whether the first user exists yet: 404 on a fresh database,",
    path: "/users/first",
  });

  // ---- README: the five-minute walkthrough
  const first = await step("walkthrough", {
    text: `**1. Create the first user**, who becomes the owner. This works once. The password must pass the policy
(8–256 characters, not a common password, not containing your username or e-mail, strong enough):`,
    method: "POST",
    path: "/users/first",
    body: ada,
  });
  vars.ADA_ID = name(first.json.user_id, "<ada-id>");
  name(first.json.organization_id, "<organization-id>");

  const login = await step("walkthrough", {
    text: `**2. Sign in.** The answer carries the session token, and sets the same token as the browser's session cookie:`,
    method: "POST",
    path: "/users/login",
    body: { email: ada.email, password: ada.password },
    headers: ["set-cookie"],
    after: "Keep the token for the next requests: `export TOKEN=…` (the `session_token` above).",
  });
  vars.TOKEN = name(login.json.session_token, "<session-token>");

  await step("walkthrough", {
    text: "**3. Who am I.** Every authenticated request sends the token in the `Service-Session-Token` header:",
    path: "/users/me",
    as: "TOKEN",
  });

  await step("walkthrough", {
    text: `**4. Send yourself a notification.** It lands in your inbox, and goes by the default external method,
\`smtp\`, to \`npm start\`'s mail catcher ([deployment.md](docs/deployment.md#the-mail-catcher)):`,
    method: "POST",
    path: "/notifications/custom",
    body: { content: { title: "Deploy **done**", message: "See [the log](https://ci.example.com/42)." } },
    as: "TOKEN",
  });

  const inbox = await step("walkthrough", {
    text: "**5. List the inbox**, newest first, with the number of unread notifications:",
    path: "/notifications/inbox",
    as: "TOKEN",
    until: (json) => json?.notifications?.length === 1,
    after: "Keep the notification's id: `export NOTIFICATION_ID=…`.",
  });
  vars.NOTIFICATION_ID = name(inbox.json.notifications[0].id, "<notification-id>");

  await step("walkthrough", {
    text: "**6. Mark it read:**",
    method: "PUT",
    path: "/notifications/inbox/$NOTIFICATION_ID/read-status",
    body: { is_read: true },
    as: "TOKEN",
  });

  const token = await step("walkthrough", {
    text: `**7. Create an API token** for a script, narrowed by scopes to reading users and the inbox (without
\`scopes\`, a token can do everything you can):`,
    method: "POST",
    path: "/users/me/keys/tokens",
    body: { token_name: "inbox-reader", scopes: ["user:read", "inbox_notification:read"] },
    as: "TOKEN",
    after: "Keep it: `export API_TOKEN=…` (the `key` above). It is shown only once.",
  });
  vars.API_TOKEN = name(token.json.key, "<api-token>");

  await step("walkthrough", {
    text: `**8. Ask what the token may do**, sending it as a bearer token this time. The check names are your own
labels. A token has its user's roles narrowed by its scopes, so the owner's token may read but not change settings;
unknown actions or types, and \`resource_id\`s that do not exist, answer \`false\` rather than an error:`,
    method: "POST",
    path: "/authcheck",
    bearer: "API_TOKEN",
    body: {
      checks: {
        read_my_profile: { action: "read", object: { resource_type: "user", owner_id: "me" } },
        read_my_inbox: { action: "read", object: { resource_type: "inbox_notification", owner_id: "me" } },
        pause_notifier: { action: "update", object: { resource_type: "deployment_config" } },
        delete_ghost_user: { action: "delete", object: { resource_type: "user", resource_id: NO_SUCH_USER } },
        made_up_action: { action: "fly", object: { resource_type: "user" } },
      },
    },
  });

  // ---- docs/api.md: bootstrapping, once done
  await step("first-user", {
    text: "and 200 once the first user exists:",
    path: "/users/first",
  });
  await step("first-user", {
    text: "Creating it a second time is refused:",
    method: "POST",
    path: "/users/first",
    body: { email: "eve@example.com", username: "eve", password: "Quartz-Meadow-Falcon-58" },
  });

  // ---- docs/api.md: the same questions from a plain member
  const member = await step("member-authcheck", {
    text: "The owner creates a member:",
    method: "POST",
    path: "/users",
    body: grace,
    as: "TOKEN",
    after: "Keep the member's id for later: `export GRACE_ID=…` (the `id` above).",
  });
  vars.GRACE_ID = name(member.json.id, "<grace-id>");
  const graceLogin = await step("member-authcheck", {
    text: "The member signs in (`export GRACE=…`, the `session_token`):",
    method: "POST",
    path: "/users/login",
    body: { email: grace.email, password: grace.password },
  });
  vars.GRACE = name(graceLogin.json.session_token, "<grace-session-token>");
  await step("member-authcheck", {
    text: `and asks what they may do. \`read_ada\` names the owner by \`resource_id\` (put the owner's \`user_id\` in place of
\`<ada-id>\`):`,
    method: "POST",
    path: "/authcheck",
    as: "GRACE",
    body: {
      checks: {
        read_my_profile: { action: "read", object: { resource_type: "user", owner_id: "me" } },
        read_ada: { action: "read", object: { resource_type: "user", resource_id: vars.ADA_ID } },
        pause_notifier: { action: "update", object: { resource_type: "deployment_config" } },
        make_own_token: { action: "create", object: { resource_type: "api_key", owner_id: "me" } },
      },
    },
  });

  // ---- docs/api.md: the message log
  await step("message-log", {
    text: "The member sends themself a notification:",
    method: "POST",
    path: "/notifications/custom",
    body: { content: { title: "Build finished", message: "All green." } },
    as: "GRACE",
  });
  const log = await step("message-log", {
    text: `The owner reads the delivery log. With no mail server configured (these examples run \`npm start\` with
\`EMAIL_SMARTHOST\` empty, so without its mail catcher), the e-mail copy was recorded as failed for good when it was
enqueued:`,
    path: "/notifications/messages?method=smtp&user_id=$GRACE_ID&limit=1",
    as: "TOKEN",
    until: (json) => json?.messages?.length === 1,
  });
  name(log.json.messages[0].id, "<message-id>");
  name(log.json.messages[0].notification_id, "<grace-notification-id>");
  await step("message-log", {
    text: "The member may not read the log:",
    path: "/notifications/messages",
    as: "GRACE",
  });

  // ---- docs/inbox.md: item states, counts and seq
  const counted = await step("inbox-states", {
    text: "The member's counts, exact and with the `seq` they are true at:",
    path: "/notifications/inbox/counts",
    as: "GRACE",
    until: (json) => json?.total >= 1,
  });
  vars.GRACE_NOTE = log.json.messages[0].notification_id;
  await step("inbox-states", {
    text: "Archiving reads the notification (it was unread) and takes the next `seq`:",
    method: "PUT",
    path: "/notifications/inbox/$GRACE_NOTE/archive-status",
    body: { is_archived: true },
    as: "GRACE",
  });
  await step("inbox-states", {
    text: "Snoozing it for an hour brings it back from the archive; it is not unread while snoozed, and wakes unread:",
    method: "PUT",
    path: "/notifications/inbox/$GRACE_NOTE/snooze",
    body: { until: new Date(Date.now() + 3_600_000).toISOString() },
    as: "GRACE",
  });
  await step("inbox-states", {
    text: `The list leaves snoozed notifications out by default; watching with \`after_seq=${counted.json.seq}\` would now replay the
two changes above, in order:`,
    path: "/notifications/inbox",
    as: "GRACE",
  });

  // ---- docs/api.md: errors
  await step("errors", {
    text: "Without a credential:",
    path: "/users/me",
  });
  await step("errors", {
    text: "With a wrong password:",
    method: "POST",
    path: "/users/login",
    body: { email: ada.email, password: "nope" },
  });
  await step("errors", {
    text: "With a body that is not JSON (whatever the `Content-Type`, the body is read as JSON):",
    method: "POST",
    path: "/users/login",
    raw: "email=ada@example.com",
  });
  await step("errors", {
    text: "With a body that does not pass validation, each problem is listed:",
    method: "POST",
    path: "/users/me/keys/tokens",
    body: { token_name: "" },
    as: "TOKEN",
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Writing (or checking) the blocks

function render(block) {
  const chunks = blocks[block].map((entry) => {
    const parts = entry.parts.map(scrub);
    if (entry.after) parts.push(entry.after.trim());
    return parts.join("\n\n");
  });
  return chunks.join("\n\n");
}

function markers(block) {
  const tag = block === "walkthrough" ? "walkthrough" : `walkthrough:${block}`;
  return { start: `<!-- ${tag}:start -->`, end: `<!-- ${tag}:end -->` };
}

function replaceBlock(content, block, body, file) {
  const { start, end } = markers(block);
  const from = content.indexOf(start);
  const to = content.indexOf(end);
  if (from < 0 || to < from || content.indexOf(start, from + 1) >= 0) {
    throw new Error(`${file}: expected exactly one ${start} … ${end} pair`);
  }
  return { current: content.slice(from + start.length, to), next: `${content.slice(0, from + start.length)}\n${body}\n${content.slice(to)}` };
}

/** A small line diff (longest common subsequence), with two lines of context around each change. */
function diff(a, b) {
  const x = a.split("\n");
  const y = b.split("\n");
  const lcs = Array.from({ length: x.length + 1 }, () => new Array(y.length + 1).fill(0));
  for (let i = x.length - 1; i >= 0; i--) {
    for (let j = y.length - 1; j >= 0; j--) lcs[i][j] = x[i] === y[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
  }
  const ops = []; // [mark, text, line number in the generated block]
  let i = 0;
  let j = 0;
  while (i < x.length || j < y.length) {
    if (i < x.length && j < y.length && x[i] === y[j]) ops.push([" ", x[i++], ++j]);
    else if (i < x.length && (j === y.length || lcs[i + 1][j] >= lcs[i][j + 1])) ops.push(["-", x[i++], j + 1]);
    else ops.push(["+", y[j++], j]);
  }
  const near = (k) => ops.slice(Math.max(0, k - 2), k + 3).some(([mark]) => mark !== " ");
  const out = [];
  let last = -2;
  ops.forEach(([mark, text, line], k) => {
    if (!near(k)) return;
    if (k !== last + 1) out.push(`@@ line ${line} of the block`);
    out.push(`${mark} ${text}`);
    last = k;
  });
  return out.join("\n");
}

async function main() {
  if (check) {
    // Fail fast on missing markers, before spending a server start.
    for (const [block, file] of Object.entries(BLOCKS)) replaceBlock(readFileSync(path.join(root, file), "utf8"), block, "", file);
  }
  const herald = await startHerald();
  try {
    baseUrl = herald.url;
    await walkthrough();
  } finally {
    await herald.stop();
  }

  const files = new Map();
  const changed = new Set();
  let stale = 0;
  for (const [block, file] of Object.entries(BLOCKS)) {
    const content = files.get(file) ?? readFileSync(path.join(root, file), "utf8");
    const { current, next } = replaceBlock(content, block, render(block), file);
    if (next !== content) {
      stale++;
      changed.add(file);
      if (check) {
        console.log(`${file}: block "${block}" differs from what \`npm run docs:walkthrough\` writes (- now, + generated):`);
        console.log(diff(current.replace(/^\n|\n$/g, ""), render(block)));
        console.log();
      }
    }
    files.set(file, next);
  }
  if (check) {
    if (stale > 0) {
      console.log(`${stale} block(s) out of date: run \`npm run docs:walkthrough\` and commit the result.`);
      process.exit(1);
    }
    console.log(`All ${Object.keys(BLOCKS).length} walkthrough blocks are up to date.`);
    return;
  }
  for (const [file, content] of files) writeFileSync(path.join(root, file), content);
  console.log(stale > 0 ? `Updated ${stale} block(s) in ${[...changed].join(", ")}.` : "Every block was already up to date.");
}

main().catch((error) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
