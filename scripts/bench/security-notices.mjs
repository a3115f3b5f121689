// Security notices in the bench (docs/benchmarks.md, "Security notices"): a sign-in from a new browser until its
// "New sign-in" frame reaches a watch socket the account holds open, and "This wasn't me" until the close frame of
// the last of the account's watch sockets has arrived. Each sample is a fresh account whose first sign-in (untimed)
// came from a client that names no browser, so the timed one, from Chrome, is a new device.
import { summarize } from "./measure.mjs";

const CHROME = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
const NOTICE_TITLE = "New sign-in to your account";
const SOCKETS = 3;

/** A watch socket (the browser way: the token as a subprotocol), with its frames and its close. */
async function openWatch(base, token) {
  const ws = new WebSocket(`${base.replace(/^http/, "ws")}/api/v2/notifications/inbox/watch`, ["herald.v1", `herald.token.${token}`]);
  const frames = [];
  const listeners = new Set();
  ws.addEventListener("message", (event) => {
    const at = performance.now();
    try {
      const frame = JSON.parse(String(event.data));
      frames.push({ at, frame });
      for (const listener of listeners) listener({ at, frame });
    } catch {
      // "pong", the keep-alive answer
    }
  });
  const closed = new Promise((resolve) => ws.addEventListener("close", (event) => resolve(event.code), { once: true }));
  /**
   * When the server's close frame arrived: the socket is CLOSING from then on. The close event, with its code, waits
   * for the TCP connection to end, which the local runtime's proxy holds open for about 10 s more.
   */
  const closing = async (timeoutMs) => {
    const deadline = performance.now() + timeoutMs;
    while (ws.readyState < WebSocket.CLOSING) {
      if (performance.now() > deadline) return undefined;
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    return performance.now();
  };
  await new Promise((resolve, reject) => {
    ws.addEventListener("open", resolve, { once: true });
    ws.addEventListener("error", () => reject(new Error("watch socket failed to open")), { once: true });
  });
  /** The first frame whose notification has this title, already received or still to come. */
  const frameTitled = (title, timeoutMs) =>
    new Promise((resolve) => {
      const seen = frames.find((f) => f.frame.notification?.title === title);
      if (seen) return resolve(seen);
      const timer = setTimeout(() => {
        listeners.delete(listener);
        resolve(undefined);
      }, timeoutMs);
      const listener = (f) => {
        if (f.frame.notification?.title !== title) return;
        clearTimeout(timer);
        listeners.delete(listener);
        resolve(f);
      };
      listeners.add(listener);
    });
  return { ws, closed, closing, frameTitled };
}

/**
 * `samples` accounts: each signs in from Chrome with a watch open (timed until the notice's frame), then opens
 * `SOCKETS` watches and confirms This wasn't me with the notice's link (timed until the last socket closed).
 */
export async function securityNoticesBench({ base, newUser, password, samples, log }) {
  log(`security notices: ${samples} accounts, each a sign-in from a new browser, then This wasn't me with ${SOCKETS} watch sockets open`);
  const noticeMs = [];
  const notMeMs = [];
  const notes = [];
  const codes = [];
  for (let i = 0; i < samples; i++) {
    const user = await newUser(`notice-${i}-${Math.random().toString(36).slice(2, 8)}`);
    const watcher = await openWatch(base, user.token);
    const sent = performance.now();
    const login = await fetch(`${base}/api/v2/users/login`, {
      method: "POST",
      headers: { "Content-Type": "application/json", "User-Agent": CHROME },
      body: JSON.stringify({ email: user.email, password }),
    });
    if (login.status !== 201) throw new Error(`sign-in from Chrome → ${login.status} ${(await login.text()).slice(0, 200)}`);
    const { session_token: session } = await login.json();
    const notice = await watcher.frameTitled(NOTICE_TITLE, 10_000);
    if (!notice) {
      notes.push(`sample ${i}: no notice frame within 10 s`);
      watcher.ws.close(1000);
      continue;
    }
    noticeMs.push(notice.at - sent);

    const url = notice.frame.notification.actions.find((a) => a.label === "This wasn't me")?.url;
    const token = decodeURIComponent(new URL(url).hash.slice(1));
    const sockets = [watcher, ...(await Promise.all(Array.from({ length: SOCKETS - 1 }, () => openWatch(base, session))))];
    const reported = performance.now();
    const res = await fetch(`${base}/api/v2/users/not-me`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ token }),
    });
    if (res.status !== 200) throw new Error(`POST /users/not-me → ${res.status} ${(await res.text()).slice(0, 200)}`);
    const closings = await Promise.all(sockets.map((socket) => socket.closing(10_000)));
    if (closings.some((at) => at === undefined)) {
      notes.push(`sample ${i}: not every socket was closed within 10 s`);
      for (const socket of sockets) socket.ws.close(1000);
      continue;
    }
    // The codes arrive with the close events, seconds later: checked once every sample is done.
    codes.push(...sockets.map((socket) => socket.closed));
    notMeMs.push(Math.max(...closings) - reported);
  }
  const wrong = (await Promise.all(codes)).filter((code) => code !== 4401);
  if (wrong.length > 0)
    notes.push(`${wrong.length} of ${codes.length} sockets closed with another code than 4401 (${[...new Set(wrong)].join(", ")})`);
  return { notice: summarize(noticeMs), notMe: summarize(notMeMs), notes };
}
