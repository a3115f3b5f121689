import { useEffect, useState } from "preact/hooks";
import { TEMPLATE_IDS } from "../../notifications/templates";
import { api, call } from "../api";
import { isOwner, type Me } from "../session";
import { useAction } from "../ui/action";
import { Loading, Page, ProblemAlert } from "../ui/components";
import { DataTable, Head, Pill } from "./parts";

type Template = Awaited<ReturnType<typeof loadTemplates>>[number];

async function loadTemplates() {
  const [system, custom] = await Promise.all([call(api.notifications.templates.system.$get()), call(api.notifications.templates.custom.$get())]);
  return [...system, ...custom];
}

/**
 * Whether a template has an inbox copy, so its e-mail can wait for it to be read: every system template but the
 * external-only One-Time Passcode (docs/api.md, "Templates"); custom templates are read-aware per broadcast instead
 * (docs/broadcasts.md#read-aware-e-mail).
 */
const readAware = (t: Template) => t.kind === "system" && t.id !== TEMPLATE_IDS.oneTimePasscode;

const COLUMNS = ["Name", "Group", "Kind", "Method", "Enabled by default", "E-mail when unread after"];

/**
 * The template catalogue (GET /notifications/templates/system and /custom) and each system template's read-aware
 * e-mail wait, which owners set (PUT /notifications/templates/{id}/settings is owner-only, docs/authorization.md).
 */
export function AdminTemplatesPage({ me }: { me: Me }) {
  const owner = isOwner(me);
  const [templates, setTemplates] = useState<Template[] | undefined>(undefined);
  const [waits, setWaits] = useState<Record<string, string>>({});
  const load = useAction(async () => {
    const all = await loadTemplates();
    setTemplates(all);
    const settings = await Promise.all(
      all.filter(readAware).map((t) => call(api.notifications.templates[":id"].settings.$get({ param: { id: t.id } }))),
    );
    setWaits(Object.fromEntries(settings.map((s) => [s.id, s.email_when_unread_after])));
  });

  useEffect(() => {
    void load.run();
  }, []);

  return (
    <Page title="Templates">
      <p>
        What each notification says and how it is sent. With a wait set, a template's e-mail goes out only if its inbox copy is still unread and not
        archived by then; otherwise the message log records it as skipped.
      </p>
      <p class="hint">
        {owner
          ? 'A wait is written like "15m" or "1h30m", at most "24h"; leave it empty to send the e-mail at once. It applies to notifications sent afterwards.'
          : "Only owners can change the e-mail wait."}
      </p>
      <ProblemAlert problem={load.problem} />
      {templates === undefined ? (
        load.pending ? (
          <Loading what="templates" />
        ) : null
      ) : (
        <DataTable label="Notification templates">
          <Head columns={COLUMNS} />
          <tbody>
            {templates.map((t) => (
              <tr key={t.id} data-testid="template-row" data-template-id={t.id}>
                <td>{t.name}</td>
                <td>{t.group}</td>
                <td>
                  <Pill tone={t.kind === "system" ? "plain" : "accent"}>{t.kind}</Pill>
                </td>
                <td>{t.method === "" ? <span class="muted">deployment default</span> : t.method}</td>
                <td>{t.enabled_by_default ? "Yes" : "No"}</td>
                <td>
                  {!readAware(t) ? (
                    <span class="muted">
                      {t.kind === "system" ? "no inbox copy" : t.id === TEMPLATE_IDS.broadcast ? "set per broadcast" : "system templates only"}
                    </span>
                  ) : waits[t.id] === undefined ? (
                    <span class="muted">…</span>
                  ) : owner ? (
                    <WaitEditor template={t} value={waits[t.id] ?? ""} onSaved={(value) => setWaits({ ...waits, [t.id]: value })} />
                  ) : (
                    <span>{waits[t.id] || "at once"}</span>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </DataTable>
      )}
    </Page>
  );
}

/** One template's wait: a duration such as "15m" or "1h30m" (≤ "24h"); empty sends the e-mail at once. */
function WaitEditor({ template, value, onSaved }: { template: Template; value: string; onSaved(value: string): void }) {
  const [draft, setDraft] = useState(value);
  const [saved, setSaved] = useState(false);
  const save = useAction(async () => {
    const result = await call(
      api.notifications.templates[":id"].settings.$put({ param: { id: template.id }, json: { email_when_unread_after: draft.trim() } }),
    );
    onSaved(result.email_when_unread_after);
    setDraft(result.email_when_unread_after);
    setSaved(true);
  });
  const id = `wait-${template.id}`;
  const error = save.problem ? (save.problem.about("email_when_unread_after") ?? save.problem.message) : undefined;
  return (
    <form
      class="inline-form"
      onSubmit={(event) => {
        event.preventDefault();
        setSaved(false);
        void save.run();
      }}
    >
      <label for={id} class="visually-hidden">
        E-mail wait for {template.name}
      </label>
      <input
        id={id}
        type="text"
        name={id}
        value={draft}
        placeholder="at once"
        aria-invalid={error ? "true" : undefined}
        aria-describedby={error ? `${id}-error` : undefined}
        onInput={(event) => {
          setDraft(event.currentTarget.value);
          setSaved(false);
        }}
      />
      <button type="submit" aria-label={`Save the wait of ${template.name}`} disabled={save.pending || draft.trim() === value}>
        Save
      </button>
      <span role="status" class="muted">
        {saved ? "Saved" : ""}
      </span>
      {error ? (
        <small id={`${id}-error`} class="field-error">
          {error}
        </small>
      ) : null}
    </form>
  );
}
