// `node scripts/probe-validation.mjs`: how big and how slow Herald's answers to floods of unknown keys are
// (docs/api.md, "Unknown keys and long validation lists"). Starts Herald as `npm start` does, on a free
// port with a fresh database in a temporary directory, makes the first user, signs in, then sends each probe once and
// prints its status, the answer's size in bytes and the time to the end of the answer. Stops Herald at the end.
//
// HERALD=<url> and TOKEN=<session token> probe an already running Herald instead (e.g. `npm start`, with the token
// of the README's walkthrough).
import { randomBytes } from "node:crypto";
import { freePort, startLocalHerald } from "./local-herald.mjs";

/** A JSON object of `n` keys that no schema knows. */
const unknownKeysBody = (n) => `{${Array.from({ length: n }, (_, i) => `"k${i}":0`).join(",")}}`;
/** A query string of `n` empty parameters that no schema knows. */
const unknownKeysQuery = (n) => Array.from({ length: n }, (_, i) => `k${i}=`).join("&");

const PROBES = [
  { label: "POST /notifications/inbox/bulk, 6,000 unknown keys", method: "POST", path: "/notifications/inbox/bulk", body: unknownKeysBody(6_000) },
  { label: "POST /notifications/inbox/bulk, 60,000 unknown keys", method: "POST", path: "/notifications/inbox/bulk", body: unknownKeysBody(60_000) },
  { label: "GET /notifications/inbox, 2,400 unknown parameters", method: "GET", path: `/notifications/inbox?${unknownKeysQuery(2_400)}` },
];

async function signIn(base) {
  const user = { email: "probe@herald.test", username: "probe", password: "Plum-Kettle-Orbit-97" };
  const first = await fetch(`${base}/api/v2/users/first`, { method: "POST", body: JSON.stringify(user) });
  if (first.status !== 201) throw new Error(`POST /users/first: ${first.status} ${await first.text()}`);
  const login = await fetch(`${base}/api/v2/users/login`, { method: "POST", body: JSON.stringify({ email: user.email, password: user.password }) });
  if (login.status !== 201) throw new Error(`POST /users/login: ${login.status} ${await login.text()}`);
  return (await login.json()).session_token;
}

let herald;
let base = process.env.HERALD;
let token = process.env.TOKEN;
try {
  if (!base || !token) {
    const port = await freePort();
    herald = await startLocalHerald({
      port,
      label: "herald-probe",
      settings: { SECRET_KEY: randomBytes(48).toString("base64url"), ACCESS_URL: `http://localhost:${port}`, EMAIL_SMARTHOST: "" },
    });
    base = herald.url;
    token = await signIn(base);
  }
  console.log("probe | request bytes | status | answer bytes | seconds");
  console.log("---|---|---|---|---");
  for (const probe of PROBES) {
    const url = `${base}/api/v2${probe.path}`;
    const started = performance.now();
    const res = await fetch(url, { method: probe.method, headers: { "Service-Session-Token": token }, body: probe.body });
    const bytes = (await res.arrayBuffer()).byteLength;
    const seconds = (performance.now() - started) / 1000;
    const sent = probe.body ? Buffer.byteLength(probe.body) : Buffer.byteLength(new URL(url).search);
    console.log(`${probe.label} | ${sent} | ${res.status} | ${bytes} | ${seconds.toFixed(2)}`);
  }
} finally {
  await herald?.stop();
}
