#!/usr/bin/env node
// How long e-mails wait behind one stalled SMTP connection (docs/email.md, "Two lanes"). Starts Herald as `npm start`
// does, against a relay whose first connection is accepted and never greeted (the rest go through to a real
// smtp-server), sends custom notifications at +0, +5, +60 and +120 s and a passcode at +7 s, and prints when each
// arrived. `node scripts/stall-schedule.mjs`; it takes about six minutes (the stalled one waits out the 5-minute
// greeting timeout, then is retried).
import { randomBytes } from "node:crypto";
import { createServer, Socket } from "node:net";
import { SMTPServer } from "smtp-server";
import { freePort, startLocalHerald } from "./local-herald.mjs";

const arrived = new Map();
const relay = new SMTPServer({
  authOptional: true,
  disabledCommands: ["AUTH", "STARTTLS"],
  logger: false,
  onData(stream, _session, callback) {
    let raw = "";
    stream.on("data", (chunk) => {
      raw += chunk.toString("utf8");
    });
    stream.on("end", () => {
      const subject = /^Subject: (.*)$/m.exec(raw)?.[1] ?? "?";
      if (!arrived.has(subject)) arrived.set(subject, Date.now());
      callback();
    });
  },
});
const relayPort = await freePort();
await new Promise((resolve) => relay.listen(relayPort, "127.0.0.1", resolve));

let connections = 0;
const front = createServer((socket) => {
  socket.on("error", () => {});
  if (++connections === 1) return; // accepted, never greeted
  const upstream = new Socket();
  upstream.on("error", () => socket.destroy());
  upstream.connect(relayPort, "127.0.0.1", () => {
    socket.pipe(upstream);
    upstream.pipe(socket);
  });
});
const frontPort = await freePort();
await new Promise((resolve) => front.listen(frontPort, "127.0.0.1", resolve));

const port = await freePort();
const herald = await startLocalHerald({
  port,
  label: "herald-stall",
  settings: {
    ACCESS_URL: `http://localhost:${port}`,
    SECRET_KEY: randomBytes(32).toString("hex"),
    EMAIL_SMARTHOST: `127.0.0.1:${frontPort}`,
    EMAIL_TLS: "none",
    EMAIL_HELLO: "herald.example.org",
  },
});
const api = async (method, route, body, token) =>
  fetch(`${herald.url}/api/v2${route}`, {
    method,
    headers: { "content-type": "application/json", ...(token ? { "Service-Session-Token": token } : {}) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
const owner = { email: "owner@example.net", username: "owner", password: "a quiet harbour at dawn 42" };
await api("POST", "/users/first", owner);
const { session_token: token } = await (await api("POST", "/users/login", { email: owner.email, password: owner.password })).json();

const t0 = Date.now();
const sent = new Map();
const schedule = [
  [0, "stall +0"],
  [5, "stall +5"],
  [7, "Reset your password"],
  [60, "stall +60"],
  [120, "stall +120"],
];
for (const [at, title] of schedule) {
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, t0 + at * 1000 - Date.now())));
  sent.set(title, Date.now());
  if (title === "Reset your password") await api("POST", "/users/otp/request", { email: owner.email });
  else await api("POST", "/notifications/custom", { content: { title, message: "x" } }, token);
}
const deadline = t0 + 420_000;
while (arrived.size < schedule.length && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 500));
console.log("| message | queued at | went out after |\n|---|---|---|");
for (const [at, title] of schedule) {
  const out = arrived.get(title);
  console.log(`| ${title} | +${at} s | ${out === undefined ? "not within 7 min" : `${((out - sent.get(title)) / 1000).toFixed(1)} s`} |`);
}
await herald.stop();
front.close();
relay.close();
process.exit(0);
