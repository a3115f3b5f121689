import { useEffect, useState } from "preact/hooks";
import { MANDATORY_TEMPLATE_IDS, TEMPLATE_IDS } from "../../notifications/templates";
import { ApiProblem, api, asProblem, call } from "../api";
import type { Me } from "../session";
import { useAction } from "../ui/action";
import { Empty, Loading, Notice, Page, ProblemAlert } from "../ui/components";
import { ChannelGrid } from "./channel-grid";
import { QuietHoursAndDigest } from "./schedule";
import "./account.css";
import { loadTemplates } from "./templates";

type Template = Awaited<ReturnType<typeof loadTemplates>>[number];
type Preference = { id: string; disabled: boolean };

/**
 * The templates that ignore preferences and cannot be disabled (docs/api.md, "Templates"). The template list does not
 * flag them, so they are named from the catalogue's ids; any other the API refuses is locked when it says so.
 */
const MANDATORY = new Set<string>(MANDATORY_TEMPLATE_IDS);
const MANDATORY_REASON = "Always sent: it tells you about your account's security, so it cannot be turned off.";
/** External-only templates never reach the inbox (docs/api.md, "Templates"): the One-Time Passcode. */
const EXTERNAL_ONLY = new Set<string>([TEMPLATE_IDS.oneTimePasscode]);
/** The field a refusal names for one template (`template_disabled_map.<id>`: one validation per bad key, docs/api.md, N13). */
const FIELD_PREFIX = "template_disabled_map.";

const METHOD_NAMES: Record<string, string> = { smtp: "e-mail", webhook: "webhook" };

/** The deployment's default method, for templates whose `method` is "" (docs/api.md, N2); unknown if it cannot be read. */
async function loadDefaultMethod(): Promise<string | undefined> {
  try {
    const methods = await call(api.notifications["dispatch-methods"].$get());
    return methods[0]?.default;
  } catch {
    return undefined;
  }
}

function delivery(template: Template, defaultMethod: string | undefined): string {
  const method = template.method
    ? (METHOD_NAMES[template.method] ?? template.method)
    : defaultMethod
      ? `${METHOD_NAMES[defaultMethod] ?? defaultMethod} (the default)`
      : "the default method";
  return EXTERNAL_ONLY.has(template.id) ? `Sent by ${method} only` : `Sent by ${method} and to your inbox`;
}

/** On, unless the person turned it off, or never chose and it is off by default (docs/api.md, "Enqueue rules"). */
function enabledMap(templates: Template[], preferences: Preference[]): Record<string, boolean> {
  const set = new Map(preferences.map((p) => [p.id, !p.disabled]));
  return Object.fromEntries(templates.map((t) => [t.id, MANDATORY.has(t.id) || (set.get(t.id) ?? t.enabled_by_default)]));
}

/** Groups in the order they first appear (the API lists templates by name). */
function byGroup(templates: Template[]): [string, Template[]][] {
  const groups = new Map<string, Template[]>();
  for (const t of templates) groups.set(t.group || "Other", [...(groups.get(t.group || "Other") ?? []), t]);
  return [...groups];
}

export function PreferencesPage(_props: { me: Me }) {
  const [templates, setTemplates] = useState<Template[] | undefined>(undefined);
  const [defaultMethod, setDefaultMethod] = useState<string | undefined>(undefined);
  const [enabled, setEnabled] = useState<Record<string, boolean>>({});
  /** Templates the API refused to disable, with its reason. */
  const [locked, setLocked] = useState<Record<string, string>>({});
  const [saved, setSaved] = useState(false);

  const load = useAction(async () => {
    const [all, preferences, method] = await Promise.all([
      loadTemplates(),
      call(api.users[":user"].notifications.preferences.$get({ param: { user: "me" } })),
      loadDefaultMethod(),
    ]);
    setTemplates(all);
    setDefaultMethod(method);
    setEnabled(enabledMap(all, preferences));
  });
  useEffect(() => void load.run(), [load.run]);

  const save = useAction(async () => {
    if (!templates) return;
    // The whole map: every template with its state, so what is saved is exactly what the page shows.
    const map = Object.fromEntries(templates.map((t) => [t.id, !enabled[t.id]]));
    try {
      const preferences = await call(
        api.users[":user"].notifications.preferences.$put({ param: { user: "me" }, json: { template_disabled_map: map } }),
      );
      setEnabled(enabledMap(templates, preferences));
      setSaved(true);
    } catch (error) {
      const refused = error instanceof ApiProblem ? error.validations.filter((v) => v.field.startsWith(FIELD_PREFIX)) : [];
      if (refused.length === 0) throw asProblem(error);
      // Nothing was saved (docs/api.md, N13): the refused templates go back to on and stay locked; saving again keeps
      // the other changes.
      const reasons = Object.fromEntries(refused.map((v) => [v.field.slice(FIELD_PREFIX.length), v.detail]));
      setLocked((before) => ({ ...before, ...reasons }));
      setEnabled((before) => ({ ...before, ...Object.fromEntries(Object.keys(reasons).map((id) => [id, true])) }));
      throw new ApiProblem(
        400,
        "Some notifications cannot be turned off.",
        "They are marked below and were left on. Nothing was saved yet: save again to keep your other changes.",
      );
    }
  });

  const toggle = (id: string, on: boolean) => {
    setSaved(false);
    save.clear();
    setEnabled((before) => ({ ...before, [id]: on }));
  };

  return (
    <Page title="Preferences">
      <p class="muted">Choose which notifications you receive. Turning one off stops every copy of it: the e-mail or webhook and the inbox.</p>
      <ProblemAlert problem={load.problem} />
      {templates === undefined ? (
        load.problem ? null : (
          <Loading what="notification preferences" />
        )
      ) : templates.length === 0 ? (
        <Empty>There are no notification templates.</Empty>
      ) : (
        <form
          class="stack"
          onSubmit={(event) => {
            event.preventDefault();
            if (!save.pending) void save.run();
          }}
        >
          {byGroup(templates).map(([group, list]) => (
            <section key={group} class="pref-group" aria-labelledby={`group-${slug(group)}`}>
              <h2 id={`group-${slug(group)}`}>{group}</h2>
              <ul class="pref-list">
                {list.map((template) => (
                  <TemplateRow
                    key={template.id}
                    template={template}
                    delivery={delivery(template, defaultMethod)}
                    enabled={enabled[template.id] ?? true}
                    lockedReason={MANDATORY.has(template.id) ? MANDATORY_REASON : locked[template.id]}
                    onToggle={(on) => toggle(template.id, on)}
                  />
                ))}
              </ul>
            </section>
          ))}
          <ProblemAlert problem={save.problem} />
          {saved ? <Notice>Preferences saved.</Notice> : null}
          <div>
            <button type="submit" class="button-primary" aria-disabled={save.pending}>
              {save.pending ? "Saving…" : "Save preferences"}
            </button>
          </div>
        </form>
      )}
      <section class="pref-group stack" aria-labelledby="channels-heading">
        <h2 id="channels-heading">Where each notification goes</h2>
        <p class="muted">
          Turn a notification off for one channel only: your e-mail, push to your browsers (Account → Devices), or one of your own channels (Account →
          Channels). The inbox always gets it.
        </p>
        <ChannelGrid />
      </section>
      <QuietHoursAndDigest />
    </Page>
  );
}

function slug(text: string): string {
  return text.replace(/[^a-z0-9]+/gi, "-").toLowerCase();
}

function TemplateRow({
  template,
  delivery,
  enabled,
  lockedReason,
  onToggle,
}: {
  template: Template;
  delivery: string;
  enabled: boolean;
  lockedReason: string | undefined;
  onToggle(on: boolean): void;
}) {
  const id = `pref-${template.id}`;
  return (
    <li class="pref-row" data-testid="template-preference" data-id={template.id}>
      <div class="pref-text">
        <span class="pref-name" id={`${id}-name`}>
          {template.name}
        </span>
        <span class="muted" id={`${id}-delivery`}>
          {delivery}
          {template.enabled_by_default ? "" : " · off unless you turn it on"}
        </span>
        {lockedReason ? (
          <span class="pref-locked" id={`${id}-locked`}>
            {lockedReason}
          </span>
        ) : null}
      </div>
      <div class="account-check">
        <input
          type="checkbox"
          id={id}
          checked={lockedReason ? true : enabled}
          disabled={lockedReason !== undefined}
          aria-labelledby={`${id}-name ${id}-label`}
          aria-describedby={lockedReason ? `${id}-delivery ${id}-locked` : `${id}-delivery`}
          onChange={(event) => onToggle(event.currentTarget.checked)}
        />
        <label id={`${id}-label`} for={id}>
          Enabled
        </label>
      </div>
    </li>
  );
}
