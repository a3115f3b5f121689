import { useState } from "preact/hooks";
import type { Me } from "../session";
import { Page, Time } from "../ui/components";
import { ChannelsSection } from "./channels";
import { DataSection } from "./data";
import { DevicesSection } from "./devices";
import { loginTypeName } from "./labels";
import { PasswordSection } from "./password";
import { SecuritySection } from "./security";
import { SessionsSection } from "./sessions";
import { TokensSection } from "./tokens";
import "./account.css";

export function AccountPage({ me }: { me: Me }) {
  // Bumped after a password change, which ends the other sessions (docs/api.md, Sign-in): the lists read again.
  const [version, setVersion] = useState(0);
  return (
    <Page title="Account">
      <Profile me={me} />
      {me.login_type === "password" ? <PasswordSection onChanged={() => setVersion((v) => v + 1)} /> : null}
      <SecuritySection />
      <ChannelsSection />
      <SessionsSection version={version} />
      <DevicesSection />
      <TokensSection version={version} />
      <DataSection />
    </Page>
  );
}

function Profile({ me }: { me: Me }) {
  return (
    <section class="account-section" aria-labelledby="profile-heading">
      <h2 id="profile-heading">Profile</h2>
      <dl class="account-facts card" data-testid="profile">
        <div>
          <dt>Name</dt>
          <dd>{me.name || <span class="muted">Not set</span>}</dd>
        </div>
        <div>
          <dt>Username</dt>
          <dd>{me.username}</dd>
        </div>
        <div>
          <dt>E-mail</dt>
          <dd>{me.email}</dd>
        </div>
        <div>
          <dt>Roles</dt>
          <dd>{me.roles.length > 0 ? me.roles.map((role) => role.display_name || role.name).join(", ") : "Member"}</dd>
        </div>
        <div>
          <dt>Sign-in method</dt>
          <dd>{loginTypeName(me.login_type)}</dd>
        </div>
        <div>
          <dt>Member since</dt>
          <dd>
            <Time iso={me.created_at} />
          </dd>
        </div>
      </dl>
      {me.login_type === "oidc" || me.login_type === "github" ? (
        <p class="muted">You sign in with {loginTypeName(me.login_type)}, so there is no Herald password to change here.</p>
      ) : null}
    </section>
  );
}
