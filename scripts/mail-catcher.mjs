/**
 * The local mail catcher (docs/deployment.md, "Running locally"): an SMTP server on loopback that accepts every
 * message and keeps it in memory, and a small web page on loopback to read what was sent. `npm start`
 * (scripts/dev.mjs) points Herald at it when no EMAIL_SMARTHOST is set, so password-reset passcodes and e-mail
 * notifications can be read locally; the end-to-end suite uses it the same way (test/e2e/local-mail.test.ts).
 *
 * Message HTML is untrusted: it is only ever shown inside a sandboxed iframe (no scripts, an opaque origin), from a
 * response of its own whose Content-Security-Policy also sandboxes it and refuses every fetch but inline styles and
 * `data:` images. Everything else on the page is escaped. The web server answers only requests whose Host is this
 * loopback server, so a page elsewhere cannot read the messages through DNS rebinding.
 *
 * Plain Node ESM, like scripts/dev.mjs.
 */
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import PostalMime from "postal-mime";
import { SMTPServer } from "smtp-server";

/**
 * One caught message, as the JSON API returns it.
 *
 * @typedef {object} CaughtMessage
 * @property {string} id A random id, the message's path on the page (`/messages/<id>`).
 * @property {string} received_at When the catcher accepted it (ISO 8601).
 * @property {{ mail_from: string, rcpt_to: string[] }} envelope The SMTP envelope.
 * @property {string} from The From header, decoded (`Name <address>`).
 * @property {string} to The To header's addresses, decoded and joined by ", ".
 * @property {string} subject The Subject, decoded.
 * @property {string} text The text/plain part ("" when none).
 * @property {string} html The text/html part ("" when none); untrusted.
 * @property {{ name: string, value: string }[]} headers Every header, in order, unfolded.
 */

/**
 * A running catcher.
 *
 * @typedef {object} MailCatcher
 * @property {number} smtpPort The SMTP port on 127.0.0.1 (plain text, no TLS; any AUTH is accepted).
 * @property {string} url The page's address, `http://localhost:<port>`.
 * @property {() => CaughtMessage[]} messages What was caught, newest first.
 * @property {() => Promise<void>} stop Closes both servers.
 */

const HOST = "127.0.0.1";
/** Largest message accepted, in bytes: far above anything Herald sends, small enough for memory. */
const MAX_MESSAGE_BYTES = 10 * 1024 * 1024;

/** @param {import("postal-mime").Address} a */
function formatAddress(a) {
  if (a.group) return `${a.name}: ${a.group.map(formatAddress).join(", ")};`;
  return a.name ? `${a.name} <${a.address}>` : a.address;
}

/**
 * Parses one raw message into what the page and the API show.
 *
 * @param {Buffer} raw
 * @param {{ mail_from: string, rcpt_to: string[] }} envelope
 * @returns {Promise<CaughtMessage>}
 */
async function parseMessage(raw, envelope) {
  const email = await PostalMime.parse(raw);
  return {
    id: randomUUID(),
    received_at: new Date().toISOString(),
    envelope,
    from: email.from ? formatAddress(email.from) : "",
    to: (email.to ?? []).map(formatAddress).join(", "),
    subject: email.subject ?? "",
    text: email.text ?? "",
    html: email.html ?? "",
    headers: email.headers.map((h) => ({ name: h.originalKey, value: h.value })),
  };
}

/** @param {string} text */
function escapeHtml(text) {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const STYLE = `:root { color-scheme: light dark; font-family: system-ui, sans-serif; }
body { margin: 0 auto; max-width: 70rem; padding: 1rem; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; vertical-align: top; padding: 0.35rem 0.5rem; border-bottom: 1px solid color-mix(in srgb, currentColor 25%, transparent); overflow-wrap: anywhere; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; padding: 0.75rem; border: 1px solid color-mix(in srgb, currentColor 25%, transparent); }
iframe { width: 100%; height: 32rem; border: 1px solid color-mix(in srgb, currentColor 25%, transparent); background: #fff; }
a { color: LinkText; }
.hint { opacity: 0.85; }
`;

/** The page's own policy: no script at all, styles from /style.css, frames only from this server. */
const PAGE_CSP =
  "default-src 'none'; style-src 'self'; frame-src 'self'; img-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'";
/** A message's HTML: sandboxed even when opened on its own, nothing loaded from anywhere, framed only by the page. */
const MESSAGE_CSP =
  "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'self'; base-uri 'none'; form-action 'none'";

/**
 * @param {string} title
 * @param {string} body
 */
function page(title, body) {
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title><link rel="stylesheet" href="/style.css"></head>
<body><main>
${body}
</main></body>
</html>
`;
}

/** @param {CaughtMessage[]} list */
function listPage(list) {
  const rows = list
    .map(
      (m) =>
        `<tr><td><time datetime="${escapeHtml(m.received_at)}">${escapeHtml(m.received_at.replace("T", " ").slice(0, 19))}</time></td>` +
        `<td>${escapeHtml(m.from)}</td><td>${escapeHtml(m.to)}</td>` +
        `<td><a href="/messages/${escapeHtml(m.id)}">${escapeHtml(m.subject || "(no subject)")}</a></td></tr>`,
    )
    .join("\n");
  return page(
    "Mail catcher",
    `<h1>Mail catcher</h1>
<p class="hint">What local Herald sent, newest first, kept in memory until it stops. <a href="/">Refresh</a></p>
${
  list.length === 0
    ? "<p>No messages yet.</p>"
    : `<table><caption class="hint">${list.length} message${list.length === 1 ? "" : "s"}</caption>
<thead><tr><th scope="col">Received (UTC)</th><th scope="col">From</th><th scope="col">To</th><th scope="col">Subject</th></tr></thead>
<tbody>
${rows}
</tbody></table>`
}`,
  );
}

/** @param {CaughtMessage} m */
function messagePage(m) {
  const headers = m.headers.map((h) => `<tr><th scope="row">${escapeHtml(h.name)}</th><td>${escapeHtml(h.value)}</td></tr>`).join("\n");
  return page(
    m.subject || "(no subject)",
    `<p><a href="/">All messages</a></p>
<h1>${escapeHtml(m.subject || "(no subject)")}</h1>
<table>
<tr><th scope="row">From</th><td>${escapeHtml(m.from)}</td></tr>
<tr><th scope="row">To</th><td>${escapeHtml(m.to)}</td></tr>
<tr><th scope="row">Envelope</th><td>${escapeHtml(`MAIL FROM:<${m.envelope.mail_from}> RCPT TO:${m.envelope.rcpt_to.map((r) => `<${r}>`).join(" ")}`)}</td></tr>
<tr><th scope="row">Received</th><td><time datetime="${escapeHtml(m.received_at)}">${escapeHtml(m.received_at)}</time></td></tr>
</table>
<h2>Text</h2>
${m.text ? `<pre data-part="text">${escapeHtml(m.text)}</pre>` : "<p>No text part.</p>"}
<h2>HTML</h2>
${
  m.html
    ? `<p class="hint">Shown in a sandbox: no scripts run and nothing is loaded from elsewhere.</p>
<iframe sandbox title="The message's HTML part" src="/messages/${escapeHtml(m.id)}/html"></iframe>`
    : "<p>No HTML part.</p>"
}
<h2>Headers</h2>
<table>
${headers}
</table>`,
  );
}

/**
 * @param {import("node:http").ServerResponse} res
 * @param {number} status
 * @param {string} type
 * @param {string} body
 * @param {Record<string, string>} [extra]
 */
function send(res, status, type, body, extra = {}) {
  res.writeHead(status, {
    "Content-Type": type,
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Content-Security-Policy": PAGE_CSP,
    ...extra,
  });
  res.end(body);
}

/**
 * Starts the catcher: SMTP on 127.0.0.1:`smtpPort` and the page on 127.0.0.1:`webPort` (0, the default, picks a free
 * port for either). Messages are kept in memory, the newest `limit` of them.
 *
 * The page: `/` lists the messages newest first (received, from, to, subject); `/messages/<id>` shows one (its text
 * part, its HTML part in a sandboxed iframe, its headers). The same as JSON: `GET /api/messages` (newest first) and
 * `GET /api/messages/<id>`.
 *
 * @param {{ smtpPort?: number, webPort?: number, limit?: number }} [options]
 * @returns {Promise<MailCatcher>}
 */
export async function startMailCatcher({ smtpPort = 0, webPort = 0, limit = 500 } = {}) {
  /** @type {CaughtMessage[]} newest first */
  const caught = [];

  const smtp = new SMTPServer({
    banner: "Herald's local mail catcher",
    disabledCommands: ["STARTTLS"],
    // Whatever credentials a developer's .dev.vars has, the message is caught: AUTH is optional and any is accepted.
    authOptional: true,
    allowInsecureAuth: true,
    onAuth(auth, _session, callback) {
      callback(null, { user: auth.username ?? "" });
    },
    size: MAX_MESSAGE_BYTES,
    logger: false,
    onData(stream, session, callback) {
      /** @type {Buffer[]} */
      const chunks = [];
      stream.on("data", (chunk) => chunks.push(chunk));
      stream.on("end", () => {
        if (stream.sizeExceeded) {
          callback(Object.assign(new Error("Message exceeds the catcher's size limit"), { responseCode: 552 }));
          return;
        }
        const envelope = {
          mail_from: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
          rcpt_to: session.envelope.rcptTo.map((r) => r.address),
        };
        parseMessage(Buffer.concat(chunks), envelope).then(
          (message) => {
            caught.unshift(message);
            caught.length = Math.min(caught.length, limit);
            callback();
          },
          () => callback(Object.assign(new Error("The catcher could not parse the message"), { responseCode: 554 })),
        );
      });
    },
  });
  smtp.on("error", () => {
    // A client that drops its connection is no reason to stop catching.
  });

  await new Promise((resolve, reject) => {
    smtp.server.once("error", reject);
    smtp.listen(smtpPort, HOST, () => resolve(undefined));
  });
  const smtpAddress = smtp.server.address();
  const actualSmtpPort = typeof smtpAddress === "object" && smtpAddress ? smtpAddress.port : smtpPort;

  /** @type {Set<string>} filled once the web port is known */
  const allowedHosts = new Set();
  const web = createServer((req, res) => {
    // DNS rebinding: a foreign name that resolves to 127.0.0.1 must not read the messages.
    if (!allowedHosts.has((req.headers.host ?? "").toLowerCase())) {
      send(res, 421, "text/plain; charset=utf-8", "This server answers only on localhost.\n");
      return;
    }
    if (req.method !== "GET" && req.method !== "HEAD") {
      send(res, 405, "text/plain; charset=utf-8", "Only GET.\n", { Allow: "GET, HEAD" });
      return;
    }
    const url = new URL(req.url ?? "/", "http://localhost");
    const parts = url.pathname.split("/").filter(Boolean);
    const byId = (id) => caught.find((m) => m.id === id);
    if (url.pathname === "/") return send(res, 200, "text/html; charset=utf-8", listPage(caught));
    if (url.pathname === "/style.css") return send(res, 200, "text/css; charset=utf-8", STYLE);
    if (url.pathname === "/api/messages") {
      const list = caught.map(({ id, received_at, from, to, subject }) => ({ id, received_at, from, to, subject }));
      return send(res, 200, "application/json", JSON.stringify({ messages: list }));
    }
    if (parts.length === 3 && parts[0] === "api" && parts[1] === "messages") {
      const m = byId(parts[2]);
      return m
        ? send(res, 200, "application/json", JSON.stringify(m))
        : send(res, 404, "application/json", JSON.stringify({ message: "No such message." }));
    }
    if (parts[0] === "messages" && (parts.length === 2 || (parts.length === 3 && parts[2] === "html"))) {
      const m = byId(parts[1]);
      if (!m) return send(res, 404, "text/html; charset=utf-8", page("Not found", '<h1>No such message</h1><p><a href="/">All messages</a></p>'));
      if (parts.length === 2) return send(res, 200, "text/html; charset=utf-8", messagePage(m));
      return send(res, 200, "text/html; charset=utf-8", m.html, { "Content-Security-Policy": MESSAGE_CSP });
    }
    send(res, 404, "text/html; charset=utf-8", page("Not found", '<h1>Not found</h1><p><a href="/">All messages</a></p>'));
  });
  try {
    await new Promise((resolve, reject) => {
      web.once("error", reject);
      web.listen(webPort, HOST, () => resolve(undefined));
    });
  } catch (error) {
    await new Promise((resolve) => smtp.close(() => resolve(undefined)));
    throw error;
  }
  const webAddress = web.address();
  const actualWebPort = typeof webAddress === "object" && webAddress ? webAddress.port : webPort;
  for (const name of ["localhost", "127.0.0.1"]) allowedHosts.add(`${name}:${actualWebPort}`);

  return {
    smtpPort: actualSmtpPort,
    url: `http://localhost:${actualWebPort}`,
    messages: () => [...caught],
    stop: async () => {
      web.closeAllConnections();
      await Promise.all([
        new Promise((resolve) => web.close(() => resolve(undefined))),
        new Promise((resolve) => smtp.close(() => resolve(undefined))),
      ]);
    },
  };
}
