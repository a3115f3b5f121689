import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { call, json } from "../helpers";

/** One entry as `GET /audit` answers it (docs/security.md, "The audit log"). */
export interface Entry {
  id: string;
  time: string;
  user: { id: string; username: string } | null;
  action: string;
  resource_type: string;
  resource_id: string;
  ip: string;
  user_agent: string;
  status_code: number;
  description: string;
  additional_fields: Record<string, unknown>;
}

export interface Page {
  audit_logs: Entry[];
  count: number;
}

/** `GET /audit` with this query string, which must answer 200. */
export async function readAudit(token: string, params: Record<string, string | number> = {}): Promise<Page> {
  const search = new URLSearchParams(Object.entries(params).map(([k, v]) => [k, String(v)]));
  const res = await call("GET", `/audit${search.size > 0 ? `?${search}` : ""}`, { token });
  expect(res.status, await res.clone().text()).toBe(200);
  return json<Page>(res);
}

export interface SeededEntry {
  id: string;
  time: string;
  userId?: string | null;
  action?: string;
  resourceType?: string;
  resourceId?: string;
  ip?: string;
  diff?: Record<string, unknown>;
}

/** Entries written straight into D1, at times of the test's choosing (the API writes only "now"). */
export async function seedEntries(entries: readonly SeededEntry[]): Promise<void> {
  await env.DB.batch(
    entries.map((e) =>
      env.DB.prepare(
        "INSERT INTO audit_logs (id, time, user_id, action, resource_type, resource_id, diff, ip, request_id, user_agent, status_code) VALUES (?, ?, ?, ?, ?, ?, ?, ?, '', 'seeded', 200)",
      ).bind(
        e.id,
        e.time,
        e.userId ?? null,
        e.action ?? "update",
        e.resourceType ?? "user",
        e.resourceId ?? "r",
        JSON.stringify(e.diff ?? {}),
        e.ip ?? "",
      ),
    ),
  );
}
