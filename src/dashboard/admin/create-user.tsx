import { useEffect, useRef, useState } from "preact/hooks";
import { api, call } from "../api";
import { useAction } from "../ui/action";
import { Field, NewPasswordField, ProblemAlert, SelectField, UsernameField } from "../ui/components";
import type { User } from "./users";

type LoginType = "password" | "oidc" | "github" | "none";

const LOGIN_TYPES: readonly { value: LoginType; label: string }[] = [
  { value: "password", label: "Password" },
  { value: "oidc", label: "OpenID Connect" },
  { value: "github", label: "GitHub" },
  { value: "none", label: "None (cannot sign in)" },
];

/**
 * POST /users (docs/api.md): a password user needs an e-mail and a password; an external (`oidc`, `github`) or `none`
 * user an e-mail and no password, so the password field is shown for password users only.
 */
export function CreateUserForm({ onCreated }: { onCreated(user: User): void }) {
  const [email, setEmail] = useState("");
  const [username, setUsername] = useState("");
  const [name, setName] = useState("");
  const [loginType, setLoginType] = useState<LoginType>("password");
  const [password, setPassword] = useState("");
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => heading.current?.focus(), []);

  const create = useAction(async () => {
    const common = { email: email.trim(), username: username.trim(), ...(name.trim() ? { name: name.trim() } : {}) };
    const json = loginType === "password" ? { ...common, password } : { ...common, login_type: loginType };
    onCreated(await call(api.users.$post({ json })));
  });

  return (
    <section class="admin-section card" aria-labelledby="new-user-heading">
      <h2 id="new-user-heading" ref={heading} tabIndex={-1}>
        New user
      </h2>
      <form
        class="admin-form"
        onSubmit={(event) => {
          event.preventDefault();
          void create.run();
        }}
      >
        <div class="span-all">
          <ProblemAlert problem={create.problem} shown={["email", "username", "name", "password"]} />
        </div>
        <Field
          label="E-mail"
          type="email"
          name="new-user-email"
          autocomplete="off"
          required
          value={email}
          onValue={setEmail}
          problem={create.problem}
          problemField="email"
        />
        <UsernameField name="new-user-username" autocomplete="off" value={username} onValue={setUsername} problem={create.problem} />
        <Field
          label="Name (optional)"
          name="new-user-name"
          autocomplete="off"
          value={name}
          onValue={setName}
          problem={create.problem}
          problemField="name"
        />
        <SelectField<LoginType> label="Login type" name="new-user-login-type" value={loginType} options={LOGIN_TYPES} onValue={setLoginType} />
        {loginType === "password" ? (
          <NewPasswordField label="Password" name="new-user-password" value={password} onValue={setPassword} problem={create.problem} />
        ) : null}
        <div class="span-all row">
          <button type="submit" class="button-primary" disabled={create.pending}>
            {create.pending ? "Creating…" : "Create user"}
          </button>
        </div>
      </form>
    </section>
  );
}
