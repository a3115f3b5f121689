import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Env } from "../../src/env";
import { Messages } from "../../src/http/errors";
import { BASE, createUser, expectError, fetchApp } from "../helpers";

// Broadcasts per caller, over sliding windows of a minute and a day (docs/broadcasts.md, "Limits").

const limited = { ...env, BROADCASTS_PER_MINUTE: "3", BROADCASTS_PER_DAY: "5" } as Env;

async function send(caller: { token: string; id: string }, title: string, key?: string): Promise<Response> {
  const ctx = createExecutionContext();
  const res = await fetchApp(
    new Request(`${BASE}/api/v2/notifications/broadcasts`, {
      method: "POST",
      headers: { "Service-Session-Token": caller.token, "Content-Type": "application/json", ...(key ? { "Idempotency-Key": key } : {}) },
      body: JSON.stringify({ audience: { user_ids: [caller.id] }, content: { title } }),
    }),
    limited,
    ctx,
  );
  await waitOnExecutionContext(ctx);
  return res;
}

const stored = async (callerId: string) =>
  (await env.DB.prepare("SELECT count(*) AS n FROM broadcasts WHERE created_by = ?").bind(callerId).first<{ n: number }>())?.n;

describe('broadcast limits per caller (docs/broadcasts.md, "Limits")', () => {
  it("past BROADCASTS_PER_MINUTE: 429 with Retry-After, nothing stored; a replayed key and other callers are not held back", async () => {
    const admin = await createUser({ roles: ["user-admin"] });
    const other = await createUser({ roles: ["user-admin"] });
    for (const n of [1, 2, 3]) expect((await send(admin, `limit ${n}`, n === 1 ? "first-key" : undefined)).status).toBe(202);
    const refused = await send(admin, "limit 4");
    const body = await expectError(refused, 429);
    expect(body.message).toBe(Messages.rateLimited(3, "1m0s"));
    const retry = Number(refused.headers.get("Retry-After"));
    expect(retry).toBeGreaterThanOrEqual(1);
    expect(retry).toBeLessThanOrEqual(60);
    expect(await stored(admin.id)).toBe(3);
    // The same request again, by its Idempotency-Key, is the broadcast already made: answered, not counted.
    expect((await send(admin, "limit 1", "first-key")).status).toBe(202);
    expect((await send(other, "someone else")).status).toBe(202);
  });

  it("past BROADCASTS_PER_DAY: 429 until the oldest of the day's leaves the window", async () => {
    const admin = await createUser({ roles: ["user-admin"] });
    const hoursAgo = (h: number) => new Date(Date.now() - h * 3_600_000).toISOString();
    await env.DB.batch(
      [23, 20, 10, 5, 2].map((h) =>
        env.DB.prepare(
          "INSERT INTO broadcasts (id, created_by, created_at, audience, title, message, targets, email_when_unread_after_ms, recipients, completed_at) VALUES (?, ?, ?, '{\"user_ids\":[]}', 'old', '', '[]', 0, 0, ?)",
        ).bind(crypto.randomUUID(), admin.id, hoursAgo(h), hoursAgo(h)),
      ),
    );
    const refused = await send(admin, "one too many");
    const body = await expectError(refused, 429);
    expect(body.message).toBe(Messages.rateLimited(5, "24h0m0s"));
    // The broadcast of 23 hours ago leaves the day's window in about an hour.
    const retry = Number(refused.headers.get("Retry-After"));
    expect(retry).toBeGreaterThan(3_500);
    expect(retry).toBeLessThanOrEqual(3_600);
    expect(await stored(admin.id)).toBe(5);
  });
});
