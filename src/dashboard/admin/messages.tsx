import { useEffect, useRef, useState } from "preact/hooks";
import {
  DIGEST_TEMPLATE_ID,
  DIGEST_TEMPLATE_NAME,
  TARGET_VERIFICATION_TEMPLATE_ID,
  TARGET_VERIFICATION_TEMPLATE_NAME,
} from "../../notifications/templates";
import { ScheduleMessages } from "../../schedule/messages";
import { api, call } from "../api";
import { isOwner, session } from "../session";
import { useAction } from "../ui/action";
import { Empty, Loading, type Option, Page, ProblemAlert, SelectField, Time } from "../ui/components";
import { SAY } from "../ui/plain-words";
import { useStore } from "../ui/store";
import { appendNew, CopyId, DataTable, Head, Pill, ShortId } from "./parts";
import { findUsers, isUuid, type PickedUser, UserPicker } from "./user-picker";

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
const METHODS: readonly Method[] = ["inbox", "smtp", "webhook", "push", "target"];

const STATUS_OPTIONS: Option[] = [{ value: "", label: "Any status" }, ...STATUSES.map((s) => ({ value: s.value, label: s.label }))];
const METHOD_OPTIONS: Option[] = [{ value: "", label: "Any method" }, ...METHODS.map((m) => ({ value: m, label: m }))];

const asStatus = (value: string) => STATUSES.find((s) => s.value === value)?.value;
const asMethod = (value: string) => METHODS.find((m) => m === value);

/** Created and updated share a column, and cells wrap, so the log fits a 1280 px window (docs/dashboard.md#tables). */
const COLUMNS = ["Created", "Template", "User", "Method", "Status", "Reason", { label: "Attempts", optional: true }];

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
  const [userText, setUserText] = useState("");
  const [picked, setPicked] = useState<PickedUser | undefined>(undefined);
  const [userError, setUserError] = useState("");
  const usernames = useUsernames(log?.messages);

  const load = useAction(async (next: Filters, offset: number) => {
    const page = await loadLog(toQuery(next, offset));
    // A message logged since the first page shifts the offsets by one: one already shown is not shown twice.
    setLog((current) => (offset > 0 && current ? { messages: appendNew(current.messages, page.messages), count: page.count } : page));
  });
  const names = useAction(async () => {
    const [system, custom] = await Promise.all([call(api.notifications.templates.system.$get()), call(api.notifications.templates.custom.$get())]);
    // The digest and a target's verification have no stored template (docs/schedule.md, "Digests"; docs/targets.md,
    // "Verification"); their rows are named all the same.
    setTemplates([
      ...[...system, ...custom].map((t) => ({ value: t.id, label: t.name })),
      { value: DIGEST_TEMPLATE_ID, label: DIGEST_TEMPLATE_NAME },
      { value: TARGET_VERIFICATION_TEMPLATE_ID, label: TARGET_VERIFICATION_TEMPLATE_NAME },
    ]);
  });

  useEffect(() => {
    void names.run();
    void load.run(filters, 0);
  }, []);

  /** A select or a picked user applies at once (only the table changes); typed text waits for the form's submit. */
  const choose = (change: Partial<Filters>) => {
    const next = { ...filters, ...change };
    setFilters(next);
    void load.run(next, 0);
  };
  const pickUser = (user: PickedUser) => {
    setPicked(user);
    setUserText(user.username || user.id);
    setUserError("");
    choose({ user: user.id });
  };
  /** Typed text not picked from the list: a full id, or the one user it names (or matches alone), else a question. */
  const applyTyped = async () => {
    const text = userText.trim();
    if (!text) return choose({ user: "" });
    if (picked && text === (picked.username || picked.id)) return choose({ user: picked.id });
    if (isUuid(text)) return choose({ user: text });
    const found = (await findUsers(text, false).catch(() => [])).flatMap((choice) => choice.users);
    const exact = found.find((u) => [u.username, u.email].some((name) => name.toLowerCase() === text.toLowerCase()));
    const user = exact ?? (found.length === 1 ? found[0] : undefined);
    if (user) pickUser(user);
    else setUserError(SAY.pickUser);
  };
  const templateName = (id: string) => templates.find((t) => t.value === id)?.label;

  return (
    <>
      <form
        class="filters"
        aria-label="Filter messages"
        onSubmit={(event) => {
          event.preventDefault();
          void applyTyped();
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
        <UserPicker
          id="field-message-user"
          label="User"
          hint="Username, name or e-mail; or paste a full user id. Empty shows every user."
          text={userText}
          onText={(text) => {
            setUserText(text);
            setPicked(undefined);
            setUserError("");
          }}
          onPick={([user]) => user && pickUser(user)}
          error={userError || load.problem?.about("user_id")}
        />
        <button type="submit" disabled={load.pending}>
          Apply filters
        </button>
      </form>
      <ProblemAlert problem={load.problem ?? names.problem} shown={["user_id"]} />
      {log === undefined ? (
        load.pending ? (
          <Loading what="messages" />
        ) : null
      ) : log.messages.length === 0 ? (
        <Empty>No message matches.</Empty>
      ) : (
        <>
          <DataTable label="Messages, newest first" fits>
            <Head columns={COLUMNS} />
            <tbody>
              {log.messages.map((m) => {
                const status = STATUSES.find((s) => s.value === m.status);
                return (
                  <tr key={m.id} data-testid="message-row" data-status={m.status} data-user-id={m.user_id}>
                    <td>
                      <Time iso={m.created_at} />
                      {m.updated_at !== m.created_at ? (
                        <span class="muted stacked">
                          updated <Time iso={m.updated_at} />
                        </span>
                      ) : null}
                    </td>
                    <td>{templateName(m.template_id) ?? <ShortId id={m.template_id} />}</td>
                    <td>
                      <div class="user-cell">
                        {usernames.get(m.user_id) ? <strong>{usernames.get(m.user_id)}</strong> : null}
                        <CopyId id={m.user_id} of={usernames.get(m.user_id) || `user ${m.user_id.slice(0, 8)}`} />
                      </div>
                    </td>
                    <td>{m.method}</td>
                    <td>
                      <Pill tone={status?.tone ?? "plain"}>{status?.label ?? m.status}</Pill>
                    </td>
                    <td class="wrap">
                      {m.status_reason || <span class="muted">—</span>}
                      {/* Held by quiet hours or a read-aware wait: until when. A copy held for a digest waits for its window (docs/schedule.md). */}
                      {m.status === "pending" && m.next_retry_after && m.status_reason !== ScheduleMessages.heldDigest ? (
                        <span class="muted stacked" data-testid="held-until">
                          until <Time iso={m.next_retry_after} />
                        </span>
                      ) : null}
                    </td>
                    <td class="optional">{m.attempts}</td>
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

/**
 * The usernames of the users a page of the log names (the log itself carries ids only), each read once per visit
 * (GET /users/{user}); a user who is gone, or whom the caller may not read, keeps just the id.
 */
function useUsernames(messages: readonly Message[] | undefined): ReadonlyMap<string, string> {
  const known = useRef(new Map<string, string>());
  const [, setVersion] = useState(0);
  useEffect(() => {
    const missing = [...new Set((messages ?? []).map((m) => m.user_id))].filter((id) => !known.current.has(id));
    if (missing.length === 0) return;
    for (const id of missing) known.current.set(id, "");
    void Promise.all(
      missing.map((id) =>
        call(api.users[":user"].$get({ param: { user: id } })).then(
          (user) => known.current.set(id, user.username),
          () => undefined,
        ),
      ),
    ).then(() => setVersion((v) => v + 1));
  }, [messages]);
  return known.current;
}
