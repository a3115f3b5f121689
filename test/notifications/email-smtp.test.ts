import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { getConfig } from "../../src/config/config";
import { database } from "../../src/db/client";
import { type MessageRow, notificationTemplates, type TemplateRow } from "../../src/db/schema";
import type { Env } from "../../src/env";
import { uuidv7 } from "../../src/lib/crypto";
import { sendEmail } from "../../src/notifications/channels/smtp";
import { DeliveryError } from "../../src/notifications/channels/types";
import { renderTemplate } from "../../src/notifications/render";
import { TEMPLATE_IDS } from "../../src/notifications/templates";
import { messageRow } from "../fixtures/message-row";
import { type LabHandle, type LabProfile, labServer, setLabClock } from "../peers";

// The SMTP matrix of docs/email.md: Herald's SMTP channel against lab servers that behave like Postfix, Exchange's
// frontend connector, CRAM-MD5-only relays, greylisting servers and TLS endpoints with broken certificates
// (test/peers/smtp-lab.ts). Each case states the server's behaviour and what Herald must do with it.

const USER = { username: "relay-user", password: "relay-password" };
const TO = "alice@example.net";

type Settings = Partial<Pick<Env, "EMAIL_TLS" | "EMAIL_USERNAME" | "EMAIL_PASSWORD" | "EMAIL_FROM" | "EMAIL_HELLO" | "ACCESS_URL">>;

async function customTemplate(): Promise<TemplateRow> {
  const [template] = await database(env.DB).select().from(notificationTemplates).where(eq(notificationTemplates.id, TEMPLATE_IDS.custom));
  if (!template) throw new Error("custom template missing");
  return template;
}

/** A leased e-mail of the custom template, as the sender holds it. */
function leasedEmail(id = uuidv7()): MessageRow {
  return messageRow({ id, templateId: TEMPLATE_IDS.custom, method: "smtp", status: "leased", attempts: 1 });
}

interface Attempt {
  /** undefined when the server accepted the message. */
  error?: DeliveryError;
  lab: LabHandle;
}

/**
 * One send through the real channel to a lab server. Host "localhost" because the test certificates name it (and
 * 127.0.0.1); the test CA is trusted through NODE_EXTRA_CA_CERTS (package.json's test:worker).
 */
async function attempt(
  profile: LabProfile,
  settings: Settings,
  options: { lab?: LabHandle; title?: string; message?: string; to?: string; id?: string } = {},
): Promise<Attempt> {
  const lab = options.lab ?? (await labServer(profile));
  const config = getConfig({
    ...env,
    EMAIL_SMARTHOST: `localhost:${lab.port}`,
    EMAIL_USERNAME: undefined,
    EMAIL_PASSWORD: undefined,
    ...settings,
  } as Env);
  const template = await customTemplate();
  const rendered = renderTemplate(template, {
    user: { name: "Alice", username: "alice", email: TO },
    labels: { custom_title: options.title ?? "Build finished", custom_message: options.message ?? "All checks passed." },
    data: {},
    baseUrl: config.ACCESS_URL,
  });
  try {
    await sendEmail({
      env,
      config,
      message: leasedEmail(options.id),
      template,
      rendered,
      payload: { user_email: options.to ?? TO },
      deadline: Date.now() + 60_000,
    });
    return { lab };
  } catch (error) {
    if (!(error instanceof DeliveryError)) throw error;
    return { error, lab };
  }
}

async function delivered(result: Attempt) {
  expect(result.error?.message).toBeUndefined();
  const { emails } = await result.lab.state();
  expect(emails).toHaveLength(1);
  const [first] = emails;
  if (!first) throw new Error("no e-mail");
  return first;
}

const postfixLike: LabProfile = { auth: "optional", authMethods: ["PLAIN", "LOGIN"], starttls: true, ...USER };

describe("SMTP matrix: authentication (docs/email.md)", () => {
  it("AUTH advertised but optional, no credentials configured: sent without AUTH (the passcode e-mail works)", async () => {
    const mail = await delivered(await attempt(postfixLike, { EMAIL_TLS: "starttls" }));
    expect(mail.authUser).toBeNull();
    expect(mail.secure).toBe(true);
  });

  it("AUTH PLAIN LOGIN offered, credentials configured: PLAIN over TLS", async () => {
    const mail = await delivered(await attempt(postfixLike, { EMAIL_TLS: "starttls", EMAIL_USERNAME: USER.username, EMAIL_PASSWORD: USER.password }));
    expect(mail.authUser).toBe(USER.username);
    expect(mail.authMethod).toBe("PLAIN");
  });

  it("LOGIN only: LOGIN", async () => {
    const profile: LabProfile = { ...postfixLike, authMethods: ["LOGIN"] };
    const mail = await delivered(await attempt(profile, { EMAIL_TLS: "starttls", EMAIL_USERNAME: USER.username, EMAIL_PASSWORD: USER.password }));
    expect(mail.authMethod).toBe("LOGIN");
  });

  it("CRAM-MD5 only (plain text relay): CRAM-MD5, the password never sent", async () => {
    const profile: LabProfile = { auth: "required", authMethods: ["CRAM-MD5"], ...USER };
    const result = await attempt(profile, { EMAIL_TLS: "none", EMAIL_USERNAME: USER.username, EMAIL_PASSWORD: USER.password });
    const mail = await delivered(result);
    expect(mail.authMethod).toBe("CRAM-MD5");
    expect(mail.authUser).toBe(USER.username);
  });

  it("AUTH required, wrong credentials: a permanent failure with the server's reason", async () => {
    const result = await attempt(
      { ...postfixLike, auth: "required" },
      { EMAIL_TLS: "starttls", EMAIL_USERNAME: USER.username, EMAIL_PASSWORD: "wrong" },
    );
    expect(result.error?.retryable).toBe(false);
    expect(result.error?.message).toBe("smtp: AUTH PLAIN answered 535 5.7.8 Error: authentication failed: bad username or password");
    expect((await result.lab.state()).emails).toHaveLength(0);
  });

  it("AUTH required, no credentials configured: the refusal of MAIL FROM is permanent, with its reason", async () => {
    const result = await attempt({ ...postfixLike, auth: "required" }, { EMAIL_TLS: "starttls" });
    expect(result.error?.retryable).toBe(false);
    expect(result.error?.message).toMatch(/^smtp: MAIL FROM answered 530 /);
  });

  it("credentials configured but no AUTH offered: permanent, and nothing sent unauthenticated", async () => {
    const result = await attempt({ starttls: true }, { EMAIL_TLS: "starttls", EMAIL_USERNAME: USER.username, EMAIL_PASSWORD: USER.password });
    expect(result.error?.retryable).toBe(false);
    expect(result.error?.message).toBe("smtp: credentials are configured (EMAIL_USERNAME) but the server does not offer AUTH");
    expect((await result.lab.state()).emails).toHaveLength(0);
  });
});

describe("SMTP matrix: TLS (docs/email.md)", () => {
  it("EMAIL_TLS=starttls and STARTTLS offered: upgraded before anything else is said", async () => {
    const mail = await delivered(await attempt(postfixLike, { EMAIL_TLS: "starttls", EMAIL_USERNAME: USER.username, EMAIL_PASSWORD: USER.password }));
    expect(mail.secure).toBe(true);
  });

  it("EMAIL_TLS=starttls but STARTTLS not offered: refuses to authenticate or send in clear (permanent)", async () => {
    const result = await attempt(
      { auth: "optional", ...USER },
      { EMAIL_TLS: "starttls", EMAIL_USERNAME: USER.username, EMAIL_PASSWORD: USER.password },
    );
    expect(result.error?.retryable).toBe(false);
    expect(result.error?.message).toBe("smtp: the server does not offer STARTTLS, and EMAIL_TLS=starttls refuses to authenticate or send in clear");
    const state = await result.lab.state();
    expect(state.connections).toBe(1);
    expect(state.emails).toHaveLength(0);
  });

  it("EMAIL_TLS=tls: implicit TLS from the first byte", async () => {
    const mail = await delivered(
      await attempt(
        { implicitTls: true, auth: "optional", ...USER },
        { EMAIL_TLS: "tls", EMAIL_USERNAME: USER.username, EMAIL_PASSWORD: USER.password },
      ),
    );
    expect(mail.secure).toBe(true);
    expect(mail.authMethod).toBe("PLAIN");
  });

  it("EMAIL_TLS=none: plain text, AUTH as offered", async () => {
    const mail = await delivered(
      await attempt({ auth: "optional", ...USER }, { EMAIL_TLS: "none", EMAIL_USERNAME: USER.username, EMAIL_PASSWORD: USER.password }),
    );
    expect(mail.secure).toBe(false);
    expect(mail.authUser).toBe(USER.username);
  });

  // workerd hands the Worker the same opaque error for every refused certificate; Herald's own TLS 1.2 handshake
  // reads the certificate and names the failing check (src/notifications/email/tls-diagnosis.ts).
  const broken = [
    ["expired", "the server's certificate expired on 2021-01-01"],
    [
      "unknown-issuer",
      "the runtime refused the server's certificate, which is in date and names localhost, so it refused the chain (issuer: Unknown Test CA)",
    ],
    ["wrong-name", "the server's certificate does not name localhost (it names mail.elsewhere.test)"],
  ] as const;

  for (const [cert, reason] of broken) {
    it(`STARTTLS with a certificate that is ${cert}: a named, permanent failure, nothing sent`, async () => {
      const result = await attempt({ ...postfixLike, cert }, { EMAIL_TLS: "starttls", EMAIL_USERNAME: USER.username, EMAIL_PASSWORD: USER.password });
      expect(result.error?.retryable).toBe(false);
      expect(result.error?.message).toBe(`smtp: the TLS handshake with localhost:${result.lab.port} failed: ${reason}`);
      const state = await result.lab.state();
      expect(state.emails).toHaveLength(0);
    });

    it(`implicit TLS with a certificate that is ${cert}: a named, permanent failure`, async () => {
      const result = await attempt({ implicitTls: true, cert }, { EMAIL_TLS: "tls" });
      expect(result.error?.retryable).toBe(false);
      expect(result.error?.message).toBe(`smtp: the TLS handshake with localhost:${result.lab.port} failed: ${reason}`);
    });
  }

  it("STARTTLS, the server cuts the handshake on every connection: temporary, no certificate blamed", async () => {
    // Nothing but the opaque error reaches the Worker, and no certificate arrives for the diagnosis: nothing shows
    // that a certificate was refused, so it is retried like any cut connection (docs/email.md, "What it does").
    const lab = await labServer({ starttls: true, cutFirstAt: "during-handshake", cutConnections: 100 });
    const result = await attempt({}, { EMAIL_TLS: "starttls" }, { lab });
    expect(result.error?.retryable).toBe(true);
    expect(result.error?.message).toBe(
      `smtp: the TLS handshake with localhost:${lab.port} failed twice and the server sent no certificate to examine (the connection was cut)`,
    );
  });

  it("implicit TLS to a server that is down: temporary, not a certificate problem", async () => {
    const lab = await labServer({ implicitTls: true });
    await lab.stop();
    const result = await attempt({}, { EMAIL_TLS: "tls" }, { lab });
    expect(result.error?.retryable).toBe(true);
    expect(result.error?.message).toMatch(/^smtp: connection to localhost:\d+ failed/);
  });
});

describe("SMTP matrix: replies and timing (docs/email.md)", () => {
  it("greylisting: 451 is temporary, and the same message (same Message-ID) goes through once the greylist has passed", async () => {
    const start = Date.now();
    const id = uuidv7();
    await setLabClock(start);
    try {
      const first = await attempt({ greylistMs: 120_000 }, { EMAIL_TLS: "none" }, { id });
      expect(first.error?.retryable).toBe(true);
      expect(first.error?.message).toBe("smtp: RCPT TO answered 451 4.7.1 Greylisted, see https://postgrey.schweikert.ch/help/");
      await setLabClock(start + 60_000);
      expect((await attempt({}, { EMAIL_TLS: "none" }, { lab: first.lab, id })).error?.retryable).toBe(true);
      await setLabClock(start + 121_000);
      const mail = await delivered(await attempt({}, { EMAIL_TLS: "none" }, { lab: first.lab, id }));
      expect(mail.parsed.headers["message-id"]).toBe(`<${id}@herald.test>`);
    } finally {
      await setLabClock(null);
    }
  });

  it("classified by the reply code of the failing command, not by digits in the text", async () => {
    const rcptReplies = {
      "ops-550@example.net": { code: 451, message: "4.3.0 <ops-550@example.net>: mailbox busy, try later" },
      "ops.451@example.net": { code: 550, message: "5.1.1 <ops.451@example.net>: Recipient address rejected: unknown user 451" },
    };
    const busy = await attempt({ rcptReplies }, { EMAIL_TLS: "none" }, { to: "ops-550@example.net" });
    expect(busy.error?.retryable).toBe(true);
    const unknown = await attempt({ rcptReplies }, { EMAIL_TLS: "none" }, { to: "ops.451@example.net" });
    expect(unknown.error?.retryable).toBe(false);
    expect(unknown.error?.message).toMatch(/^smtp: RCPT TO answered 550 5\.1\.1 /);
  });

  it("a slow final reply (16 s, past the old 15 s timeout): waited for, accepted once", async () => {
    const result = await attempt({ finalReplyDelayMs: 16_000 }, { EMAIL_TLS: "none" });
    await delivered(result);
  }, 40_000);

  it("a refused connection is temporary", async () => {
    const lab = await labServer({});
    await lab.stop();
    const result = await attempt({}, { EMAIL_TLS: "none" }, { lab });
    expect(result.error?.retryable).toBe(true);
    expect(result.error?.message).toMatch(/^smtp: connection to localhost:\d+ failed/);
  });
});

describe("SMTP matrix: what the message says about its sender (docs/email.md)", () => {
  it("envelope sender is the bare address of a display-name EMAIL_FROM; Message-ID on its domain; DSN at the server's default", async () => {
    const id = uuidv7();
    const mail = await delivered(
      await attempt(
        { auth: "optional", ...USER },
        { EMAIL_TLS: "none", EMAIL_FROM: "Herald Alerts <alerts@mail.example.org>", EMAIL_HELLO: "herald.example.org" },
        { id },
      ),
    );
    expect(mail.mailFrom).toBe("alerts@mail.example.org");
    expect(mail.parsed.headers.from).toBe('"Herald Alerts" <alerts@mail.example.org>');
    expect(mail.parsed.headers["message-id"]).toBe(`<${id}@mail.example.org>`);
    expect(mail.rcptArgs[TO]?.NOTIFY).toBeUndefined();
    expect(mail.helo).toBe("herald.example.org");
  });

  it("EHLO names ACCESS_URL's host when EMAIL_HELLO is not set, and a server checking for an FQDN accepts it", async () => {
    const mail = await delivered(
      await attempt({ rejectNonFqdnHelo: true }, { EMAIL_TLS: "none", EMAIL_FROM: undefined, ACCESS_URL: "https://herald.example.com" }),
    );
    expect(mail.helo).toBe("herald.example.com");
    expect(mail.mailFrom).toBe("noreply@herald.example.com");
    expect(mail.parsed.headers["message-id"]).toMatch(/@herald\.example\.com>$/);
  });

  it("the default sender has a valid Message-ID, never `@localhost>>`", async () => {
    const mail = await delivered(await attempt({}, { EMAIL_TLS: "none", EMAIL_FROM: undefined }));
    expect(mail.mailFrom).toBe("noreply@localhost");
    expect(mail.parsed.headers["message-id"]).toMatch(/^<[0-9a-f-]{36}@localhost>$/);
  });

  it("a 120-character CJK title: folded encoded-words of at most 75 characters, no line over 998, decoded intact", async () => {
    const title = "通知".repeat(60);
    const mail = await delivered(await attempt({}, { EMAIL_TLS: "none" }, { title }));
    expect(mail.parsed.subject).toBe(title);
    const header = /^Subject:.*(\r\n[ \t].*)*/m.exec(mail.raw)?.[0] ?? "";
    for (const word of header.match(/=\?[^?]+\?[BQ]\?[^?]*\?=/g) ?? []) expect(word.length).toBeLessThanOrEqual(75);
    for (const line of mail.raw.split("\r\n")) expect(line.length).toBeLessThanOrEqual(998);
  });

  it("links in a title: the Subject shows their text only, the text part keeps `text (url)` (docs/email.md)", async () => {
    const title = "Mail ops@example.com if it fails, see <https://status.example.com> or [the runbook](https://runbook.example.com/deploy)";
    const mail = await delivered(
      await attempt({}, { EMAIL_TLS: "none" }, { title, message: "Read [the runbook](https://runbook.example.com/deploy)." }),
    );
    expect(mail.parsed.subject).toBe("Mail ops@example.com if it fails, see https://status.example.com or the runbook");
    expect(mail.parsed.text).toContain("Read the runbook (https://runbook.example.com/deploy).");
  });
});
