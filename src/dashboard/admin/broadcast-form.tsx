import { useRef, useState } from "preact/hooks";
import { api, call } from "../api";
import { session } from "../session";
import { useAction } from "../ui/action";
import { Field, Notice, type Option, ProblemAlert, SelectField } from "../ui/components";
import { useStore } from "../ui/store";
import { ShortId, TextAreaField } from "./parts";
import { nameOf, type PickedUser, UserPicker } from "./user-picker";

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

/** The organization select's last choice: an organization the page does not know, by its pasted id. */
const OTHER = "other";

/**
 * POST /notifications/broadcasts (docs/broadcasts.md). Each broadcast the person composes gets one `Idempotency-Key`,
 * kept until the server has accepted it: a double click, or a retry after a lost answer, repeats the same request and
 * the server answers the first 202 again instead of sending twice (docs/broadcasts.md#idempotency-key). After a 202 the
 * next broadcast gets a fresh key.
 */
export function BroadcastForm({ onSent }: { onSent(): void }) {
  const [kind, setKind] = useState<AudienceKind>("all");
  const [roles, setRoles] = useState<AudienceRole[]>([]);
  const [picked, setPicked] = useState<PickedUser[]>([]);
  const [pickerText, setPickerText] = useState("");
  const organizations = useOrganizations();
  const [organization, setOrganization] = useState(organizations.options[0]?.value ?? OTHER);
  const [organizationId, setOrganizationId] = useState("");
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
            ? { user_ids: picked.map((user) => user.id) }
            : { organization_id: organization === OTHER ? organizationId.trim() : organization };
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
          <ProblemAlert problem={problem} shown={["audience", "content", "email_when_unread_after"]} />
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
            {(about("audience.roles") ?? about("audience")) ? <p class="field-error">{about("audience.roles") ?? about("audience")}</p> : null}
          </fieldset>
        ) : null}
        {kind === "user_ids" ? (
          <div class="span-all">
            <ListedUsers
              picked={picked}
              text={pickerText}
              onText={setPickerText}
              onChange={setPicked}
              error={about("audience.user_ids") ?? about("audience")}
              errorOf={(index) => about(`audience.user_ids.${index}`)}
            />
          </div>
        ) : null}
        {kind === "organization_id" ? (
          <div class="span-all admin-form">
            <SelectField
              label="Organization"
              name="audience-organization"
              value={organization}
              options={[...organizations.options, { value: OTHER, label: "Another organization, by its id" }]}
              onValue={setOrganization}
              error={organization === OTHER ? undefined : (about("audience.organization_id") ?? about("audience"))}
            />
            {organization === OTHER ? (
              <Field
                label="Organization id"
                name="audience-organization-id"
                value={organizationId}
                onValue={setOrganizationId}
                problem={problem}
                problemField="audience.organization_id"
              />
            ) : (
              <MemberPicker
                onFound={(options) => {
                  organizations.add(options);
                  if (options[0]) setOrganization(options[0].value);
                }}
              />
            )}
          </div>
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

/**
 * The listed users: picked by username, name or e-mail (or a pasted id), each shown with a button that removes it. A
 * refused one (`audience.user_ids.N`, N counting the ids sent) says why beside its name.
 */
function ListedUsers({
  picked,
  text,
  onText,
  onChange,
  error,
  errorOf,
}: {
  picked: readonly PickedUser[];
  text: string;
  onText(text: string): void;
  onChange(users: PickedUser[]): void;
  error: string | undefined;
  errorOf(index: number): string | undefined;
}) {
  return (
    <div>
      <UserPicker
        id="field-audience-users"
        label="Add users"
        hint="Username, name or e-mail; or paste user ids. Up to 1,000 users; suspended and deleted users are skipped."
        multiple
        text={text}
        onText={onText}
        onPick={(users) => {
          onChange([...picked, ...users]);
          onText("");
        }}
        exclude={picked.map((user) => user.id)}
        error={error}
      />
      {picked.length > 0 ? (
        <ul class="picked-list" aria-label={`Listed users (${picked.length})`} data-testid="listed-users">
          {picked.map((user, index) => {
            const refused = errorOf(index);
            return (
              <li key={user.id} class={refused ? "picked invalid" : "picked"}>
                {user.username ? <strong>{user.username}</strong> : <ShortId id={user.id} />}
                {refused ? (
                  <small id={`listed-${user.id}-error`} class="field-error">
                    {refused}
                  </small>
                ) : null}
                <button
                  type="button"
                  class="button-small button-quiet"
                  aria-label={`Remove ${nameOf(user)}`}
                  aria-describedby={refused ? `listed-${user.id}-error` : undefined}
                  onClick={() => onChange(picked.filter((other) => other.id !== user.id))}
                >
                  Remove
                </button>
              </li>
            );
          })}
        </ul>
      ) : null}
    </div>
  );
}

/**
 * The organizations the page can name. The API lists no organizations and names none (docs/dashboard.md#picking-users):
 * the choices are the caller's own organizations, and those of members found with MemberPicker, each named by whose
 * it is and its short id.
 */
function useOrganizations(): { options: Option[]; add(options: Option[]): void } {
  const state = useStore(session);
  const mine = state.kind === "signed-in" ? state.me.organization_ids : [];
  const [options, setOptions] = useState<Option[]>(() =>
    mine.map((id, i) => ({ value: id, label: `Your organization${mine.length > 1 ? ` ${i + 1}` : ""} (${id.slice(0, 8)})` })),
  );
  const add = (more: Option[]) => setOptions((current) => [...current, ...more.filter((o) => !current.some((c) => c.value === o.value))]);
  return { options, add };
}

/** Finds an organization through one of its members: picking the member offers (and selects) their organizations. */
function MemberPicker({ onFound }: { onFound(options: Option[]): void }) {
  const [text, setText] = useState("");
  const [said, setSaid] = useState("");
  return (
    <div>
      <UserPicker
        id="field-organization-member"
        label="Or find it through a member"
        hint="Username, name or e-mail of someone in the organization."
        text={text}
        onText={(next) => {
          setText(next);
          setSaid("");
        }}
        onPick={([user]) => {
          if (!user) return;
          setText("");
          const found = user.organizationIds.map((id) => ({ value: id, label: `${nameOf(user)}'s organization (${id.slice(0, 8)})` }));
          onFound(found);
          setSaid(found.length > 0 ? `Chose ${nameOf(user)}'s organization.` : `${nameOf(user)} is in no organization the page can see.`);
        }}
      />
      <p class="hint" role="status">
        {said}
      </p>
    </div>
  );
}
