import { useEffect, useRef, useState } from "preact/hooks";
import { ConfirmButton } from "../account/confirm";
import { api, call } from "../api";
import { routeParam } from "../router";
import { isOwner, type Me } from "../session";
import { useAction } from "../ui/action";
import { Empty, Field, Loading, Notice, Page, ProblemAlert, SelectField, Time } from "../ui/components";
import { CreateUserForm } from "./create-user";
import { appendNew, CopyId, DataTable, Head, Pill } from "./parts";

type UserList = Awaited<ReturnType<typeof loadUsers>>;
export type User = UserList["users"][number];

const PAGE = 25;

function loadUsers(q: string, status: string, offset: number) {
  const only: { status?: "active" | "suspended" } = status === "active" || status === "suspended" ? { status } : {};
  return call(api.users.$get({ query: { q, limit: String(PAGE), offset: String(offset), ...only } }));
}

/** The site roles an owner may assign (docs/authorization.md, "Site roles"; `member` is everyone's and implicit). */
const ASSIGNABLE = [
  { name: "owner", label: "Owner" },
  { name: "user-admin", label: "User Admin" },
  { name: "auditor", label: "Auditor" },
] as const;
type RoleName = (typeof ASSIGNABLE)[number]["name"];

const isRoleName = (name: string): name is RoleName => ASSIGNABLE.some((role) => role.name === name);
const hasOwner = (user: User) => user.roles.some((role) => role.name === "owner");

const STATUS_OPTIONS = [
  { value: "", label: "Any status" },
  { value: "active", label: "Active" },
  { value: "suspended", label: "Suspended" },
];

/**
 * Fewer, wrapping columns (the name and id sit under the username), so the whole table, its actions included, fits a
 * 1280 px window; "Created" is the first to go where the window is narrower (docs/dashboard.md#tables).
 */
const COLUMNS = [
  { label: "User" },
  { label: "E-mail" },
  { label: "Roles" },
  { label: "Status" },
  { label: "Sign-in" },
  { label: "Created", optional: true },
  { label: "Actions" },
];

/**
 * Accounts (docs/api.md, "Sign-in, accounts and authorization"): search, create, suspend or activate, and, for owners,
 * site roles. Controls the API would refuse are not offered (docs/authorization.md, "Rules enforced in handlers"):
 * nobody suspends themself or changes their own roles, only owners manage owners and change roles.
 */
export function AdminUsersPage({ me }: { me: Me }) {
  const [q, setQ] = useState("");
  // A notice's link may open the page on a status (src/dashboard/router.ts, `takeDeepLink`).
  const [status, setStatus] = useState(() => routeParam("status") ?? "");
  const [list, setList] = useState<UserList | undefined>(undefined);
  const [editing, setEditing] = useState<string | undefined>(undefined);
  const [notice, setNotice] = useState("");
  const [showCreate, setShowCreate] = useState(false);

  const search = useAction(async (offset: number) => {
    const page = await loadUsers(q.trim(), status, offset);
    setList((current) => (offset > 0 && current ? { users: appendNew(current.users, page.users), count: page.count } : page));
  });
  const change = useAction(async (user: User, to: "suspend" | "activate") => {
    const updated = await call(api.users[":user"].status[":status{suspend|activate}"].$put({ param: { user: user.id, status: to } }));
    replace(updated);
    setNotice(`${updated.username} is ${updated.status === "suspended" ? "suspended" : "active"}.`);
  });
  const remove = useAction(async (user: User) => {
    await call(api.users[":user"].$delete({ param: { user: user.id } }));
    setList((current) => current && { users: current.users.filter((u) => u.id !== user.id), count: current.count - 1 });
    setNotice(`Deleted ${user.username}.`);
    // The row and its buttons are gone: focus goes to the list's heading rather than to the page's start.
    document.getElementById("users-list-heading")?.focus();
  });

  function replace(updated: User) {
    setList((current) => current && { ...current, users: current.users.map((u) => (u.id === updated.id ? updated : u)) });
  }

  useEffect(() => {
    void search.run(0);
  }, []);

  const owner = isOwner(me);
  return (
    <Page
      title="Users"
      actions={
        <button type="button" class="button-primary" aria-expanded={showCreate} onClick={() => setShowCreate(!showCreate)}>
          {showCreate ? "Close the new user form" : "New user"}
        </button>
      }
    >
      {showCreate ? (
        <CreateUserForm
          onCreated={(user) => {
            setNotice(`Created ${user.username}.`);
            setShowCreate(false);
            void search.run(0);
          }}
        />
      ) : null}
      {notice ? <Notice>{notice}</Notice> : null}
      <ProblemAlert problem={change.problem ?? remove.problem} />
      <section class="admin-section" aria-labelledby="users-list-heading">
        <h2 id="users-list-heading" tabIndex={-1}>
          Accounts
        </h2>
        <form
          class="filters"
          onSubmit={(event) => {
            event.preventDefault();
            setNotice("");
            void search.run(0);
          }}
        >
          <Field
            label="Search users"
            type="search"
            name="user-search"
            value={q}
            onValue={setQ}
            problem={search.problem}
            problemField="q"
            hint="Username, name or e-mail; or role:owner, login_type:oidc."
          />
          <SelectField label="Status" name="user-status" value={status} options={STATUS_OPTIONS} onValue={setStatus} />
          <button type="submit" disabled={search.pending}>
            Search
          </button>
        </form>
        <ProblemAlert problem={search.problem} shown={["q"]} />
        {list === undefined ? (
          search.pending ? (
            <Loading what="users" />
          ) : null
        ) : list.users.length === 0 ? (
          <Empty>No user matches.</Empty>
        ) : (
          <>
            <DataTable label="Users" fits>
              <Head columns={COLUMNS} />
              <tbody>
                {list.users.map((user) => {
                  const self = user.id === me.id;
                  // Only an owner manages another owner; nobody suspends or deletes themself (docs/authorization.md).
                  const mayChangeStatus = !self && (owner || !hasOwner(user));
                  const mayEditRoles = owner && !self;
                  return [
                    <tr key={user.id} data-testid="user-row" data-username={user.username} data-id={user.id}>
                      <td>
                        <UserCell user={user} self={self} />
                      </td>
                      <td class="email">{user.email}</td>
                      <td>{user.roles.length > 0 ? user.roles.map((role) => role.display_name).join(", ") : <span class="muted">Member</span>}</td>
                      <td>
                        <Pill tone={user.status === "active" ? "ok" : "danger"}>{user.status === "active" ? "Active" : "Suspended"}</Pill>
                      </td>
                      <td>{user.service_account ? "service account" : user.login_type}</td>
                      <td class="optional">
                        <Time iso={user.created_at} />
                      </td>
                      <td>
                        <div class="actions">
                          {mayChangeStatus && user.status === "active" ? (
                            <ConfirmButton
                              id={`suspend-${user.id}`}
                              label="Suspend"
                              name={`Suspend ${user.username}`}
                              question={`Suspending ${user.username} ends every session and token of theirs; they cannot sign in until activated. Suspend?`}
                              about={`user ${user.username}`}
                              disabled={change.pending}
                              onConfirm={() => void change.run(user, "suspend")}
                            />
                          ) : null}
                          {mayChangeStatus && user.status !== "active" ? (
                            <button
                              type="button"
                              aria-label={`Activate ${user.username}`}
                              disabled={change.pending}
                              onClick={() => void change.run(user, "activate")}
                            >
                              Activate
                            </button>
                          ) : null}
                          {mayEditRoles ? (
                            <button
                              type="button"
                              aria-label={`Edit roles of ${user.username}`}
                              data-edit-roles={user.id}
                              aria-expanded={editing === user.id}
                              onClick={() => setEditing(editing === user.id ? undefined : user.id)}
                            >
                              Edit roles
                            </button>
                          ) : null}
                          {mayChangeStatus ? (
                            <ConfirmButton
                              id={`delete-${user.id}`}
                              label="Delete"
                              name={`Delete ${user.username}`}
                              question={`Deleting ${user.username} removes the account for good: every session and token of theirs ends, and nothing more reaches them. Delete?`}
                              about={`user ${user.username}`}
                              disabled={remove.pending}
                              onConfirm={() => void remove.run(user)}
                            />
                          ) : null}
                        </div>
                      </td>
                    </tr>,
                    editing === user.id ? (
                      <tr key={`${user.id}-roles`} class="editor-row" data-testid="role-editor">
                        <td colSpan={COLUMNS.length}>
                          <RoleEditor
                            user={user}
                            onDone={(updated) => {
                              setEditing(undefined);
                              focusLater(`[data-edit-roles="${user.id}"]`);
                              if (updated) {
                                replace(updated);
                                setNotice(`Saved the roles of ${updated.username}.`);
                              }
                            }}
                          />
                        </td>
                      </tr>
                    ) : null,
                  ];
                })}
              </tbody>
            </DataTable>
            <div class="pager">
              <span class="muted" data-testid="user-count">
                Showing {list.users.length} of {list.count}
              </span>
              {list.users.length < list.count ? (
                <button type="button" disabled={search.pending} onClick={() => void search.run(list.users.length)}>
                  {search.pending ? "Loading…" : "Load more"}
                </button>
              ) : null}
            </div>
          </>
        )}
      </section>
    </Page>
  );
}

/** The username, the name under it, and the id, short with a button that copies it whole. */
function UserCell({ user, self }: { user: User; self: boolean }) {
  return (
    <div class="user-cell">
      <span>
        <strong>{user.username}</strong>
        {self ? <span class="muted"> (you)</span> : null}
      </span>
      {user.name ? <span class="muted">{user.name}</span> : null}
      <CopyId id={user.id} of={user.username} />
    </div>
  );
}

/** Gives focus back to the control that opened an editor, once the editor is gone. */
function focusLater(selector: string) {
  requestAnimationFrame(() => document.querySelector<HTMLElement>(selector)?.focus());
}

/** Checkboxes for the assignable site roles (PUT /users/{user}/roles sends the whole set). */
function RoleEditor({ user, onDone }: { user: User; onDone(updated?: User): void }) {
  const [roles, setRoles] = useState<RoleName[]>(user.roles.map((role) => role.name).filter(isRoleName));
  const first = useRef<HTMLInputElement>(null);
  useEffect(() => first.current?.focus(), []);
  const save = useAction(async () => {
    onDone(await call(api.users[":user"].roles.$put({ param: { user: user.id }, json: { roles } })));
  });
  const toggle = (name: RoleName, on: boolean) => setRoles((current) => (on ? [...current, name] : current.filter((r) => r !== name)));
  return (
    <form
      class="stack"
      onSubmit={(event) => {
        event.preventDefault();
        void save.run();
      }}
    >
      <ProblemAlert problem={save.problem} />
      <fieldset class="choices">
        <legend>Site roles of {user.username}</legend>
        <div class="choice-list">
          {ASSIGNABLE.map((role, i) => (
            <label key={role.name} class="choice">
              <input
                ref={i === 0 ? first : undefined}
                type="checkbox"
                name={`role-${role.name}`}
                checked={roles.includes(role.name)}
                onChange={(event) => toggle(role.name, event.currentTarget.checked)}
              />
              {role.label}
            </label>
          ))}
        </div>
        <p class="hint">Everyone is a member; these roles add to it.</p>
      </fieldset>
      <div class="row">
        <button type="submit" class="button-primary" disabled={save.pending}>
          {save.pending ? "Saving…" : "Save roles"}
        </button>
        <button type="button" onClick={() => onDone()}>
          Cancel
        </button>
      </div>
    </form>
  );
}
