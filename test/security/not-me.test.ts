import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { AuthMessages } from "../../src/auth/messages";
import { getConfig } from "../../src/config/config";
import { unseal } from "../../src/notifications/sealed";
import { TEMPLATE_IDS } from "../../src/notifications/templates";
import { SecurityMessages } from "../../src/security/messages";
import { NOT_ME_LIFETIME_MS, signNotMeToken } from "../../src/security/not-me-token";
import { quiesce } from "../fixtures/d1-state";
import { apiRequest, call, createUser, expectError, json, owner, send, type TestUser } from "../helpers";
import { list, watch } from "../inbox/inbox-helpers";
import { waitFor } from "../peers";

// docs/security.md, "This wasn't me": the link in every notice ends everything the account holds, makes password
// sign-in wait for a passcode reset, sends the passcode at once and tells the owners; it works once, for 7 days, and
// never signs anyone in.

const CHROME_MAC = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";

async function signInFrom(user: Pick<TestUser, "email" | "password">, userAgent: string): Promise<Response> {
  const request = apiRequest("POST", "/users/login", { body: { email: user.email, password: user.password }, headers: { "User-Agent": userAgent } });
  return send(new Request(request, { cf: { country: "NL", city: "Amsterdam" } }));
}

/** A user whose sign-in from a new browser produced a notice; the token of its "This wasn't me" link, read from the inbox. */
async function noticed(): Promise<{ user: TestUser; link: string; token: string; session: string }> {
  const user = await createUser();
  const res = await signInFrom(user, CHROME_MAC);
  expect(res.status).toBe(201);
  const { session_token: session } = await json<{ session_token: string }>(res);
  const item = await waitFor(async () => (await list(user.token)).notifications.find((n) => n.template_id === TEMPLATE_IDS.newSignIn), 10_000);
  const action = item.actions.find((a) => a.label === "This wasn't me");
  if (!action) throw new Error("the notice has no This wasn't me action");
  const url = new URL(action.url);
  expect(url.pathname).toBe("/not-me");
  // The token travels in the fragment, never in the query: no server or proxy log sees it.
  expect(url.search).toBe("");
  return { user, link: action.url, token: decodeURIComponent(url.hash.slice(1)), session };
}

const report = (token: unknown) => call("POST", "/users/not-me", { body: { token } });

describe(`docs/security.md, "This wasn't me"`, () => {
  it("ends every session and token, closes the watch (4401), and never signs anyone in", async () => {
    const { user, token, session } = await noticed();
    const created = await call("POST", `/users/${user.id}/keys/tokens`, { token: user.token, body: { token_name: "ci" } });
    const { key: apiToken } = await json<{ key: string }>(created);
    const watcher = await watch("", { "Service-Session-Token": user.token });

    const res = await report(token);
    expect(res.status).toBe(200);
    expect(res.headers.get("Set-Cookie")).toBeNull();
    expect(await json(res)).toEqual({ revoked_sessions: 2, revoked_tokens: 1 });
    expect((await watcher.closed).code).toBe(4401);
    for (const credential of [user.token, session, apiToken]) await expectError(await call("GET", "/users/me", { token: credential }), 401);
  });

  it("password sign-in answers 'Your password must be reset.' until a passcode reset, whose e-mail was sent at once", async () => {
    const { user, token } = await noticed();
    expect((await report(token)).status).toBe(200);
    await expectError(
      await call("POST", "/users/login", { body: { email: user.email, password: user.password } }),
      401,
      AuthMessages.passwordMustBeReset,
    );
    // A wrong password still gets the usual answer: the reset requirement shows only to whoever knows the password.
    await expectError(
      await call("POST", "/users/login", { body: { email: user.email, password: "not-the-password-1" } }),
      401,
      AuthMessages.incorrectLogin,
    );

    const passcodeMail = await waitFor(async () => {
      const row = await env.DB.prepare("SELECT payload FROM notification_messages WHERE user_id = ? AND template_id = ? AND method = 'smtp'")
        .bind(user.id, TEMPLATE_IDS.oneTimePasscode)
        .first<{ payload: string }>();
      return row ?? undefined;
    }, 10_000);
    const { sealed_labels: sealed } = JSON.parse(passcodeMail.payload) as { sealed_labels: string };
    const { one_time_passcode: code } = await unseal(getConfig(env).SECRET_KEY, sealed);
    const password = `Fresh-${crypto.randomUUID()}`;
    expect((await call("POST", "/users/otp/change-password", { body: { email: user.email, one_time_passcode: code, password } })).status).toBe(204);
    expect((await call("POST", "/users/login", { body: { email: user.email, password } })).status).toBe(201);
  });

  it("tells the owners, naming the account and the event, and is audited without the token", async () => {
    const admin = await owner();
    const { user, token } = await noticed();
    expect((await report(token)).status).toBe(200);
    const told = await waitFor(async () => {
      const row = await env.DB.prepare(
        "SELECT payload FROM notification_messages WHERE user_id = ? AND template_id = ? AND method = 'inbox' AND payload LIKE ?",
      )
        .bind(admin.id, TEMPLATE_IDS.compromiseReported, `%${user.username}%`)
        .first<{ payload: string }>();
      return row ?? undefined;
    }, 10_000);
    expect((JSON.parse(told.payload) as { labels: Record<string, string> }).labels).toMatchObject({
      account: user.username,
      event: "a sign-in from a new device",
    });
    const audit = await env.DB.prepare("SELECT diff FROM audit_logs WHERE action = 'report_not_me' AND resource_id = ?")
      .bind(user.id)
      .all<{ diff: string }>();
    expect(audit.results).toHaveLength(1);
    expect(audit.results[0]?.diff).toContain('"event":"new_sign_in"');
    expect(audit.results[0]?.diff).not.toContain(token.split(".")[1] ?? token);
  });

  it("works once: the same link again, even at the same moment, is a 400 that changes nothing", async () => {
    const { user, token } = await noticed();
    const [first, second] = await Promise.all([report(token), report(token)]);
    expect([first.status, second.status].sort()).toEqual([200, 400]);
    await expectError(first.status === 400 ? first : second, 400, SecurityMessages.badNotMeLink);
    // Signed in again after the reset requirement is lifted by hand; the used link must not end the new session.
    await env.DB.prepare("UPDATE users SET password_reset_required = 0 WHERE id = ?").bind(user.id).run();
    const fresh = await json<{ session_token: string }>(await call("POST", "/users/login", { body: { email: user.email, password: user.password } }));
    await expectError(await report(token), 400, SecurityMessages.badNotMeLink);
    expect((await call("GET", "/users/me", { token: fresh.session_token })).status).toBe(200);
  });

  it("a forged, altered, expired or foreign link is a 400, and ends nothing", async () => {
    const { user, token } = await noticed();
    const secret = getConfig(env).SECRET_KEY;
    const [body = "", mac = ""] = token.split(".");
    const flipped = `${mac.slice(0, -1)}${mac.endsWith("0") ? "1" : "0"}`;
    const expired = await signNotMeToken(secret, {
      userId: user.id,
      eventId: crypto.randomUUID(),
      event: "new_sign_in",
      at: Date.now() - NOT_ME_LIFETIME_MS - 1_000,
      device: "",
      place: "",
    });
    const otherKey = await signNotMeToken("another-deployment-secret-key-0123456789abcdef", {
      userId: user.id,
      eventId: crypto.randomUUID(),
      event: "new_sign_in",
      at: Date.now(),
      device: "",
      place: "",
    });
    for (const bad of [`${body}.${flipped}`, `${body}x.${mac}`, body, "not-a-token", expired, otherKey]) {
      await expectError(await report(bad), 400, SecurityMessages.badNotMeLink);
    }
    expect((await call("GET", "/users/me", { token: user.token })).status).toBe(200);
    await quiesce(2);
  });

  it("a link for an account since deleted is a 400", async () => {
    const admin = await owner();
    const { user, token } = await noticed();
    expect((await call("DELETE", `/users/${user.id}`, { token: admin.token })).status).toBe(200);
    await expectError(await report(token), 400, SecurityMessages.badNotMeLink);
  });
  it("an account that signs in only through a provider: its tokens end, and no passcode is sent (it has no password)", async () => {
    const admin = await owner();
    const username = `sso-${crypto.randomUUID().slice(0, 8)}`;
    const created = await call("POST", "/users", { token: admin.token, body: { email: `${username}@herald.test`, username, login_type: "oidc" } });
    expect(created.status).toBe(201);
    const { id } = await json<{ id: string }>(created);
    const minted = await call("POST", `/users/${id}/keys/tokens`, { token: admin.token, body: { token_name: "ci" } });
    const { key } = await json<{ key: string }>(minted);
    const token = await signNotMeToken(getConfig(env).SECRET_KEY, {
      userId: id,
      eventId: crypto.randomUUID(),
      event: "api_token_created",
      at: Date.now(),
      device: "",
      place: "",
    });
    const res = await report(token);
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ revoked_sessions: 0, revoked_tokens: 1 });
    await expectError(await call("GET", "/users/me", { token: key }), 401);
    // The owners are told after the passcode step, in the same follow-up: once their notice exists, a passcode would too.
    await waitFor(async () => {
      const row = await env.DB.prepare("SELECT 1 AS found FROM notification_messages WHERE user_id = ? AND template_id = ? AND payload LIKE ?")
        .bind(admin.id, TEMPLATE_IDS.compromiseReported, `%${username}%`)
        .first<{ found: number }>();
      return row ?? undefined;
    }, 10_000);
    const passcodes = await env.DB.prepare("SELECT count(*) AS n FROM notification_messages WHERE user_id = ? AND template_id = ?")
      .bind(id, TEMPLATE_IDS.oneTimePasscode)
      .first<{ n: number }>();
    expect(passcodes?.n).toBe(0);
  });
});
