import { useEffect, useState } from "preact/hooks";
import { api, call } from "../api";
import { routeParam } from "../router";
import type { Me } from "../session";
import { useAction } from "../ui/action";
import { Empty, Field, FieldNotes, Loading, Page, ProblemAlert, Time } from "../ui/components";
import { DataTable, Head, Pill } from "./parts";

type Log = Awaited<ReturnType<typeof loadLog>>;

/** Entries a page shows: the API's default. */
const PAGE = 25;

function loadLog(q: string, offset: number) {
  return call(api.audit.$get({ query: { q, limit: String(PAGE), offset: String(offset) } }));
}

/** Who may read the log: owners and auditors (docs/security.md, "The audit log"); the API enforces it. */
export function mayReadAudit(me: Me): boolean {
  return me.roles.some((role) => role.name === "owner" || role.name === "auditor");
}

/** The value of `key:` among the terms of `q`, or "". */
function termOf(q: string, key: string): string {
  const term = q.split(/\s+/).find((t) => t.toLowerCase().startsWith(`${key}:`));
  return term ? term.slice(key.length + 1) : "";
}

/** `q` with its `key:` term replaced by `value` (or removed when empty); the other terms stay as typed. */
function withTerm(q: string, key: string, value: string): string {
  const others = q.split(/\s+/).filter((t) => t !== "" && !t.toLowerCase().startsWith(`${key}:`));
  const clean = value.trim().replace(/\s+/g, "");
  return [...others, ...(clean ? [`${key}:${clean}`] : [])].join(" ");
}

/** The search and the page in the address (`#/audit?q=…&offset=…`), so a link opens the same view. */
function showInAddress(q: string, offset: number) {
  const query = new URLSearchParams({ ...(q ? { q } : {}), ...(offset > 0 ? { offset: String(offset) } : {}) });
  history.replaceState(null, "", `#/audit${query.size > 0 ? `?${query}` : ""}`);
}

const COLUMNS = ["Time", "User", "Action", "Description", { label: "Resource", optional: true }, { label: "IP", optional: true }, "Status"];

/**
 * The audit log (GET /audit, owners and auditors): newest first, searched with `q` (the address may carry one:
 * `#/audit?q=username%3Aalice`, as the "Account compromise reported" notice links), with inputs that write its
 * terms, in pages of 25 (docs/dashboard.md#pages).
 */
export function AuditPage({ me }: { me: Me }) {
  return <Page title="Audit log">{mayReadAudit(me) ? <AuditLog /> : <p>Only owners and auditors can read the audit log.</p>}</Page>;
}

function AuditLog() {
  const [q, setQ] = useState(() => routeParam("q") ?? "");
  const [shown, setShown] = useState<{ q: string; offset: number; log: Log } | undefined>(undefined);
  const load = useAction(async (search: string, offset: number) => {
    const log = await loadLog(search, offset);
    setShown({ q: search, offset, log });
    showInAddress(search, offset);
  });

  useEffect(() => {
    const offset = Number(routeParam("offset") ?? "0");
    void load.run(q, Number.isInteger(offset) && offset >= 0 ? offset : 0);
  }, []);

  const qError = load.problem?.validations
    .filter((v) => v.field === "q")
    .map((v) => v.detail)
    .join(" ");
  const term = (key: string) => ({ value: termOf(q, key), onValue: (value: string) => setQ(withTerm(q, key, value)) });
  const log = shown?.log;
  const offset = shown?.offset ?? 0;

  return (
    <>
      <form
        class="filters"
        aria-label="Search the audit log"
        onSubmit={(event) => {
          event.preventDefault();
          void load.run(q.trim(), 0);
        }}
      >
        <div class="field">
          <label for="field-audit-q">Search</label>
          <input
            id="field-audit-q"
            name="q"
            value={q}
            onInput={(event) => setQ(event.currentTarget.value)}
            aria-invalid={qError ? "true" : undefined}
            aria-describedby={qError ? "field-audit-q-hint field-audit-q-error" : "field-audit-q-hint"}
          />
          <FieldNotes
            id="field-audit-q"
            hint="key:value terms: action, resource_type, resource_id, username, email, ip, date_from, date_to (YYYY-MM-DD)."
            error={qError || undefined}
          />
        </div>
        <Field label="Action" name="audit-action" {...term("action")} />
        <Field label="Username" name="audit-username" {...term("username")} />
        <Field label="From" name="audit-date-from" type="date" {...term("date_from")} />
        <Field label="To" name="audit-date-to" type="date" {...term("date_to")} />
        <button type="submit" disabled={load.pending}>
          Search
        </button>
      </form>
      <ProblemAlert problem={load.problem} shown={["q"]} />
      {log === undefined ? (
        load.pending ? (
          <Loading what="the audit log" />
        ) : null
      ) : log.audit_logs.length === 0 && offset > 0 ? (
        <Empty>
          No entries this far back.{" "}
          <button type="button" class="button-quiet" onClick={() => void load.run(shown?.q ?? "", 0)}>
            Newest
          </button>
        </Empty>
      ) : log.audit_logs.length === 0 ? (
        <Empty>{shown?.q ? "No entry matches this search." : "The audit log is empty."}</Empty>
      ) : (
        <>
          <DataTable label="Audit log, newest first" fits>
            <Head columns={COLUMNS} />
            <tbody>
              {log.audit_logs.map((entry) => (
                <tr key={entry.id} data-testid="audit-row" data-action={entry.action}>
                  <td>
                    <Time iso={entry.time} />
                  </td>
                  <td>{entry.user ? <strong>{entry.user.username}</strong> : <span class="muted">—</span>}</td>
                  <td>{entry.action}</td>
                  <td class="wrap">{entry.description}</td>
                  <td class="optional wrap">
                    {entry.resource_type} <span class="muted">{entry.resource_id}</span>
                  </td>
                  <td class="optional">{entry.ip || <span class="muted">—</span>}</td>
                  <td>
                    <Pill tone={entry.status_code < 300 ? "ok" : "danger"}>{entry.status_code}</Pill>
                  </td>
                </tr>
              ))}
            </tbody>
          </DataTable>
          <div class="pager">
            <span class="muted" data-testid="audit-count">
              {offset + 1}–{offset + log.audit_logs.length} of {log.count}
            </span>
            <button type="button" disabled={load.pending || offset === 0} onClick={() => void load.run(shown?.q ?? "", Math.max(0, offset - PAGE))}>
              Newer
            </button>
            <button
              type="button"
              disabled={load.pending || offset + log.audit_logs.length >= log.count}
              onClick={() => void load.run(shown?.q ?? "", offset + PAGE)}
            >
              Older
            </button>
          </div>
        </>
      )}
    </>
  );
}
