/**
 * docs/security.md, "The audit log" (Cost): every search term reads `audit_logs` through an index, for the page and
 * for the exact count, so neither walks the whole table; the unfiltered page walks `audit_logs_time` newest first and
 * stops at its limit, and the unfiltered count reads only the table's smallest index, `audit_logs_status`. Checked with SQLite's EXPLAIN QUERY PLAN on the
 * very statements `GET /audit` sends (`auditPage`), over a few thousand entries.
 */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { auditPage, parseAuditSearch } from "../../src/audit/search";
import { database } from "../../src/db/client";

beforeAll(async () => {
  await env.DB.prepare(
    `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 4999)
     INSERT INTO audit_logs (id, time, user_id, action, resource_type, resource_id, diff, ip, request_id, user_agent, status_code)
     SELECT printf('%08x-0000-4000-8000-000000000000', i), strftime('%Y-%m-%dT%H:%M:%fZ', 1700000000 + i * 60, 'unixepoch'),
            printf('00000000-0000-4000-8000-%012x', i % 50), CASE i % 7 WHEN 0 THEN 'login' ELSE 'update' END,
            'user', printf('%d', i % 100), '{}', '192.0.2.' || (i % 250), '', '', 200 FROM n`,
  ).run();
});

async function plans(q: string): Promise<string[][]> {
  const parsed = parseAuditSearch(q);
  if (!parsed.ok) throw new Error(parsed.problems.join(" "));
  return Promise.all(
    auditPage(database(env.DB), parsed.search, 100, 0).map(async (statement) => {
      const { sql, params } = statement.toSQL();
      const { results } = await env.DB.prepare(`EXPLAIN QUERY PLAN ${sql}`)
        .bind(...params)
        .all<{ detail: string }>();
      return results.map((r) => r.detail);
    }),
  );
}

describe('docs/security.md, "The audit log": each search reads audit_logs through an index', () => {
  it.each([
    ["", "audit_logs_time", "audit_logs_status"],
    ["action:login", "audit_logs_action", "audit_logs_action"],
    ["username:someone", "audit_logs_user", "audit_logs_user"],
    ["email:someone@example.com", "audit_logs_user", "audit_logs_user"],
    ["resource_type:user resource_id:5", "audit_logs_resource", "audit_logs_resource"],
    ["ip:192.0.2.7", "audit_logs_ip", "audit_logs_ip"],
    ["date_from:2023-12-01 date_to:2023-12-31", "audit_logs_time", "audit_logs_time"],
  ])("q=%s: the page through %s, the count through %s", async (q, pageIndex, countIndex) => {
    const [page = [], total = []] = await plans(q);
    for (const [plan, index] of [
      [page, pageIndex],
      [total, countIndex],
    ] as const) {
      const reads = plan.filter((line) => /\baudit_logs\b/.test(line));
      expect(reads, JSON.stringify(plan)).not.toHaveLength(0);
      for (const line of reads) expect(line, JSON.stringify(plan)).toContain(`INDEX ${index}`);
    }
    // The count needs nothing but the index.
    expect(total.find((line) => /\baudit_logs\b/.test(line))).toContain("COVERING INDEX");
  });
});
