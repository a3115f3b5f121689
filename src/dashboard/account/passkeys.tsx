import { useEffect, useState } from "preact/hooks";
import { addPasskey, loadPasskeys, type Passkey, removePasskey } from "../factors";
import { useAction } from "../ui/action";
import { Empty, Field, Loading, Notice, ProblemAlert, Time } from "../ui/components";
import { ConfirmButton } from "./confirm";

/**
 * The person's passkeys (docs/dashboard.md, "Passkeys"): each with its name, when it was added and last used, and Remove;
 * and a form that makes a new one on this device, named at creation (the API has no rename).
 */
export function PasskeysPart({ onChanged }: { onChanged(): void }) {
  const [passkeys, setPasskeys] = useState<Passkey[] | undefined>(undefined);
  const [name, setName] = useState("");
  const [notice, setNotice] = useState("");
  const load = useAction(async () => setPasskeys(await loadPasskeys()));
  useEffect(() => void load.run(), [load.run]);

  const add = useAction(async () => {
    setNotice("");
    const created = await addPasskey(name.trim());
    setName("");
    setNotice(`Passkey “${created.name}” added. You can sign in with it instead of a password.`);
    setPasskeys((list) => [created, ...(list ?? []).filter((p) => p.id !== created.id)]);
    onChanged();
  });
  const remove = useAction(async (passkey: Passkey) => {
    await removePasskey(passkey.id);
    setNotice(`Passkey “${passkey.name}” removed.`);
    setPasskeys((list) => list?.filter((p) => p.id !== passkey.id));
    onChanged();
    document.getElementById("passkeys-heading")?.focus();
  });

  return (
    <div class="stack" data-testid="passkeys">
      <ProblemAlert problem={load.problem ?? remove.problem} />
      {notice ? <Notice>{notice}</Notice> : null}
      {passkeys === undefined ? (
        load.problem ? null : (
          <Loading what="passkeys" />
        )
      ) : passkeys.length === 0 ? (
        <Empty>You have no passkeys yet.</Empty>
      ) : (
        <ul class="key-list">
          {passkeys.map((passkey) => (
            <li key={passkey.id} class="card key-item" data-testid="passkey" data-id={passkey.id}>
              <h4 class="key-name">{passkey.name}</h4>
              <dl class="account-facts">
                <div>
                  <dt>Added</dt>
                  <dd>
                    <Time iso={passkey.created_at} />
                  </dd>
                </div>
                <div>
                  <dt>Last used</dt>
                  <dd>{passkey.last_used_at ? <Time iso={passkey.last_used_at} /> : "Never"}</dd>
                </div>
              </dl>
              <div>
                <ConfirmButton
                  id={`remove-passkey-${passkey.id}`}
                  label="Remove"
                  name={`Remove passkey ${passkey.name}`}
                  question="It will no longer sign you in. Remove?"
                  about={`passkey ${passkey.name}`}
                  disabled={remove.pending}
                  onConfirm={() => void remove.run(passkey)}
                />
              </div>
            </li>
          ))}
        </ul>
      )}
      <form
        class="card stack narrow"
        aria-labelledby="new-passkey-heading"
        onSubmit={(event) => {
          event.preventDefault();
          if (!add.pending) void add.run();
        }}
      >
        <h4 id="new-passkey-heading">Add a passkey</h4>
        <p class="muted">
          A passkey signs you in with this device's screen lock or a security key, with no password to type. Your browser asks you to confirm.
        </p>
        <ProblemAlert problem={add.problem} shown={["name"]} />
        <Field
          label="Passkey name"
          name="passkey_name"
          autocomplete="off"
          value={name}
          onValue={setName}
          problem={add.problem}
          problemField="name"
          hint="Optional, to tell your passkeys apart, like “Work laptop”."
        />
        <div>
          <button type="submit" class="button-primary" disabled={add.pending}>
            {add.pending ? "Waiting for your browser…" : "Add a passkey"}
          </button>
        </div>
      </form>
    </div>
  );
}
