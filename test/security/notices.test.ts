import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { getConfig } from "../../src/config/config";
import { unseal } from "../../src/notifications/sealed";
import { MANDATORY_TEMPLATE_IDS, TEMPLATE_IDS } from "../../src/notifications/templates";
import { enrolTotp, forgetUsedStep, passwordStep } from "../auth/mfa-helpers";
import { quiesce } from "../fixtures/d1-state";
import { apiRequest, call, createUser, expectError, json, owner, send, type TestUser } from "../helpers";
import { addPasskey, SoftAuthenticator } from "../passkeys/authenticator";
import { waitFor } from "../peers";

// docs/security.md, "Security notices" and "Devices": each event tells the account once, in its inbox and by e-mail,
// naming what happened, when, the device and the place.

const CHROME_MAC = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
const FIREFOX_LINUX = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0";
const BERLIN = { country: "DE", city: "Berlin" };

interface Notice {
  method: string;
  status: string;
  labels: Record<string, string>;
  sealed: Record<string, string>;
}

/** The messages of one template for one user, labels opened (the test holds SECRET_KEY). */
async function notices(userId: string, templateId: string): Promise<Notice[]> {
  const { results } = await env.DB.prepare(
    "SELECT method, status, payload FROM notification_messages WHERE user_id = ? AND template_id = ? ORDER BY created_at",
  )
    .bind(userId, templateId)
    .all<{ method: string; status: string; payload: string }>();
  const secret = getConfig(env).SECRET_KEY;
  return Promise.all(
    results.map(async (row) => {
      const payload = JSON.parse(row.payload) as { labels: Record<string, string>; sealed_labels?: string };
      return {
        method: row.method,
        status: row.status,
        labels: payload.labels,
        sealed: payload.sealed_labels ? await unseal(secret, payload.sealed_labels) : {},
      };
    }),
  );
}

/** Waits for the notice (it is sent after the response), lets any duplicate arrive, and answers every copy. */
async function settledNotices(userId: string, templateId: string): Promise<Notice[]> {
  await waitFor(async () => ((await notices(userId, templateId)).length >= 2 ? true : undefined), 10_000);
  await quiesce(3);
  return notices(userId, templateId);
}

/** Exactly one notice: one inbox copy and one e-mail, both with the same labels. */
async function oneNotice(userId: string, templateId: string): Promise<Notice> {
  const copies = await settledNotices(userId, templateId);
  expect(copies.map((n) => n.method).sort()).toEqual(["inbox", "smtp"]);
  const [first] = copies;
  if (!first) throw new Error("no notice");
  return first;
}

/** A password sign-in from a browser at a place. */
async function signIn(user: Pick<TestUser, "email" | "password">, userAgent: string, cf: Record<string, string> = {}, ip = "203.0.113.7") {
  const request = apiRequest("POST", "/users/login", {
    body: { email: user.email, password: user.password },
    headers: { "User-Agent": userAgent, "CF-Connecting-IP": ip },
  });
  const res = await send(new Request(request, { cf }));
  expect(res.status, await res.clone().text()).toBe(201);
  return (await json<{ session_token: string }>(res)).session_token;
}

describe('docs/security.md, "Devices"', () => {
  it("a login session records its user agent, device, address prefix, place and methods", async () => {
    const user = await createUser();
    const token = await signIn(user, CHROME_MAC, BERLIN, "198.51.100.23");
    const res = await call("GET", `/users/${user.id}/keys/sessions`, { token });
    const sessions = await json<Record<string, unknown>[]>(res);
    expect(sessions.find((s) => s.current)).toMatchObject({
      user_agent: CHROME_MAC,
      device: "Chrome 131 on macOS",
      ip_prefix: "198.51.100.0/24",
      location: { country: "DE", city: "Berlin" },
      methods: ["pwd"],
    });
  });

  it("an IPv6 address is kept as its /48; a request with no address or place has none", async () => {
    const user = await createUser();
    const token = await signIn(user, FIREFOX_LINUX, {}, "2001:db8:abcd:12::1");
    const sessions = await json<Record<string, unknown>[]>(await call("GET", `/users/${user.id}/keys/sessions`, { token }));
    expect(sessions.find((s) => s.current)).toMatchObject({ device: "Firefox 133 on Linux", ip_prefix: "2001:db8:abcd::/48", location: null });
  });
});

describe('docs/security.md, "Security notices": a sign-in from a new device', () => {
  it("a new browser sends one notice naming the device and the place; the same one again within the hour sends none", async () => {
    const user = await createUser();
    await signIn(user, CHROME_MAC, BERLIN, "198.51.100.23");
    const notice = await oneNotice(user.id, TEMPLATE_IDS.newSignIn);
    expect(notice.labels).toMatchObject({ device: "Chrome 131 on macOS", place: "Berlin, Germany (198.51.100.0/24)" });
    expect(notice.labels.when).toMatch(/^\d{1,2} \w+ \d{4} at \d{2}:\d{2} UTC$/);
    expect(notice.sealed.not_me_token).toBeTruthy();
    await signIn(user, CHROME_MAC, BERLIN, "198.51.100.99");
    await quiesce(3);
    expect(await notices(user.id, TEMPLATE_IDS.newSignIn)).toHaveLength(2);
  });

  it("an account's first sign-in has nothing to compare with and sends none", async () => {
    const admin = await owner();
    const username = `first-${crypto.randomUUID().slice(0, 8)}`;
    const password = `Tr0ubadour-${crypto.randomUUID()}`;
    const created = await json<{ id: string }>(
      await call("POST", "/users", { token: admin.token, body: { email: `${username}@herald.test`, username, password } }),
    );
    await signIn({ email: `${username}@herald.test`, password }, CHROME_MAC, BERLIN);
    await quiesce(3);
    expect(await notices(created.id, TEMPLATE_IDS.newSignIn)).toEqual([]);
  });

  it("the same browser from another country is a new device", async () => {
    const user = await createUser();
    await signIn(user, CHROME_MAC, BERLIN);
    await oneNotice(user.id, TEMPLATE_IDS.newSignIn);
    await signIn(user, CHROME_MAC, { country: "FR", city: "Paris" });
    await waitFor(async () => ((await notices(user.id, TEMPLATE_IDS.newSignIn)).length >= 4 ? true : undefined), 10_000);
    await quiesce(3);
    const all = await notices(user.id, TEMPLATE_IDS.newSignIn);
    expect(all).toHaveLength(4);
    expect(all.at(-1)?.labels.place).toMatch(/^Paris, France/);
  });

  it("a device unseen for 90 days is new again, but announced at most once an hour", async () => {
    const user = await createUser();
    await signIn(user, CHROME_MAC, BERLIN);
    await oneNotice(user.id, TEMPLATE_IDS.newSignIn);
    const age = (days: number) => new Date(Date.now() - days * 86_400_000).toISOString();
    // Last seen 91 days ago, announced ten minutes ago: still within the hour.
    await env.DB.prepare("UPDATE user_devices SET last_seen_at = ?, last_notice_at = ? WHERE user_id = ?")
      .bind(age(91), new Date(Date.now() - 600_000).toISOString(), user.id)
      .run();
    await signIn(user, CHROME_MAC, BERLIN);
    await quiesce(3);
    expect(await notices(user.id, TEMPLATE_IDS.newSignIn)).toHaveLength(2);
    // Seen 89 days ago: a known device, no notice.
    await env.DB.prepare("UPDATE user_devices SET last_seen_at = ?, last_notice_at = NULL WHERE user_id = ?").bind(age(89), user.id).run();
    await signIn(user, CHROME_MAC, BERLIN);
    await quiesce(3);
    expect(await notices(user.id, TEMPLATE_IDS.newSignIn)).toHaveLength(2);
    // Seen 91 days ago, announced two hours ago: announced again.
    await env.DB.prepare("UPDATE user_devices SET last_seen_at = ?, last_notice_at = ? WHERE user_id = ?")
      .bind(age(91), new Date(Date.now() - 7_200_000).toISOString(), user.id)
      .run();
    await signIn(user, CHROME_MAC, BERLIN);
    await waitFor(async () => ((await notices(user.id, TEMPLATE_IDS.newSignIn)).length >= 4 ? true : undefined), 10_000);
    await quiesce(3);
    expect(await notices(user.id, TEMPLATE_IDS.newSignIn)).toHaveLength(4);
  });

  it("two sign-ins at once from the same new device send one notice", async () => {
    const user = await createUser();
    await Promise.all([signIn(user, FIREFOX_LINUX, BERLIN), signIn(user, FIREFOX_LINUX, BERLIN)]);
    await oneNotice(user.id, TEMPLATE_IDS.newSignIn);
  });
});

describe('docs/security.md, "Security notices": every event, once, with the device and the place', () => {
  /** A request from Chrome on macOS in Berlin: the device and the place each notice below must name. */
  const fromBerlin = (method: string, path: string, options: { token: string; body?: unknown }) =>
    send(
      new Request(apiRequest(method, path, { ...options, headers: { "User-Agent": CHROME_MAC, "CF-Connecting-IP": "198.51.100.23" } }), {
        cf: BERLIN,
      }),
    );
  const namesBerlin = (notice: Notice) =>
    expect(notice.labels).toMatchObject({ device: "Chrome 131 on macOS", place: "Berlin, Germany (198.51.100.0/24)" });

  it("password changed", async () => {
    const user = await createUser();
    const password = `Another-${crypto.randomUUID()}`;
    const res = await fromBerlin("PUT", `/users/${user.id}/password`, { token: user.token, body: { old_password: user.password, password } });
    expect(res.status).toBe(204);
    namesBerlin(await oneNotice(user.id, TEMPLATE_IDS.passwordChanged));
  });

  it("an API token created names the token and its scopes", async () => {
    const user = await createUser();
    const res = await fromBerlin("POST", `/users/${user.id}/keys/tokens`, { token: user.token, body: { token_name: "ci", scopes: ["user:read"] } });
    expect(res.status).toBe(201);
    const notice = await oneNotice(user.id, TEMPLATE_IDS.apiTokenCreated);
    expect(notice.labels).toMatchObject({ token_name: "ci", scopes: "user:read" });
    namesBerlin(notice);
  });

  it("site roles changed names who changed them, from what to what", async () => {
    const admin = await owner();
    const user = await createUser();
    const res = await fromBerlin("PUT", `/users/${user.id}/roles`, { token: admin.token, body: { roles: ["auditor"] } });
    expect(res.status).toBe(200);
    const notice = await oneNotice(user.id, TEMPLATE_IDS.siteRolesChanged);
    expect(notice.labels).toMatchObject({ initiator: "owner", old_roles: "member only", new_roles: "auditor" });
    namesBerlin(notice);
  });

  it("sessions ended by someone else tells the user; ending your own tells no one", async () => {
    const admin = await owner();
    const user = await createUser();
    expect((await call("DELETE", `/users/${user.id}/keys/sessions?except_current=true`, { token: user.token })).status).toBe(204);
    await signIn(user, CHROME_MAC);
    expect((await fromBerlin("DELETE", `/users/${user.id}/keys/sessions`, { token: admin.token })).status).toBe(204);
    const notice = await oneNotice(user.id, TEMPLATE_IDS.sessionsEnded);
    expect(notice.labels).toMatchObject({ initiator: "owner", count: "2" });
    namesBerlin(notice);
  });

  it("an authenticator app added and removed; recovery codes running low and regenerated", async () => {
    const user = await createUser();
    const { recoveryCodes } = await enrolTotp(user);
    expect((await oneNotice(user.id, TEMPLATE_IDS.factorAdded)).labels.factor).toBe("An authenticator app");
    // Eight of ten used, each for a sign-in: only the eighth, which leaves two, tells the account.
    for (const code of recoveryCodes.slice(0, 8)) {
      const step = await passwordStep(user);
      expect((await call("POST", "/users/login/mfa", { body: { mfa_token: step.mfa_token, code } })).status).toBe(201);
    }
    expect((await oneNotice(user.id, TEMPLATE_IDS.recoveryCodesLow)).labels.remaining).toBe("2");
    expect((await call("POST", "/users/me/mfa/recovery-codes", { token: user.token })).status).toBe(200);
    await oneNotice(user.id, TEMPLATE_IDS.recoveryCodesRegenerated);
    await forgetUsedStep(user.id);
    expect((await call("DELETE", "/users/me/mfa/totp", { token: user.token })).status).toBe(204);
    expect((await oneNotice(user.id, TEMPLATE_IDS.factorRemoved)).labels.factor).toBe("The authenticator app");
  });

  it("a passkey added and removed names the passkey", async () => {
    const user = await createUser();
    const added = await addPasskey(user.token, await SoftAuthenticator.create(), { name: "Work laptop" });
    expect(added.status).toBe(201);
    expect((await oneNotice(user.id, TEMPLATE_IDS.factorAdded)).labels.factor).toBe('The passkey "Work laptop"');
    const { id } = await json<{ id: string }>(added);
    expect((await call("DELETE", `/users/${user.id}/passkeys/${id}`, { token: user.token })).status).toBe(204);
    expect((await oneNotice(user.id, TEMPLATE_IDS.factorRemoved)).labels.factor).toBe('The passkey "Work laptop"');
  });

  it("security notices are mandatory: no preference turns one off (N13 → 400)", async () => {
    const user = await createUser();
    for (const id of MANDATORY_TEMPLATE_IDS) {
      const res = await call("PUT", `/users/${user.id}/notifications/preferences`, {
        token: user.token,
        body: { template_disabled_map: { [id]: true } },
      });
      await expectError(res, 400);
    }
  });
});
