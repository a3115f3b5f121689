import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { database } from "../../src/db/client";
import type { Env } from "../../src/env";
import { dispatchMessage } from "../../src/notifications/dispatch";
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
