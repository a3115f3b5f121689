import { useEffect, useState } from "preact/hooks";
import { api, call } from "../api";
import { useAction } from "../ui/action";
import { Empty, Field, Loading, Notice, type Option, ProblemAlert, SelectField, Time } from "../ui/components";
import { ConfirmButton } from "./confirm";
import { CopyableSecret } from "./new-token";

type Target = Awaited<ReturnType<typeof loadTargets>>[number];
type Kind = Target["kind"];

function loadTargets() {
  return call(api.users[":user"]["notification-targets"].$get({ param: { user: "me" } }));
}

const KINDS: readonly Option<Kind>[] = [
  { value: "slack", label: "Slack" },
  { value: "teams", label: "Microsoft Teams" },
  { value: "discord", label: "Discord" },
  { value: "webhook", label: "Webhook" },
];
const kindName = (kind: Kind) => KINDS.find((k) => k.value === kind)?.label ?? kind;

/** Where each service gives out the URL to paste (docs/targets.md, "Outbound safety", says which hosts Herald takes). */
const URL_HINTS: Record<Kind, string> = {
  slack: "The channel's incoming webhook URL: https://hooks.slack.com/services/…",
  teams: "The URL of a Workflows flow that posts to the channel (“When a Teams webhook request is received”).",
  discord: "A webhook URL from the channel's Integrations settings: https://discord.com/api/webhooks/…",
  webhook: "Any public https URL. Herald signs each request with a secret it shows you once.",
};

/** While its code is on its way (or waiting for a retry), a target is read again this often. */
const FOLLOW_MS = 2000;
const inFlight = (t: Target) => !t.verified && ["pending", "leased", "temporary_failure"].includes(t.code_delivery?.status ?? "");

/**
 * Account → Channels (docs/dashboard.md, "Channels"): the person's own Slack, Teams, Discord and webhook targets. A new
 * one gets a code from Herald, entered here; until then it receives nothing. A webhook's signing secret is shown once,
 * kept in this component's state only.
 */
export function ChannelsSection() {
  const [targets, setTargets] = useState<Target[] | undefined>(undefined);
  const [notice, setNotice] = useState("");
  const [secret, setSecret] = useState<{ name: string; value: string } | undefined>(undefined);
  const load = useAction(async () => setTargets(await loadTargets()));
  useEffect(() => void load.run(), [load.run]);
  // Follows a code on its way, so "Sending…" becomes "Code sent" (or says why it waits) without a reload.
  useEffect(() => {
    if (!targets?.some(inFlight)) return;
    const timer = setTimeout(() => void load.run(), FOLLOW_MS);
    return () => clearTimeout(timer);
  }, [targets, load.run]);

  const remove = useAction(async (target: Target) => {
    await call(api.users[":user"]["notification-targets"][":id"].$delete({ param: { user: "me", id: target.id } }));
    setNotice(`Channel “${target.name}” removed.`);
    setTargets((list) => list?.filter((t) => t.id !== target.id));
    document.getElementById("channels-heading")?.focus();
  });

  return (
    <section class="account-section" aria-labelledby="channels-heading" data-testid="channels">
      <h2 id="channels-heading" tabIndex={-1}>
        Channels
      </h2>
      <p class="muted">
        Send your notifications to a Slack, Microsoft Teams or Discord channel of your own, or to a webhook. Herald first sends the channel a code:
        enter it here, and notifications go there from then on.
      </p>
      <ProblemAlert problem={load.problem ?? remove.problem} />
      {notice ? <Notice>{notice}</Notice> : null}
      {secret ? (
        <CopyableSecret testId="channel-secret" label="Signing secret" secret={secret.value} onDone={() => setSecret(undefined)}>
          The webhook “{secret.name}” signs each request with this secret (Standard Webhooks). Copy it now:{" "}
          <strong>it will not be shown again.</strong>
        </CopyableSecret>
      ) : null}
      {targets === undefined ? (
        load.problem ? null : (
          <Loading what="channels" />
        )
      ) : targets.length === 0 ? (
        <Empty>You have no channels yet.</Empty>
      ) : (
        <ul class="key-list">
          {targets.map((target) => (
            <TargetItem
              key={target.id}
              target={target}
              onVerified={(verified) => {
                setNotice(`Channel “${verified.name}” verified: your notifications go there now.`);
                setTargets((list) => list?.map((t) => (t.id === verified.id ? verified : t)));
              }}
              onGone={() => void load.run()}
              onRemove={() => void remove.run(target)}
              removing={remove.pending}
            />
          ))}
        </ul>
      )}
      <AddChannelForm
        onAdded={(target, signing) => {
          setNotice(`Herald is sending a code to “${target.name}”. Enter it below to start.`);
          setSecret(signing === undefined ? undefined : { name: target.name, value: signing });
          setTargets((list) => [target, ...(list ?? []).filter((t) => t.id !== target.id)]);
        }}
      />
    </section>
  );
}

/** How a target's code is doing, in words: sent, on its way, waiting for a retry and why, or failed and why. */
function CodeDelivery({ delivery }: { delivery: NonNullable<Target["code_delivery"]> }) {
  switch (delivery.status) {
    case "sent":
      return <>Code sent. Enter it here.</>;
    case "temporary_failure":
      return (
        <>
          Not delivered yet ({delivery.status_reason}). Herald tries again{" "}
          {delivery.next_retry_after ? <Time iso={delivery.next_retry_after} /> : "soon"}.
        </>
      );
    case "permanent_failure":
      return <>The code could not be sent ({delivery.status_reason}). Remove this channel and check its URL.</>;
    default:
      return <>Sending the code…</>;
  }
}

function TargetItem({
  target,
  onVerified,
  onGone,
  onRemove,
  removing,
}: {
  target: Target;
  onVerified(target: Target): void;
  onGone(): void;
  onRemove(): void;
  removing: boolean;
}) {
  const [code, setCode] = useState("");
  const verify = useAction(async () => {
    try {
      onVerified(
        await call(
          api.users[":user"]["notification-targets"][":id"].verify.$post({ param: { user: "me", id: target.id }, json: { code: code.trim() } }),
        ),
      );
    } catch (error) {
      // The fifth wrong code removed the target (404 after that): the list is read again, the refusal still shown.
      onGone();
      throw error;
    }
  });
  const status = `${target.id}-status`;
  return (
    <li class="card key-item" data-testid="channel" data-id={target.id}>
      <h3 class="key-name">
        {target.name}
        <span class="status">{target.verified ? "Verified" : "Waiting for its code"}</span>
      </h3>
      <dl class="account-facts">
        <div>
          <dt>Kind</dt>
          <dd>{kindName(target.kind)}</dd>
        </div>
        <div>
          <dt>Posts to</dt>
          <dd>{target.url_origin}</dd>
        </div>
        <div>
          <dt>Added</dt>
          <dd>
            <Time iso={target.created_at} />
          </dd>
        </div>
      </dl>
      {target.verified ? null : (
        <form
          class="stack narrow"
          aria-label={`Verify ${target.name}`}
          onSubmit={(event) => {
            event.preventDefault();
            if (!verify.pending) void verify.run();
          }}
        >
          <p class="muted" id={status} role="status">
            {target.code_delivery ? <CodeDelivery delivery={target.code_delivery} /> : "Enter the code Herald sent to this channel."}
          </p>
          <ProblemAlert problem={verify.problem} shown={["code"]} />
          <Field
            label="Verification code"
            name={`code-${target.id}`}
            inputMode="numeric"
            autocomplete="one-time-code"
            required
            value={code}
            onValue={setCode}
            problem={verify.problem}
            problemField="code"
            hint="The 6 digits in the message Herald sent to the channel."
          />
          <div>
            <button type="submit" class="button-primary" disabled={verify.pending}>
              {verify.pending ? "Verifying…" : "Verify"}
            </button>
          </div>
        </form>
      )}
      <div>
        <ConfirmButton
          id={`remove-channel-${target.id}`}
          label="Remove"
          name={`Remove channel ${target.name}`}
          question="Nothing more will be sent there. Remove?"
          about={`channel ${target.name}`}
          disabled={removing}
          onConfirm={onRemove}
        />
      </div>
    </li>
  );
}

function AddChannelForm({ onAdded }: { onAdded(target: Target, secret: string | undefined): void }) {
  const [kind, setKind] = useState<Kind>("slack");
  const [name, setName] = useState("");
  const [url, setUrl] = useState("");
  const add = useAction(async () => {
    const created = await call(
      api.users[":user"]["notification-targets"].$post({ param: { user: "me" }, json: { kind, url: url.trim(), name: name.trim() } }),
    );
    const { secret, ...target } = created;
    setName("");
    setUrl("");
    onAdded(target, secret);
  });
  const kindError = add.problem?.about("kind");
  return (
    <form
      class="card stack narrow channel-form"
      aria-labelledby="new-channel-heading"
      onSubmit={(event) => {
        event.preventDefault();
        if (!add.pending) void add.run();
      }}
    >
      <h3 id="new-channel-heading">Add a channel</h3>
      <ProblemAlert problem={add.problem} shown={["kind", "name", "url"]} />
      <SelectField label="Kind" name="channel-kind" value={kind} options={KINDS} onValue={(picked: Kind) => setKind(picked)} error={kindError} />
      <Field
        label="Name"
        name="channel-name"
        required
        autocomplete="off"
        value={name}
        onValue={setName}
        problem={add.problem}
        problemField="name"
        hint="To tell your channels apart, like “Team alerts”."
      />
      <Field
        label="URL"
        name="channel-url"
        type="url"
        required
        autocomplete="off"
        value={url}
        onValue={setUrl}
        problem={add.problem}
        problemField="url"
        hint={URL_HINTS[kind]}
      />
      <div>
        <button type="submit" class="button-primary" disabled={add.pending}>
          {add.pending ? "Adding…" : "Add channel"}
        </button>
      </div>
    </form>
  );
}
