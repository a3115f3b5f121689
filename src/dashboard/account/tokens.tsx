import { useEffect, useState } from "preact/hooks";
import { api, call } from "../api";
import { useAction } from "../ui/action";
import { Empty, Loading, Notice, ProblemAlert, Time } from "../ui/components";
import { ConfirmButton } from "./confirm";
import { NewTokenForm } from "./new-token";

type Token = Awaited<ReturnType<typeof loadTokens>>[number];

function loadTokens() {
  return call(api.users[":user"].keys.tokens.$get({ param: { user: "me" } }));
}

/** The person's named API tokens (never their secrets), newest first, a form to make one, and revocation. */
export function TokensSection({ version }: { version: number }) {
  const [tokens, setTokens] = useState<Token[] | undefined>(undefined);
  const [notice, setNotice] = useState("");
  const load = useAction(async () => setTokens(await loadTokens()));
  useEffect(() => void load.run(), [version, load.run]);

  const revoke = useAction(async (token: Token) => {
    await call(api.users[":user"].keys[":id"].$delete({ param: { user: "me", id: token.id } }));
    setNotice(`Token “${token.token_name}” revoked.`);
    setTokens((list) => list?.filter((t) => t.id !== token.id));
    document.getElementById("tokens-heading")?.focus();
  });

  return (
    <section class="account-section" aria-labelledby="tokens-heading">
      <h2 id="tokens-heading" tabIndex={-1}>
        API tokens
      </h2>
      <p class="muted">Tokens let scripts and other services call Herald's API as you, with the scopes you choose.</p>
      <NewTokenForm
        onCreated={() => {
          setNotice("");
          void load.run();
        }}
      />
      <ProblemAlert problem={load.problem ?? revoke.problem} />
      {notice ? <Notice>{notice}</Notice> : null}
      {tokens === undefined ? (
        load.problem ? null : (
          <Loading what="API tokens" />
        )
      ) : tokens.length === 0 ? (
        <Empty>You have no API tokens.</Empty>
      ) : (
        <ul class="key-list">
          {tokens.map((token) => (
            <TokenItem key={token.id} token={token} onRevoke={() => void revoke.run(token)} />
          ))}
        </ul>
      )}
    </section>
  );
}

function TokenItem({ token, onRevoke }: { token: Token; onRevoke(): void }) {
  const expired = Date.parse(token.expires_at) <= Date.now();
  // A new token's `last_used` is its creation time: equal means never used.
  const used = token.last_used !== token.created_at;
  return (
    <li class="card key-item" data-testid="api-token" data-id={token.id}>
      <h3 class="key-name">
        {token.token_name}
        {expired ? <span class="status">Expired</span> : null}
      </h3>
      <dl class="account-facts">
        <div>
          <dt>Scopes</dt>
          <dd class="scopes-value">{token.scopes.join(", ")}</dd>
        </div>
        <div>
          <dt>Created</dt>
          <dd>
            <Time iso={token.created_at} />
          </dd>
        </div>
        <div>
          <dt>Last used</dt>
          <dd>{used ? <Time iso={token.last_used} /> : "Never"}</dd>
        </div>
        <div>
          <dt>{expired ? "Expired" : "Expires"}</dt>
          <dd>
            <Time iso={token.expires_at} />
          </dd>
        </div>
      </dl>
      <div>
        <ConfirmButton id={`revoke-${token.id}`} label="Revoke" question="Revoke?" about={`token ${token.token_name}`} onConfirm={onRevoke} />
      </div>
    </li>
  );
}
