import type { ComponentChildren } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { ApiProblem, api, call } from "../api";
import { useAction } from "../ui/action";
import { Field, Notice, ProblemAlert } from "../ui/components";
import { plainDetail } from "../ui/plain-words";
import { LIFETIMES } from "./labels";

const ALL = "all";
const DEFAULT_LIFETIME = LIFETIMES[1]?.seconds ?? 604800;

/**
 * Makes a named API token (POST /users/{user}/keys/tokens). Its secret comes back once: it is kept in this
 * component's state only — never in storage or the URL — and dropped when the person presses Done or leaves.
 */
export function NewTokenForm({ onCreated }: { onCreated(): void }) {
  const [name, setName] = useState("");
  const [lifetime, setLifetime] = useState(DEFAULT_LIFETIME);
  const [scopes, setScopes] = useState<ReadonlySet<string>>(new Set([ALL]));
  const [catalog, setCatalog] = useState<string[]>([ALL]);
  const [created, setCreated] = useState<{ name: string; key: string } | undefined>(undefined);

  useEffect(() => {
    call(api.auth.scopes.$get()).then(
      (answer) => setCatalog(answer.external),
      () => undefined, // Without the catalogue only `all` is offered, which is the API's default anyway.
    );
  }, []);

  const create = useAction(async () => {
    if (scopes.size === 0)
      throw new ApiProblem(0, "Choose at least one scope.", undefined, [{ field: "scopes", detail: "Choose at least one scope." }]);
    const tokenName = name.trim();
    const answer = await call(
      api.users[":user"].keys.tokens.$post({ param: { user: "me" }, json: { token_name: tokenName, lifetime, scopes: [...scopes] } }),
    );
    setCreated({ name: tokenName, key: answer.key });
    setName("");
    setScopes(new Set([ALL]));
    onCreated();
  });

  if (created) return <CreatedToken name={created.name} secret={created.key} onDone={() => setCreated(undefined)} />;

  const toggle = (scope: string, on: boolean) => {
    // `all` covers every other scope, so choosing it clears the others and choosing another clears it.
    if (scope === ALL) setScopes(new Set(on ? [ALL] : []));
    else {
      const next = new Set(scopes);
      next.delete(ALL);
      if (on) next.add(scope);
      else next.delete(scope);
      setScopes(next);
    }
  };
  const specific = catalog.filter((scope) => scope !== ALL);
  // One validation per refused scope (`scopes`), said together under the scopes' legend.
  const scopeErrors = (create.problem?.validations ?? [])
    .filter((v) => v.field === "scopes")
    .map((v) => plainDetail(v.field, v.detail))
    .join(" ");
  return (
    <form
      class="card stack token-form"
      aria-labelledby="new-token-heading"
      onSubmit={(event) => {
        event.preventDefault();
        if (!create.pending) void create.run();
      }}
    >
      <h3 id="new-token-heading">Create a token</h3>
      <ProblemAlert problem={create.problem} shown={["token_name", "lifetime", "scopes"]} />
      <Field
        label="Token name"
        name="token_name"
        required
        value={name}
        onValue={setName}
        problem={create.problem}
        problemField="token_name"
        hint="Letters, digits, spaces, dots, dashes and underscores; up to 64 characters."
      />
      <div class="field">
        <label for="token-lifetime">Lifetime</label>
        <select
          id="token-lifetime"
          value={String(lifetime)}
          aria-invalid={create.problem?.about("lifetime") ? "true" : undefined}
          aria-describedby={create.problem?.about("lifetime") ? "token-lifetime-error" : undefined}
          onChange={(event) => setLifetime(Number(event.currentTarget.value))}
        >
          {LIFETIMES.map((option) => (
            <option key={option.seconds} value={String(option.seconds)}>
              {option.label}
            </option>
          ))}
        </select>
        {create.problem?.about("lifetime") ? (
          <small id="token-lifetime-error" class="field-error">
            {create.problem.about("lifetime")}
          </small>
        ) : null}
      </div>
      <fieldset class="scopes" aria-describedby={scopeErrors ? "token-scopes-error" : undefined}>
        <legend>Scopes</legend>
        {scopeErrors ? (
          <p id="token-scopes-error" class="field-error">
            {scopeErrors}
          </p>
        ) : null}
        <ScopeBox scope={ALL} label="all (everything you can do)" checked={scopes.has(ALL)} onToggle={toggle} />
        {specific.length > 0 ? (
          <details class="scope-details">
            <summary>Narrow it down to specific scopes</summary>
            <div class="scope-grid">
              {specific.map((scope) => (
                <ScopeBox key={scope} scope={scope} label={scope} checked={scopes.has(scope)} onToggle={toggle} />
              ))}
            </div>
          </details>
        ) : null}
      </fieldset>
      <div>
        <button type="submit" class="button-primary">
          {create.pending ? "Creating…" : "Create token"}
        </button>
      </div>
    </form>
  );
}

function ScopeBox({
  scope,
  label,
  checked,
  onToggle,
}: {
  scope: string;
  label: string;
  checked: boolean;
  onToggle(scope: string, on: boolean): void;
}) {
  const id = `scope-${scope.replace(/[^a-z0-9]+/gi, "-")}`;
  return (
    <div class="account-check">
      <input type="checkbox" id={id} checked={checked} onChange={(event) => onToggle(scope, event.currentTarget.checked)} />
      <label for={id}>
        <code>{label}</code>
      </label>
    </div>
  );
}

function CreatedToken({ name, secret, onDone }: { name: string; secret: string; onDone(): void }) {
  return (
    <CopyableSecret testId="new-token" label="Your new API token" secret={secret} onDone={onDone}>
      Token “{name}” created. Copy it now: <strong>it will not be shown again.</strong>
    </CopyableSecret>
  );
}

/**
 * A secret the API shows once (a new API token, a webhook channel's signing secret), focused and selected for copying,
 * with a Copy button, until the person presses Done.
 */
export function CopyableSecret({
  testId,
  label,
  secret,
  onDone,
  children,
}: {
  testId: string;
  label: string;
  secret: string;
  onDone(): void;
  /** What was made, and that it will not be shown again. */
  children: ComponentChildren;
}) {
  const field = useRef<HTMLInputElement>(null);
  const [copy, setCopy] = useState("");
  useEffect(() => field.current?.focus(), []);
  const id = `${testId}-value`;
  return (
    <div class="card stack" data-testid={testId}>
      <Notice>{children}</Notice>
      <div class="field">
        <label for={id}>{label}</label>
        <div class="copy-row">
          <input
            id={id}
            ref={field}
            class="token-value"
            readOnly
            value={secret}
            autocomplete="off"
            spellcheck={false}
            onFocus={(event) => event.currentTarget.select()}
          />
          <button
            type="button"
            onClick={() => {
              navigator.clipboard.writeText(secret).then(
                () => setCopy("Copied to the clipboard."),
                () => setCopy("Could not copy: select it and copy it yourself."),
              );
            }}
          >
            Copy
          </button>
        </div>
        <small class="hint" role="status">
          {copy}
        </small>
      </div>
      <div>
        <button type="button" onClick={onDone}>
          Done
        </button>
      </div>
    </div>
  );
}
