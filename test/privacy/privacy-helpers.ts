import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { issuePasscode } from "../../src/auth/otp";
import { getConfig } from "../../src/config/config";
import { database } from "../../src/db/client";
import { EXPORT_PAGE_ROWS } from "../../src/inbox/export";
import { TEMPLATE_IDS } from "../../src/notifications/templates";
import { enrolTotp, passwordStep } from "../auth/mfa-helpers";
import { sleep } from "../fixtures/d1-state";
import { call, json, owner } from "../helpers";
import { deliver, inbox, setArchived, setRead, snooze } from "../inbox/inbox-helpers";
import { addPasskey, creationOptions, SoftAuthenticator } from "../passkeys/authenticator";

const CHROME_MAC = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";

/** A user with every kind of data Herald keeps, and every secret the test handed Herald or Herald handed back. */
export interface FullUser {
  id: string;
  email: string;
  username: string;
  name: string;
  password: string;
  /** The session the user signed in with (recent: step-up passes). */
  token: string;
  /** Titles of the items in their inbox. */
  titles: string[];
  /** Every secret: passwords, tokens, codes, keys, capability URLs. None may appear in an export. */
  secrets: string[];
}

const unique = () => crypto.randomUUID().slice(0, 8);

async function insert(sql: string, ...values: unknown[]): Promise<void> {
  await env.DB.prepare(sql)
    .bind(...values)
    .run();
}

/**
 * Waits until the user's rows in the message log stop changing (deliveries run after the responses that cause them),
 * so what a test reads from D1 and what an export reads agree.
 */
export async function settledMessages(userId: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = "";
  let stable = 0;
  while (Date.now() < deadline) {
    const rows = await env.DB.prepare(
      "SELECT id, status, updated_at FROM notification_messages WHERE user_id = ? AND (status NOT IN ('pending', 'leased') OR next_retry_after > ?) ORDER BY id",
    )
      .bind(userId, new Date(Date.now() + 60_000).toISOString())
      .all();
    const open = await env.DB.prepare(
      "SELECT count(*) AS n FROM notification_messages WHERE user_id = ? AND status IN ('pending', 'leased', 'temporary_failure') AND (next_retry_after IS NULL OR next_retry_after <= ?)",
    )
      .bind(userId, new Date(Date.now() + 60_000).toISOString())
      .first<{ n: number }>();
    const now = JSON.stringify(rows.results);
    stable = now === last && open?.n === 0 ? stable + 1 : 0;
    if (stable >= 3) return;
    last = now;
    await sleep(50);
  }
  throw new Error("the user's message log did not settle");
}

/**
 * A user with data in every table that can hold something about them, made through the API where a route makes it,
 * and written into D1 where none does yet (an external identity, a login conversion, push subscriptions, targets and
 * channel switches, a "This wasn't me" link used). The inbox holds read, archived, snoozed and unread items, more
 * than one export page of them, an item retention removed, a read-aware decision and an open digest window.
 */
export async function fullUser(): Promise<FullUser> {
  const admin = await owner();
  const tag = unique();
  const name = `Ada Lovelace ${tag}`;
  const username = `ada-${tag}`;
  const email = `ada.${tag}@herald.test`;
  const password = `Analytical-Engine-${crypto.randomUUID()}`;
  const created = await call("POST", "/users", { token: admin.token, body: { email, username, name, password } });
  expect(created.status, await created.clone().text()).toBe(201);
  const { id } = await json<{ id: string }>(created);
  const secrets: string[] = [password];

  // An owner's doing, about the user: audit entries written by someone else.
  const roles = await call("PUT", `/users/${id}/roles`, { token: admin.token, body: { roles: ["user-admin"] } });
  expect(roles.status).toBe(200);

  const signIn = await call("POST", "/users/login", { body: { email, password }, headers: { "User-Agent": CHROME_MAC } });
  expect(signIn.status).toBe(201);
  const token = (await json<{ session_token: string }>(signIn)).session_token;
  secrets.push(token, token.split("-")[1] ?? "");

  const minted = await call("POST", "/users/me/keys/tokens", { token, body: { token_name: `ci-${tag}`, scopes: ["inbox_notification:read"] } });
  expect(minted.status, await minted.clone().text()).toBe(201);
  const apiToken = (await json<{ key: string }>(minted)).key;
  secrets.push(apiToken, apiToken.split("-")[1] ?? "");

  const { secret, recoveryCodes } = await enrolTotp({ token });
  secrets.push(secret, ...recoveryCodes);
  // One recovery code used (its `used_at`), through a step-up.
  const stepUp = await call("POST", "/users/me/step-up", { token, body: { code: recoveryCodes[0] } });
  expect(stepUp.status, await stepUp.clone().text()).toBe(204);
  // A sign-in waiting for its second factor.
  const { mfa_token } = await passwordStep({ email, password });
  secrets.push(mfa_token);

  const authenticator = await SoftAuthenticator.create("ES256");
  expect((await addPasskey(token, authenticator, { name: `Ada's laptop ${tag}` })).status).toBe(201);
  // A registration begun and not finished: a WebAuthn challenge in flight.
  secrets.push((await creationOptions(token)).challenge);

  const preferences = await call("PUT", `/users/${id}/notifications/preferences`, {
    token,
    body: { template_disabled_map: { [TEMPLATE_IDS.userCreated]: true } },
  });
  expect(preferences.status, await preferences.clone().text()).toBe(200);
  const schedule = await call("PUT", `/users/${id}/notifications/schedule`, {
    token,
    body: { timezone: "Europe/Berlin", quiet_hours: [{ days: ["sat", "sun"], start: "22:00", end: "07:00" }], digest: "24h" },
  });
  expect(schedule.status, await schedule.clone().text()).toBe(200);

  // Custom notifications: inbox items, their message-log rows, and (digest on) an e-mail copy held for the digest.
  const titles: string[] = [];
  for (let i = 0; i < 3; i++) {
    const title = `Engine note ${i} ${tag}`;
    titles.push(title);
    const sent = await call("POST", "/notifications/custom", { token, body: { content: { title, message: `Bernoulli numbers, part ${i}` } } });
    expect(sent.status, await sent.clone().text()).toBe(204);
  }
  // More items than one export page, straight into the object as the pipeline delivers them.
  const object = inbox(id);
  const many = EXPORT_PAGE_ROWS + 20;
  for (let i = 0; i < many; i++) {
    const title = `Bulk item ${i} ${tag}`;
    titles.push(title);
    await deliver(id, { title, content: `Note G, line ${i}` });
  }
  // An old item, read, that retention removes: the object keeps its trace for list cursors.
  const old = await deliver(id, { title: `Old item ${tag}`, createdAt: new Date(Date.now() - 400 * 86_400_000).toISOString() });
  titles.push(`Old item ${tag}`);
  expect((await setRead(token, old.id, true)).status).toBe(200);
  const limits = { maxItems: 100_000, retentionMs: 365 * 86_400_000 };
  expect((await object.sweep(Date.now(), limits)).removed).toBe(1);
  const read = await deliver(id, { title: `Read item ${tag}` });
  const archived = await deliver(id, { title: `Archived item ${tag}` });
  const snoozed = await deliver(id, { title: `Snoozed item ${tag}` });
  titles.push(`Read item ${tag}`, `Archived item ${tag}`, `Snoozed item ${tag}`);
  expect((await setRead(token, read.id, true)).status).toBe(200);
  expect((await setArchived(token, archived.id, true)).status).toBe(200);
  expect((await snooze(token, snoozed.id, new Date(Date.now() + 86_400_000).toISOString())).status).toBe(200);
  // A read-aware decision, asked as the e-mail copy's send asks it.
  await object.emailDecision(read.id);

  // A passcode in flight, and the record of its e-mail.
  secrets.push(await issuePasscode(database(env.DB), getConfig(env), id));
  await insert("INSERT INTO passcode_mails (id, user_id, sent_at) VALUES (?, ?, ?)", crypto.randomUUID(), id, new Date().toISOString());

  // What no route of this version writes yet, or only at the end of a flow through a provider: written as they are stored.
  const now = new Date().toISOString();
  await insert(
    "INSERT INTO user_links (issuer, subject, user_id, login_type, email, created_at) VALUES (?, ?, ?, 'oidc', ?, ?)",
    "https://idp.herald.test",
    `subject-${tag}`,
    id,
    email,
    now,
  );
  const state = `state-hmac-${crypto.randomUUID()}`;
  secrets.push(state);
  await insert(
    "INSERT INTO login_conversions (state_hmac, user_id, to_type, expires_at, used_at, created_at) VALUES (?, ?, 'github', ?, NULL, ?)",
    state,
    id,
    new Date(Date.now() + 600_000).toISOString(),
    now,
  );
  await insert("INSERT INTO not_me_uses (event_id, user_id, used_at) VALUES (?, ?, ?)", crypto.randomUUID(), id, now);
  const endpoint = `https://fcm.googleapis.com/fcm/send/${crypto.randomUUID()}`;
  const p256dh = `BP256-${crypto.randomUUID()}`;
  const auth = `auth-${crypto.randomUUID()}`;
  secrets.push(endpoint, p256dh, auth);
  const subscription = crypto.randomUUID();
  await insert(
    "INSERT INTO push_subscriptions (id, user_id, name, endpoint, p256dh, auth, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
    subscription,
    id,
    `Firefox ${tag}`,
    endpoint,
    p256dh,
    auth,
    now,
  );
  const target = crypto.randomUUID();
  const sealedUrl = `sealed-url-${crypto.randomUUID()}`;
  const sealedSecret = `sealed-secret-${crypto.randomUUID()}`;
  const codeHash = `code-hash-${crypto.randomUUID()}`;
  secrets.push(sealedUrl, sealedSecret, codeHash);
  await insert(
    "INSERT INTO notification_targets (id, user_id, kind, name, url_sealed, url_origin, secret_sealed, code_hash, failed_attempts, verified_at, created_at) VALUES (?, ?, 'webhook', ?, ?, 'https://hooks.herald.test', ?, ?, 1, NULL, ?)",
    target,
    id,
    `Ada's hook ${tag}`,
    sealedUrl,
    sealedSecret,
    codeHash,
    now,
  );
  await insert(
    "INSERT INTO channel_preferences (user_id, template_id, channel, enabled, updated_at) VALUES (?, ?, ?, 0, ?), (?, ?, 'push', 1, ?)",
    id,
    TEMPLATE_IDS.custom,
    `target:${target}`,
    now,
    id,
    TEMPLATE_IDS.custom,
    now,
  );

  // A broadcast the user sent (they are a user-admin), to the owner, with an Idempotency-Key.
  const broadcast = await call("POST", "/notifications/broadcasts", {
    token,
    headers: { "Idempotency-Key": `key-${tag}` },
    body: { audience: { user_ids: [admin.id] }, content: { title: `From Ada ${tag}`, message: "A broadcast." } },
  });
  expect(broadcast.status, await broadcast.clone().text()).toBe(202);

  await settledMessages(id);
  return { id, email, username, name, password, token, titles, secrets: secrets.filter((s) => s.length >= 8) };
}
