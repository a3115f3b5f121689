import { useEffect, useState } from "preact/hooks";
import { MANDATORY_TEMPLATE_IDS, TEMPLATE_IDS } from "../../notifications/templates";
import { api, call } from "../api";
import { useAction } from "../ui/action";
import { Loading, Notice, ProblemAlert } from "../ui/components";
import { loadTemplates } from "./templates";

type Switch = Awaited<ReturnType<typeof loadSwitches>>[number];
type Template = Awaited<ReturnType<typeof loadTemplates>>[number];

function loadSwitches() {
  return call(api.users[":user"].notifications.channels.$get({ param: { user: "me" } }));
}

/**
 * Mandatory templates reach e-mail and push, locked on, but never the person's own channels; the passcode goes by
 * e-mail only (docs/channels.md, "One copy per destination").
 */
const MANDATORY = new Set<string>(MANDATORY_TEMPLATE_IDS);
const EMAIL_ONLY = new Set<string>([TEMPLATE_IDS.oneTimePasscode]);
/** The API takes at most this many switches per PUT. */
const PER_PUT = 100;

const key = (templateId: string, channel: string) => `${templateId} ${channel}`;

/**
 * Preferences → "Where each notification goes" (docs/dashboard.md, "Channels"): a grid of templates × channels —
 * e-mail, push to every subscribed browser, and each of the person's own targets — with mandatory templates shown on
 * and locked. Saving sends only the switches that changed.
 */
export function ChannelGrid() {
  const [templates, setTemplates] = useState<Template[] | undefined>(undefined);
  const [targets, setTargets] = useState<{ id: string; name: string }[]>([]);
  const [stored, setStored] = useState<Map<string, boolean>>(new Map());
  const [shown, setShown] = useState<Map<string, boolean>>(new Map());
  const [saved, setSaved] = useState(false);

  const apply = (switches: Switch[]) => {
    const map = new Map(switches.map((s) => [key(s.template_id, s.channel), s.enabled]));
    setStored(map);
    setShown(new Map(map));
  };

  const load = useAction(async () => {
    const [all, switches, mine] = await Promise.all([
      loadTemplates(),
      loadSwitches(),
      call(api.users[":user"]["notification-targets"].$get({ param: { user: "me" } })),
    ]);
    setTemplates(all);
    setTargets(mine.map((t) => ({ id: t.id, name: t.name })));
    apply(switches);
  });
  useEffect(() => void load.run(), [load.run]);

  const save = useAction(async () => {
    const changed = [...shown]
      .filter(([k, on]) => stored.get(k) !== on)
      .map(([k, enabled]) => {
        const [template_id = "", channel = ""] = k.split(" ");
        return { template_id, channel, enabled };
      });
    let latest: Switch[] | undefined;
    for (let i = 0; i < changed.length; i += PER_PUT) {
      latest = await call(api.users[":user"].notifications.channels.$put({ param: { user: "me" }, json: changed.slice(i, i + PER_PUT) }));
    }
    if (latest) apply(latest);
    setSaved(true);
  });

  if (templates === undefined) return load.problem ? <ProblemAlert problem={load.problem} /> : <Loading what="channels" />;
  const channels = [
    { id: "email", label: "E-mail" },
    { id: "push", label: "Push" },
    ...targets.map((t) => ({ id: `target:${t.id}`, label: t.name })),
  ];
  return (
    <form
      class="stack"
      onSubmit={(event) => {
        event.preventDefault();
        if (!save.pending) void save.run();
      }}
    >
      <div class="table-wrap">
        <table class="channel-grid" data-testid="channel-grid">
          <caption class="visually-hidden">Which notifications reach each channel</caption>
          <thead>
            <tr>
              <th scope="col">Notification</th>
              {channels.map((c) => (
                <th key={c.id} scope="col">
                  {c.label}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {templates.map((template) => (
              <tr key={template.id}>
                <th scope="row">
                  {template.name}
                  {MANDATORY.has(template.id) ? <span class="muted"> · always sent</span> : null}
                </th>
                {channels.map((channel) => {
                  const k = key(template.id, channel.id);
                  const locked = MANDATORY.has(template.id);
                  const never = EMAIL_ONLY.has(template.id) ? channel.id !== "email" : locked && channel.id.startsWith("target:");
                  return (
                    <td key={channel.id}>
                      {never ? (
                        <span
                          class="muted"
                          title={EMAIL_ONLY.has(template.id) ? "A passcode goes by e-mail only" : "Security notices never go to your own channels"}
                        >
                          —
                        </span>
                      ) : (
                        <input
                          type="checkbox"
                          aria-label={`${template.name} by ${channel.label}`}
                          checked={locked || (shown.get(k) ?? true)}
                          disabled={locked}
                          onChange={(event) => {
                            const on = event.currentTarget.checked;
                            setSaved(false);
                            save.clear();
                            setShown((before) => new Map(before).set(k, on));
                          }}
                        />
                      )}
                    </td>
                  );
                })}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <ProblemAlert problem={save.problem} />
      {saved ? <Notice>Channels saved.</Notice> : null}
      <div>
        <button type="submit" aria-disabled={save.pending}>
          {save.pending ? "Saving…" : "Save channels"}
        </button>
      </div>
    </form>
  );
}
