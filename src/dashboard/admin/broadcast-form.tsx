import { useRef, useState } from "preact/hooks";
import { api, call } from "../api";
import { useAction } from "../ui/action";
import { Field, Notice, ProblemAlert } from "../ui/components";
import { TextAreaField } from "./parts";

type Request = Parameters<typeof api.notifications.broadcasts.$post>[0];
type Audience = Request["json"]["audience"];
type AudienceKind = "all" | "roles" | "user_ids" | "organization_id";
type AudienceRole = "member" | "owner" | "user-admin" | "auditor";

const KINDS: readonly { value: AudienceKind; label: string }[] = [
  { value: "all", label: "Everyone" },
  { value: "roles", label: "Holders of site roles" },
  { value: "user_ids", label: "Listed users" },
  { value: "organization_id", label: "An organization's members" },
];

/** The roles an audience may name; `member` is everyone (docs/broadcasts.md, "Audience"). */
const ROLES: readonly { value: AudienceRole; label: string }[] = [
  { value: "member", label: "Member (everyone)" },
  { value: "owner", label: "Owner" },
  { value: "user-admin", label: "User Admin" },
  { value: "auditor", label: "Auditor" },
];

const lines = (text: string) =>
  text
    .split(/[\n,]/)
    .map((line) => line.trim())
    .filter(Boolean);

/**
 * POST /notifications/broadcasts (docs/broadcasts.md). Each broadcast the person composes gets one `Idempotency-Key`,
 * kept until the server has accepted it: a double click, or a retry after a lost answer, repeats the same request and
 * the server answers the first 202 again instead of sending twice (docs/broadcasts.md#idempotency-key). After a 202 the
 * next broadcast gets a fresh key.
 */
export function BroadcastForm({ onSent }: { onSent(): void }) {
  const [kind, setKind] = useState<AudienceKind>("all");
  const [roles, setRoles] = useState<AudienceRole[]>([]);
  const [userIds, setUserIds] = useState("");
  const [organization, setOrganization] = useState("");
  const [title, setTitle] = useState("");
  const [message, setMessage] = useState("");
  const [wait, setWait] = useState("");
  const [sent, setSent] = useState("");
  const key = useRef(crypto.randomUUID());
  const sending = useRef(false);

  const send = useAction(async () => {
    const audience: Audience =
      kind === "all"
        ? { all: true }
        : kind === "roles"
          ? { roles }
          : kind === "user_ids"
            ? { user_ids: lines(userIds) }
            : { organization_id: organization.trim() };
    const json = { audience, content: { title: title.trim(), message: message.trim() }, email_when_unread_after: wait.trim() };
    const created = await call(api.notifications.broadcasts.$post({ json, header: { "idempotency-key": key.current } }));
    key.current = crypto.randomUUID();
    setTitle("");
    setMessage("");
    setSent(`Broadcast accepted for ${created.recipients} ${created.recipients === 1 ? "recipient" : "recipients"}.`);
    onSent();
  });

  const problem = send.problem;
  const about = (field: string) => problem?.about(field);
  // Listed ids are refused one by one (`audience.user_ids.N`, N counting the ids sent).
  const listed = lines(userIds);
  const idErrors = (problem?.validations ?? [])
    .filter((v) => v.field.startsWith("audience.user_ids"))
    .map((v) => {
      const index = Number(v.field.split(".")[2]);
      return Number.isInteger(index) ? `${listed[index] ?? `id ${index + 1}`}: ${v.detail}` : v.detail;
    });

  return (
    <section class="admin-section card" aria-labelledby="send-heading">
      <h2 id="send-heading">Send a broadcast</h2>
      <form
        class="admin-form"
        data-testid="broadcast-form"
        onSubmit={async (event) => {
          event.preventDefault();
          if (sending.current) return;
          sending.current = true;
          setSent("");
          await send.run();
          sending.current = false;
        }}
      >
        <div class="span-all">
          <ProblemAlert problem={problem} />
          {sent ? <Notice>{sent}</Notice> : null}
        </div>
        <fieldset class="choices span-all">
          <legend>Audience</legend>
          <div class="choice-list">
            {KINDS.map((k) => (
              <label key={k.value} class="choice">
                <input type="radio" name="audience" value={k.value} checked={kind === k.value} onChange={() => setKind(k.value)} />
                {k.label}
              </label>
            ))}
          </div>
        </fieldset>
        {kind === "roles" ? (
          <fieldset class="choices span-all">
            <legend>Roles</legend>
            <div class="choice-list">
              {ROLES.map((role) => (
                <label key={role.value} class="choice">
                  <input
                    type="checkbox"
                    name={`audience-role-${role.value}`}
                    checked={roles.includes(role.value)}
                    onChange={(event) => {
                      const on = event.currentTarget.checked;
                      setRoles((current) => (on ? [...current, role.value] : current.filter((r) => r !== role.value)));
                    }}
                  />
                  {role.label}
                </label>
              ))}
            </div>
            {about("audience.roles") ? <p class="field-error">{about("audience.roles")}</p> : null}
          </fieldset>
        ) : null}
        {kind === "user_ids" ? (
          <div class="span-all">
            <TextAreaField
              label="User ids, one per line"
              name="audience-user-ids"
              value={userIds}
              onValue={setUserIds}
              hint="Up to 1,000 user ids. Suspended and deleted users are skipped."
              error={idErrors.length > 0 ? idErrors.join("; ") : about("audience")}
            />
          </div>
        ) : null}
        {kind === "organization_id" ? (
          <Field
            label="Organization id"
            name="audience-organization"
            value={organization}
            onValue={setOrganization}
            problem={problem}
            problemField="audience.organization_id"
          />
        ) : null}
        <div class="span-all">
          <Field
            label="Title"
            name="broadcast-title"
            value={title}
            onValue={setTitle}
            problem={problem}
            problemField="content.title"
            hint="Up to 120 characters."
          />
        </div>
        <div class="span-all">
          <TextAreaField
            label="Message"
            name="broadcast-message"
            value={message}
            onValue={setMessage}
            hint="Markdown, up to 2,000 characters. A title or a message is needed."
            error={about("content.message") ?? about("content")}
          />
        </div>
        <Field
          label="E-mail only if still unread after"
          name="broadcast-wait"
          value={wait}
          onValue={setWait}
          problem={problem}
          problemField="email_when_unread_after"
          placeholder="at once"
          hint='For example "15m" or "1h30m", at most "24h". Empty sends the e-mail at once.'
        />
        <div class="span-all row">
          <button type="submit" class="button-primary" disabled={send.pending}>
            {send.pending ? "Sending…" : "Send broadcast"}
          </button>
        </div>
      </form>
    </section>
  );
}
