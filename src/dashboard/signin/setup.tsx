import { useState } from "preact/hooks";
import { api, call } from "../api";
import { refreshSession } from "../session";
import { useAction } from "../ui/action";
import { ActionForm, Field, NewPasswordField, Page, UsernameField } from "../ui/components";

/** A fresh deployment: the first account, which becomes the owner, then signed in at once. */
export function SetupPage() {
  const [email, setEmail] = useState("");
  const [username, setUsername] = useState("");
  const [name, setName] = useState("");
  const [password, setPassword] = useState("");
  const create = useAction(async () => {
    await call(api.users.first.$post({ json: { email, username, password, ...(name ? { name } : {}) } }));
    await call(api.users.login.$post({ json: { email, password } }));
    await refreshSession();
  });
  return (
    <Page title="Set up Herald">
      <div class="narrow">
        <p>There is no account yet. The first one is the owner: it can create users, pause the notifier and send broadcasts.</p>
        <ActionForm action={create} shown={["email", "username", "name", "password"]}>
          <Field
            label="E-mail"
            type="email"
            name="email"
            autocomplete="email"
            required
            value={email}
            onValue={setEmail}
            problem={create.problem}
            problemField="email"
          />
          <UsernameField value={username} onValue={setUsername} problem={create.problem} />
          <Field
            label="Name (optional)"
            name="name"
            autocomplete="name"
            value={name}
            onValue={setName}
            problem={create.problem}
            problemField="name"
          />
          <NewPasswordField label="Password" value={password} onValue={setPassword} problem={create.problem} />
          <button type="submit" class="button-primary" disabled={create.pending}>
            {create.pending ? "Creating…" : "Create the owner account"}
          </button>
        </ActionForm>
      </div>
    </Page>
  );
}
