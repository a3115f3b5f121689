import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { TEMPLATE_IDS } from "../../src/notifications/templates";
import { call, json, owner } from "../helpers";
import { listAll } from "../inbox/inbox-helpers";
import { waitFor } from "../peers";

export interface Progress {
  id: string;
  created_by: string;
  created_at: string;
  recipients: number;
  delivered: number;
  failed: number;
  pending: number;
  completed_at: string | null;
}

export interface BroadcastRequest {
  audience: Record<string, unknown>;
  content?: { title?: string; message?: string };
  targets?: string[];
  email_when_unread_after?: string;
}

/** POSTs a broadcast (as the owner unless a token is given) and expects the 202. */
export async function broadcast(body: BroadcastRequest, options: { token?: string; key?: string } = {}): Promise<{ id: string; recipients: number }> {
  const token = options.token ?? (await owner()).token;
  const headers = options.key === undefined ? undefined : { "Idempotency-Key": options.key };
  const res = await call("POST", "/notifications/broadcasts", {
    token,
    headers,
    body: { content: { title: uniqueTitle() }, ...body },
  });
  expect(res.status).toBe(202);
  return json<{ id: string; recipients: number }>(res);
}

export async function progress(id: string): Promise<Progress> {
  const res = await call("GET", `/notifications/broadcasts/${id}`, { token: (await owner()).token });
  expect(res.status).toBe(200);
  return json<Progress>(res);
}

/** Waits until the fan-out on the real local queue has finished, and returns the final progress. */
export function completed(id: string, timeoutMs = 30_000): Promise<Progress> {
  return waitFor(async () => {
    const p = await progress(id);
    return p.completed_at === null ? undefined : p;
  }, timeoutMs);
}

/** The broadcast's items in a user's inbox (its inbox object, every state included). */
export async function itemsOf(token: string, title: string) {
  return (await listAll(token)).notifications.filter((n) => n.title === title);
}

/** Rows the message log holds for a broadcast's recipients, by user. */
export async function logRows(userIds: string[]) {
  const { results } = await env.DB.prepare(
    "SELECT id, user_id, method, status, status_reason, notification_id, send_if_unread, next_retry_after FROM notification_messages WHERE template_id = ? AND user_id IN (SELECT value FROM json_each(?))",
  )
    .bind(TEMPLATE_IDS.broadcast, JSON.stringify(userIds))
    .all<{
      id: string;
      user_id: string;
      method: string;
      status: string;
      status_reason: string | null;
      notification_id: string;
      send_if_unread: number;
      next_retry_after: string | null;
    }>();
  return results;
}

/** How many users the rules of docs/broadcasts.md ("Audience") pick for `where`, counted independently in SQL. */
export async function activeCount(where: string, ...binds: unknown[]): Promise<number> {
  const row = await env.DB.prepare(`SELECT count(*) AS n FROM users WHERE status = 'active' AND deleted = 0 AND ${where}`)
    .bind(...binds)
    .first<{ n: number }>();
  return row?.n ?? 0;
}

/** A title no other test uses, with no character Markdown escapes (so the inbox shows it as written). */
export function uniqueTitle(): string {
  return `Broadcast ${crypto.randomUUID().replaceAll("-", "")}`;
}
