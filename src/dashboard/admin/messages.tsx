import { useEffect, useState } from "preact/hooks";
import { api, call } from "../api";
import { isOwner, session } from "../session";
import { useAction } from "../ui/action";
import { Empty, Field, Loading, type Option, Page, ProblemAlert, SelectField, Time } from "../ui/components";
import { useStore } from "../ui/store";
import { appendNew, DataTable, Head, Pill, ShortId } from "./parts";

type Query = NonNullable<Parameters<typeof api.notifications.messages.$get>[0]>["query"];
type Log = Awaited<ReturnType<typeof loadLog>>;
type Message = Log["messages"][number];
type Status = Message["status"];
type Method = Message["method"];

const PAGE = 50;

function loadLog(query: Query) {
  return call(api.notifications.messages.$get({ query }));
}

/** The message states of docs/api.md, "Message states, retries, webhooks and SMTP". */
const STATUSES: readonly { value: Status; label: string; tone: "ok" | "danger" | "muted" | "plain" }[] = [
  { value: "pending", label: "Pending", tone: "plain" },
  { value: "leased", label: "Leased", tone: "plain" },
  { value: "sent", label: "Sent", tone: "ok" },
  { value: "temporary_failure", label: "Temporary failure", tone: "danger" },
  { value: "permanent_failure", label: "Permanent failure", tone: "danger" },
  { value: "inhibited", label: "Inhibited", tone: "muted" },
  { value: "skipped", label: "Skipped", tone: "muted" },
];
const METHODS: readonly Method[] = ["inbox", "smtp", "webhook"];

const STATUS_OPTIONS: Option[] = [{ value: "", label: "Any status" }, ...STATUSES.map((s) => ({ value: s.value, label: s.label }))];
const METHOD_OPTIONS: Option[] = [{ value: "", label: "Any method" }, ...METHODS.map((m) => ({ value: m, label: m }))];

const asStatus = (value: string) => STATUSES.find((s) => s.value === value)?.value;
const asMethod = (value: string) => METHODS.find((m) => m === value);

const COLUMNS = ["Created", "Updated", "Template", "User", "Method", "Status", "Reason", "Attempts"];

interface Filters {
  status: string;
  method: string;
  template: string;
  user: string;
}

function toQuery(filters: Filters, offset: number): Query {
  const status = asStatus(filters.status);
  const method = asMethod(filters.method);
  return {
    limit: String(PAGE),
    offset: String(offset),
    ...(status ? { status } : {}),
    ...(method ? { method } : {}),
    ...(filters.template ? { template_id: filters.template } : {}),
    ...(filters.user.trim() ? { user_id: filters.user.trim() } : {}),
  };
}

/**
 * The delivery log (GET /notifications/messages, owners only: docs/authorization.md): newest first, each message's
 * method, state and why (`status_reason`), filtered by state, method, template and user, in pages of 50.
 */
export function AdminMessagesPage() {
  const state = useStore(session);
  const owner = state.kind === "signed-in" && isOwner(state.me);
  return <Page title="Message log">{owner ? <MessageLog /> : <p data-testid="messages-owner-only">Only owners can read the message log.</p>}</Page>;
}

function MessageLog() {
  const [filters, setFilters] = useState<Filters>({ status: "", method: "", template: "", user: "" });
  const [log, setLog] = useState<Log | undefined>(undefined);
  const [templates, setTemplates] = useState<Option[]>([]);

  const load = useAction(async (next: Filters, offset: number) => {
    const page = await loadLog(toQuery(next, offset));
    // A message logged since the first page shifts the offsets by one: one already shown is not shown twice.
    setLog((current) => (offset > 0 && current ? { messages: appendNew(current.messages, page.messages), count: page.count } : page));
  });
  const names = useAction(async () => {
    const [system, custom] = await Promise.all([call(api.notifications.templates.system.$get()), call(api.notifications.templates.custom.$get())]);
    setTemplates([...system, ...custom].map((t) => ({ value: t.id, label: t.name })));
  });

  useEffect(() => {
    void names.run();
    void load.run(filters, 0);
  }, []);

  /** A select applies at once (only the table changes); the user id waits for the form's submit. */
  const choose = (change: Partial<Filters>) => {
    const next = { ...filters, ...change };
    setFilters(next);
    void load.run(next, 0);
  };
  const templateName = (id: string) => templates.find((t) => t.value === id)?.label;

  return (
    <>
      <form
        class="filters"
        aria-label="Filter messages"
        onSubmit={(event) => {
          event.preventDefault();
          void load.run(filters, 0);
        }}
      >
        <SelectField label="Status" name="message-status" value={filters.status} options={STATUS_OPTIONS} onValue={(status) => choose({ status })} />
        <SelectField label="Method" name="message-method" value={filters.method} options={METHOD_OPTIONS} onValue={(method) => choose({ method })} />
        <SelectField
          label="Template"
          name="message-template"
          value={filters.template}
          options={[{ value: "", label: "Any template" }, ...templates]}
          onValue={(template) => choose({ template })}
        />
        <Field
          label="User id"
          name="message-user"
          value={filters.user}
          onValue={(user) => setFilters({ ...filters, user })}
          problem={load.problem}
          problemField="user_id"
          placeholder="any user"
        />
        <button type="submit" disabled={load.pending}>
          Apply filters
        </button>
      </form>
      <ProblemAlert problem={load.problem ?? names.problem} />
      {log === undefined ? (
        load.pending ? (
          <Loading what="messages" />
        ) : null
      ) : log.messages.length === 0 ? (
        <Empty>No message matches.</Empty>
      ) : (
        <>
          <DataTable label="Messages, newest first">
            <Head columns={COLUMNS} />
            <tbody>
              {log.messages.map((m) => {
                const status = STATUSES.find((s) => s.value === m.status);
                return (
                  <tr key={m.id} data-testid="message-row" data-status={m.status}>
                    <td>
                      <Time iso={m.created_at} />
                    </td>
                    <td>
                      <Time iso={m.updated_at} />
                    </td>
                    <td>{templateName(m.template_id) ?? <ShortId id={m.template_id} />}</td>
                    <td>
                      <ShortId id={m.user_id} />
                    </td>
                    <td>{m.method}</td>
                    <td>
                      <Pill tone={status?.tone ?? "plain"}>{status?.label ?? m.status}</Pill>
                    </td>
                    <td class="wrap">{m.status_reason || <span class="muted">—</span>}</td>
                    <td>{m.attempts}</td>
                  </tr>
                );
              })}
            </tbody>
          </DataTable>
          <div class="pager">
            <span class="muted" data-testid="message-count">
              Showing {log.messages.length} of {log.count}
            </span>
            {log.messages.length < log.count ? (
              <button type="button" disabled={load.pending} onClick={() => void load.run(filters, log.messages.length)}>
                {load.pending ? "Loading…" : "Load more"}
              </button>
            ) : null}
            <button type="button" disabled={load.pending} onClick={() => void load.run(filters, 0)}>
              Refresh
            </button>
          </div>
        </>
      )}
    </>
  );
}
