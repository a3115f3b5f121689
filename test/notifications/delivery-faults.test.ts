import { createMessageBatch } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { getConfig } from "../../src/config/config";
import { database } from "../../src/db/client";
import type { Env, NotificationQueueMessage } from "../../src/env";
import { handleQueue, redrive } from "../../src/notifications/background";
import { dispatchMessage, PASSCODE_EXPIRED } from "../../src/notifications/dispatch";
import { enqueueNotification } from "../../src/notifications/enqueue";
import { writePaused } from "../../src/notifications/settings";
import { TEMPLATE_IDS } from "../../src/notifications/templates";
import { createUser } from "../helpers";
import { type LabHandle, type LabProfile, labServer, setLabClock } from "../peers";
import type { CutStage } from "../peers/smtp-lab";

// The fault table of docs/email.md: a mail server that is down for a while, or greylists, and Herald's retry schedule
// driven across days by a clock the test controls (dispatchMessage's `now`, and the lab server's greylist clock), so
// nothing waits real minutes. Each case must end with the message arrived exactly once, or — past
// NOTIFICATIONS_MAX_AGE — failed for good with the reason, never both, never twice.

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

interface Row {
  status: string;
  status_reason: string | null;
  attempts: number;
  next_retry_after: string | null;
}

interface Outcome {
  status: string;
  reason: string | null;
  attempts: number;
  arrived: number;
  /** Fake time from the first attempt to the one that delivered (or gave up). */
  elapsedMs: number;
}

/**
 * A message enqueued while the notifier is paused (so nothing sends it on real time), dated at `t0`, then delivered
 * by calling the dispatcher at each retry time it schedules — what the queue's delayed message or the cron does.
 */
async function drive(
  fault: { kind: "outage" | "greylist"; ms: number } | { kind: "cut"; profile: LabProfile; tls: "starttls" | "tls" },
): Promise<Outcome> {
  const lab: LabHandle = await labServer(fault.kind === "greylist" ? { greylistMs: fault.ms } : fault.kind === "cut" ? fault.profile : {});
  // The TLS cases use "localhost", the name the test certificates carry (and workerd trusts their CA).
  const labEnv = {
    ...env,
    EMAIL_SMARTHOST: fault.kind === "cut" ? `localhost:${lab.port}` : `127.0.0.1:${lab.port}`,
    EMAIL_TLS: fault.kind === "cut" ? fault.tls : "none",
    EMAIL_USERNAME: undefined,
    EMAIL_PASSWORD: undefined,
  } as Env;
  const user = await createUser();
  const db = database(env.DB);
  // A day ahead of real time: the retry times it schedules are never due for the real queue consumer.
  const t0 = Date.now() + DAY;

  await writePaused(db, true);
  const rows = await enqueueNotification(
    labEnv,
    { waitUntil: () => undefined },
    {
      userId: user.id,
      templateId: TEMPLATE_IDS.custom,
      labels: { custom_title: `fault ${fault.kind} ${"ms" in fault ? fault.ms : fault.profile.cutFirstAt}`, custom_message: "body" },
      createdBy: "test",
    },
  );
  const id = rows.find((r) => r.method === "smtp")?.id ?? "";
  await env.DB.prepare("UPDATE notification_messages SET created_at = ? WHERE id = ?").bind(new Date(t0).toISOString(), id).run();
  await writePaused(db, false);

  let now = t0;
  let row: Row | null = null;
  try {
    for (let i = 0; i < 400; i++) {
      if (fault.kind === "outage") await (now < t0 + fault.ms ? lab.stop() : lab.start());
      else if (fault.kind === "greylist") await setLabClock(now);
      await dispatchMessage(labEnv, id, now);
      row = await env.DB.prepare("SELECT status, status_reason, attempts, next_retry_after FROM notification_messages WHERE id = ?")
        .bind(id)
        .first<Row>();
      if (!row || row.status === "sent" || row.status === "permanent_failure") break;
      expect(row.status).toBe("temporary_failure");
      const next = Date.parse(row.next_retry_after ?? "");
      // Exponential backoff, never more than an hour apart.
      expect(next - now).toBeLessThanOrEqual(HOUR);
      now = next;
    }
  } finally {
    await lab.start();
    await setLabClock(null);
  }
  const { emails } = await lab.state();
  return {
    status: row?.status ?? "missing",
    reason: row?.status_reason ?? null,
    attempts: row?.attempts ?? 0,
    arrived: emails.length,
    elapsedMs: now - t0,
  };
}

function human(ms: number): string {
  if (ms >= DAY) return `${+(ms / DAY).toFixed(1)} d`;
  if (ms >= HOUR) return `${+(ms / HOUR).toFixed(1)} h`;
  if (ms >= MINUTE) return `${+(ms / MINUTE).toFixed(1)} min`;
  return `${Math.round(ms / 1000)} s`;
}

const table: string[] = [];

describe("fault table: outages and greylisting against the retry schedule (docs/email.md)", () => {
  const delivered: [kind: "outage" | "greylist", ms: number][] = [
    ["outage", 0],
    ["outage", 90_000],
    ["greylist", 2 * MINUTE],
    ["outage", 10 * MINUTE],
    ["outage", HOUR],
    ["outage", DAY],
    ["outage", 4 * DAY],
  ];

  for (const [kind, ms] of delivered) {
    it(`${kind} of ${human(ms)}: sent, arrived once`, async () => {
      const outcome = await drive({ kind, ms });
      table.push(
        `| ${kind} ${human(ms)} | ${outcome.status} | ${outcome.arrived} | ${Math.max(0, outcome.arrived - 1)} | ${outcome.attempts} | ${human(outcome.elapsedMs)} |`,
      );
      expect(outcome.status).toBe("sent");
      expect(outcome.arrived).toBe(1);
      expect(outcome.elapsedMs).toBeGreaterThanOrEqual(ms);
      // Back within an hour of the server's return (the longest gap between tries).
      expect(outcome.elapsedMs - ms).toBeLessThanOrEqual(HOUR);
    });
  }

  it("outage of 6 d (past NOTIFICATIONS_MAX_AGE, 5 d): fails for good at 5 d, with the reason, and nothing arrives", async () => {
    const outcome = await drive({ kind: "outage", ms: 6 * DAY });
    table.push(`| outage 6 d | ${outcome.status} | ${outcome.arrived} | 0 | ${outcome.attempts} | ${human(outcome.elapsedMs)} |`);
    expect(outcome.status).toBe("permanent_failure");
    expect(outcome.arrived).toBe(0);
    expect(outcome.elapsedMs).toBe(5 * DAY);
    expect(outcome.reason).toMatch(/^gave up after \d+ attempts over 5d 0h \(NOTIFICATIONS_MAX_AGE\): smtp: connection to 127\.0\.0\.1:\d+ failed/);
    console.log(["| fault | outcome | arrived | duplicates | attempts | first try → outcome |", "|---|---|---|---|---|---|", ...table].join("\n"));
  });
});

// docs/email.md, "What it does": a connection closed, reset or cut at any TLS stage is temporary; only a certificate
// the runtime refused is permanent. Each server cuts its first connection at one stage and then behaves; the message
// must end sent, once, and never be recorded as a certificate failure.
describe("TLS stages: a cut connection is temporary, never a certificate failure (docs/email.md)", () => {
  const stages: [CutStage, "starttls" | "tls", string][] = [
    ["after-starttls-reply", "starttls", "closed 5 ms after STARTTLS's 220"],
    ["during-handshake", "starttls", "closed when the ClientHello arrives"],
    ["after-handshake", "starttls", "closed as soon as the handshake completes"],
    ["ehlo-421-after-tls", "starttls", "421 to the EHLO under TLS"],
    ["implicit-before-handshake", "tls", "implicit TLS, closed before the handshake"],
  ];
  for (const [stage, tls, what] of stages) {
    it(`${what}: sent, arrived once`, async () => {
      const profile: LabProfile = tls === "tls" ? { implicitTls: true, cutFirstAt: stage } : { starttls: true, cutFirstAt: stage };
      const outcome = await drive({ kind: "cut", profile, tls });
      expect(outcome.status).toBe("sent");
      expect(outcome.arrived).toBe(1);
      // A cut before the handshake completes is tried again at once on a new connection (one attempt); one after it
      // is an ordinary temporary failure, retried on the backoff (two attempts).
      expect(outcome.attempts).toBe(stage === "after-handshake" || stage === "ehlo-421-after-tls" ? 2 : 1);
    });
  }
});

// docs/email.md, "Never lose, never duplicate": a lease is short and renewed while its send is alive, so a send that
// takes longer than the lease keeps it (no second copy), and a holder that died is replaced about a minute later.
describe("leases: renewed while a send lives, recovered soon after a crash (docs/email.md)", () => {
  async function pausedMessage(labEnv: Env, templateId: string, t0: number): Promise<string> {
    const user = await createUser();
    const db = database(env.DB);
    await writePaused(db, true);
    const rows = await enqueueNotification(
      labEnv,
      { waitUntil: () => undefined },
      { userId: user.id, templateId, labels: { custom_title: "lease", custom_message: "body" }, createdBy: "test" },
    );
    const id = rows.find((r) => r.method === "smtp")?.id ?? "";
    await env.DB.prepare("UPDATE notification_messages SET created_at = ? WHERE id = ?").bind(new Date(t0).toISOString(), id).run();
    return id;
  }
  const labEnvOf = (lab: LabHandle) =>
    ({ ...env, EMAIL_SMARTHOST: `127.0.0.1:${lab.port}`, EMAIL_TLS: "none", EMAIL_USERNAME: undefined, EMAIL_PASSWORD: undefined }) as Env;
  const rowOf = (id: string) =>
    env.DB.prepare("SELECT status, status_reason, attempts, leased_until FROM notification_messages WHERE id = ?")
      .bind(id)
      .first<{ status: string; status_reason: string | null; attempts: number; leased_until: string | null }>();

  it("a send that lasts longer than its lease (final reply after 8 s, lease 3 s) keeps it: sent once, never expired", async () => {
    const lab = await labServer({ finalReplyDelayMs: 8_000 });
    const labEnv = labEnvOf(lab);
    const id = await pausedMessage(labEnv, TEMPLATE_IDS.custom, Date.now());
    await writePaused(database(env.DB), false);
    const sending = dispatchMessage(labEnv, id, Date.now(), { leaseMs: 3_000 });
    let checks = 0;
    for (let done = false; !done; ) {
      done = await Promise.race([sending.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 300))]);
      const row = await rowOf(id);
      // What the cron looks at: a lease still in the future whenever the message is leased.
      if (row?.status === "leased") {
        expect(Date.parse(row.leased_until ?? "")).toBeGreaterThan(Date.now());
        checks++;
      }
    }
    expect(await sending).toBe("sent");
    expect(checks).toBeGreaterThan(10);
    expect((await rowOf(id))?.attempts).toBe(1);
    expect((await lab.state()).emails).toHaveLength(1);
  }, 30_000);

  it("a holder that crashed (its lease no longer renewed) is replaced a minute later, and the message is sent once", async () => {
    const lab = await labServer({});
    const labEnv = labEnvOf(lab);
    const t0 = Date.now() + DAY;
    const id = await pausedMessage(labEnv, TEMPLATE_IDS.custom, t0);
    // What a lease at t0 leaves behind when its holder dies before sending anything.
    await env.DB.prepare("UPDATE notification_messages SET status = 'leased', attempts = 1, leased_until = ? WHERE id = ?")
      .bind(new Date(t0 + MINUTE).toISOString(), id)
      .run();
    // The cron, still paused so it kicks nothing: at 30 s the lease holds, at 61 s it has run out.
    await redrive(labEnv, 30_000, t0 + 30_000);
    expect((await rowOf(id))?.status).toBe("leased");
    await redrive(labEnv, 30_000, t0 + 61_000);
    expect(await rowOf(id)).toMatchObject({ status: "temporary_failure", status_reason: "lease expired before the send finished" });
    await writePaused(database(env.DB), false);
    expect(await dispatchMessage(labEnv, id, t0 + 61_000)).toBe("sent");
    expect((await lab.state()).emails).toHaveLength(1);
  });
});

// docs/email.md, "Two lanes": a passcode is worth sending only while its code is valid.
describe("passcode deadline (docs/email.md)", () => {
  it("a passcode e-mail due after OTP_TTL is not sent: permanent_failure with the reason, nothing arrives", async () => {
    const lab = await labServer({});
    const labEnv = {
      ...env,
      EMAIL_SMARTHOST: `127.0.0.1:${lab.port}`,
      EMAIL_TLS: "none",
      EMAIL_USERNAME: undefined,
      EMAIL_PASSWORD: undefined,
    } as Env;
    const user = await createUser();
    const db = database(env.DB);
    const t0 = Date.now() + DAY;
    await writePaused(db, true);
    const rows = await enqueueNotification(
      labEnv,
      { waitUntil: () => undefined },
      { userId: user.id, templateId: TEMPLATE_IDS.oneTimePasscode, secretLabels: { code: "123456" }, createdBy: "system" },
    );
    await writePaused(db, false);
    const id = rows.find((r) => r.method === "smtp")?.id ?? "";
    await env.DB.prepare("UPDATE notification_messages SET created_at = ? WHERE id = ?").bind(new Date(t0).toISOString(), id).run();
    const ttl = getConfig(labEnv).OTP_TTL;
    expect(await dispatchMessage(labEnv, id, t0 + ttl + 1_000)).toBe("failed");
    const row = await env.DB.prepare("SELECT status, status_reason FROM notification_messages WHERE id = ?").bind(id).first();
    expect(row).toEqual({ status: "permanent_failure", status_reason: PASSCODE_EXPIRED });
    expect((await lab.state()).emails).toHaveLength(0);
  });
});

// docs/email.md, "Two lanes": the consumer waits for a batch's sends only up to its hand-off time; a send still
// running then goes on in the background, its queue message acknowledged, so the next batch is not held up.
describe("the consumer hands a slow send off (docs/email.md)", () => {
  it("a send slower than the hand-off: the batch returns first, and the send still ends sent, once", async () => {
    const lab = await labServer({ finalReplyDelayMs: 4_000 });
    const labEnv = {
      ...env,
      EMAIL_SMARTHOST: `127.0.0.1:${lab.port}`,
      EMAIL_TLS: "none",
      EMAIL_USERNAME: undefined,
      EMAIL_PASSWORD: undefined,
    } as Env;
    const user = await createUser();
    const db = database(env.DB);
    await writePaused(db, true);
    const rows = await enqueueNotification(
      labEnv,
      { waitUntil: () => undefined },
      { userId: user.id, templateId: TEMPLATE_IDS.custom, labels: { custom_title: "hand-off", custom_message: "body" }, createdBy: "test" },
    );
    await writePaused(db, false);
    const id = rows.find((r) => r.method === "smtp")?.id ?? "";
    const background: Promise<unknown>[] = [];
    const batch = createMessageBatch<NotificationQueueMessage>("herald-notifications", [
      { id: "m0", timestamp: new Date(), attempts: 1, body: { messageId: id } },
    ]);
    const started = Date.now();
    await handleQueue(batch, labEnv, { waitUntil: (p) => void background.push(p) }, 500);
    expect(Date.now() - started).toBeLessThan(3_000);
    const status = async () =>
      (await env.DB.prepare("SELECT status FROM notification_messages WHERE id = ?").bind(id).first<{ status: string }>())?.status;
    expect(await status()).toBe("leased");
    await Promise.all(background);
    expect(await status()).toBe("sent");
    expect((await lab.state()).emails).toHaveLength(1);
  }, 20_000);
});
