import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { AuthMessages } from "../../src/auth/messages";
import { Messages } from "../../src/http/errors";
import { call, createUser, expectError, fetchApp, json, login, owner } from "../helpers";

async function keyRow(token: string) {
  return env.DB.prepare("SELECT * FROM api_keys WHERE id = ?")
    .bind(token.slice(0, 10))
    .first<{ last_used: string; expires_at: string; hashed_secret: string }>();
}

describe('credentials (docs/api.md, "Conventions" and "Decisions")', () => {
  it("accepts the header, a bearer Authorization and the cookie", async () => {
    const user = await createUser();
    expect((await call("GET", "/users/me", { token: user.token })).status).toBe(200);
    expect((await call("GET", "/users/me", { headers: { Authorization: `Bearer ${user.token}` } })).status).toBe(200);
    expect((await call("GET", "/users/me", { headers: { Cookie: `service_session_token=${user.token}` } })).status).toBe(200);
  });

  it("stores only a SHA-256 of the secret", async () => {
    const user = await createUser();
    const row = await keyRow(user.token);
    expect(row?.hashed_secret).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(row)).not.toContain(user.token.slice(11));
  });

  // The interface Herald implements has the detail say which failure it was, but telling an unknown key id from a
  // wrong secret confirms that the id exists (ASVS 5.0 L2), so every bad credential gets one detail (docs/api.md,
  // "Decisions": one 401 detail).
  it("answers every bad credential with 401, the signed-out message and one and the same detail", async () => {
    const user = await createUser();
    const missing = await expectError(await call("GET", "/users/me"), 401, Messages.signedOut);
    expect(missing.detail).toBe(AuthMessages.noCredential("Service-Session-Token"));
    const bad: Record<string, string>[] = [
      { "Service-Session-Token": "garbage" },
      { "Service-Session-Token": "AAAAAAAAAA-BBBBBBBBBBBBBBBBBBBBBB" },
      { "Service-Session-Token": `${user.token.slice(0, 11)}BBBBBBBBBBBBBBBBBBBBBB` },
    ];
    for (const headers of bad) {
      const body = await expectError(await call("GET", "/users/me", { headers }), 401, Messages.signedOut);
      expect(body.detail).toBe(AuthMessages.badCredential);
    }
    await env.DB.prepare("UPDATE api_keys SET expires_at = ? WHERE id = ?")
      .bind(new Date(Date.now() - 1000).toISOString(), user.token.slice(0, 10))
      .run();
    const expired = await expectError(await call("GET", "/users/me", { token: user.token }), 401, Messages.signedOut);
    expect(expired.detail).toBe(AuthMessages.badCredential);
  });

  it("a suspended user's credential gets the same detail", async () => {
    const admin = await owner();
    const user = await createUser();
    await call("PUT", `/users/${user.id}/status/suspend`, { token: admin.token });
    const body = await expectError(await call("GET", "/users/me", { token: user.token }), 401, Messages.signedOut);
    expect(body.detail).toBe(AuthMessages.badCredential);
  });

  it("rejects cookie-authenticated state changes from a foreign Origin", async () => {
    const user = await createUser();
    const cookie = { Cookie: `service_session_token=${user.token}` };
    await expectError(await call("POST", "/users/logout", { headers: { ...cookie, Origin: "https://evil.example.com" } }), 403);
    await expectError(await call("POST", "/users/logout", { headers: cookie }), 403);
    // Reads by cookie need no Origin; a header credential needs none either.
    expect((await call("GET", "/users/me", { headers: cookie })).status).toBe(200);
    const ok = await call("POST", "/users/logout", { headers: { ...cookie, Origin: "http://localhost:8787" } });
    expect(ok.status).toBe(200);
  });

  it("writes last_used at most hourly and slides a session's expiry forward", async () => {
    const user = await createUser();
    const before = await keyRow(user.token);
    await call("GET", "/users/me", { token: user.token });
    expect((await keyRow(user.token))?.last_used).toBe(before?.last_used);

    const twoHoursAgo = new Date(Date.now() - 2 * 3600_000).toISOString();
    const soon = new Date(Date.now() + 3600_000).toISOString();
    await env.DB.prepare("UPDATE api_keys SET last_used = ?, expires_at = ? WHERE id = ?").bind(twoHoursAgo, soon, user.token.slice(0, 10)).run();
    await call("GET", "/users/me", { token: user.token });
    let after = await keyRow(user.token);
    for (let i = 0; i < 20 && after?.last_used === twoHoursAgo; i++) {
      await new Promise((r) => setTimeout(r, 25));
      after = await keyRow(user.token);
    }
    expect(Date.parse(after?.last_used ?? "")).toBeGreaterThan(Date.now() - 60_000);
    expect(Date.parse(after?.expires_at ?? "")).toBeGreaterThan(Date.now() + 23 * 3600_000);
  });

  const DAY = 24 * 3600_000;

  it("a login session ends at SESSION_MAX_LIFETIME (30 d) however recently it was used (ASVS 7.3.2)", async () => {
    const user = await createUser();
    const id = user.token.slice(0, 10);
    const old = new Date(Date.now() - 30 * DAY - 60_000).toISOString();
    await env.DB.prepare("UPDATE api_keys SET created_at = ?, last_used = ?, expires_at = ? WHERE id = ?")
      .bind(old, new Date().toISOString(), new Date(Date.now() + DAY).toISOString(), id)
      .run();
    const body = await expectError(await call("GET", "/users/me", { token: user.token }), 401, Messages.signedOut);
    expect(body.detail).toBe(AuthMessages.badCredential);
  });

  it("sliding forward stops at the absolute end", async () => {
    const user = await createUser();
    const id = user.token.slice(0, 10);
    const createdAt = Date.now() - 30 * DAY + 3600_000;
    const twoHoursAgo = new Date(Date.now() - 2 * 3600_000).toISOString();
    await env.DB.prepare("UPDATE api_keys SET created_at = ?, last_used = ?, expires_at = ? WHERE id = ?")
      .bind(new Date(createdAt).toISOString(), twoHoursAgo, new Date(Date.now() + 600_000).toISOString(), id)
      .run();
    expect((await call("GET", "/users/me", { token: user.token })).status).toBe(200);
    let after = await keyRow(user.token);
    for (let i = 0; i < 20 && after?.last_used === twoHoursAgo; i++) {
      await new Promise((r) => setTimeout(r, 25));
      after = await keyRow(user.token);
    }
    expect(Date.parse(after?.expires_at ?? "")).toBe(createdAt + 30 * DAY);
  });
});

describe("suspension (ASVS 7.4.2)", () => {
  it("deletes every session and token of the user: activating the account brings none back", async () => {
    const admin = await owner();
    const user = await createUser();
    const tokenRes = await call("POST", `/users/${user.id}/keys/tokens`, { token: user.token, body: { token_name: "ci" } });
    const apiToken = (await json<{ key: string }>(tokenRes)).key;
    expect((await call("PUT", `/users/${user.id}/status/suspend`, { token: admin.token })).status).toBe(200);
    const { n } = (await env.DB.prepare("SELECT count(*) AS n FROM api_keys WHERE user_id = ?").bind(user.id).first<{ n: number }>()) ?? { n: -1 };
    expect(n).toBe(0);
    expect((await call("PUT", `/users/${user.id}/status/activate`, { token: admin.token })).status).toBe(200);
    for (const token of [user.token, apiToken]) {
      await expectError(await call("GET", "/users/me", { token }), 401, Messages.signedOut);
    }
    expect((await call("POST", "/users/login", { body: { email: user.email, password: user.password } })).status).toBe(201);
  });
});

describe("a sign-in replaces the session it was made from (ASVS 7.2.4)", () => {
  const cookie = (token: string) => ({ Cookie: `service_session_token=${token}` });
  const loginWith = (user: { email: string; password: string }, headers: Record<string, string>) =>
    call("POST", "/users/login", { body: { email: user.email, password: user.password }, headers });

  it("the session cookie sent with a sign-in is ended, the new session works, and the audit entry says which", async () => {
    const user = await createUser();
    const res = await loginWith(user, cookie(user.token));
    expect(res.status).toBe(201);
    const fresh = (await json<{ session_token: string }>(res)).session_token;
    expect(await keyRow(user.token)).toBeNull();
    await expectError(await call("GET", "/users/me", { token: user.token }), 401);
    expect((await call("GET", "/users/me", { token: fresh })).status).toBe(200);
    const audit = await env.DB.prepare("SELECT diff FROM audit_logs WHERE action = 'login' AND resource_id = ?")
      .bind(fresh.slice(0, 10))
      .first<{ diff: string }>();
    expect(JSON.parse(audit?.diff ?? "{}")).toEqual({ replaced: user.token.slice(0, 10) });
  });

  it("also when the cookie is another account's: the browser now belongs to the new sign-in only", async () => {
    const before = await createUser();
    const after = await createUser();
    expect((await loginWith(after, cookie(before.token))).status).toBe(201);
    await expectError(await call("GET", "/users/me", { token: before.token }), 401);
  });

  it("leaves API tokens, wrong secrets and tokens sent in a header alone", async () => {
    const user = await createUser();
    const apiToken = (await json<{ key: string }>(await call("POST", "/users/me/keys/tokens", { token: user.token, body: { token_name: "kept" } })))
      .key;
    expect((await loginWith(user, cookie(apiToken))).status).toBe(201);
    expect((await call("GET", "/users/me", { token: apiToken })).status).toBe(200);
    // The right key id with a wrong secret: whoever sent it does not hold that session, so it is not theirs to end.
    const forged = `${user.token.slice(0, 10)}-${"A".repeat(22)}`;
    expect((await loginWith(user, cookie(forged))).status).toBe(201);
    expect((await loginWith(user, { "Service-Session-Token": user.token })).status).toBe(201);
    expect((await call("GET", "/users/me", { token: user.token })).status).toBe(200);
  });

  it("a refused sign-in ends nothing", async () => {
    const user = await createUser();
    await expectError(await loginWith({ email: user.email, password: "wrong-password-entirely" }, cookie(user.token)), 401);
    expect((await call("GET", "/users/me", { token: user.token })).status).toBe(200);
  });
});

describe("login sessions: list and end (ASVS 7.5.2, 7.4.5)", () => {
  type Session = { id: string; login_type: string; token_name: string; current: boolean } & Record<string, unknown>;
  const sessionsOf = async (token: string, user = "me") => {
    const res = await call("GET", `/users/${user}/keys/sessions`, { token });
    expect(res.status).toBe(200);
    return json<Session[]>(res);
  };

  it("lists every sign-in of the user, marks the calling one, and never shows secrets or named tokens", async () => {
    const user = await createUser();
    const second = await login(user.email, user.password);
    await call("POST", "/users/me/keys/tokens", { token: user.token, body: { token_name: "not-a-session" } });
    const listed = await sessionsOf(second);
    expect(listed.map((s) => s.id).sort()).toEqual([user.token.slice(0, 10), second.slice(0, 10)].sort());
    expect(listed.every((s) => s.login_type === "password" && s.token_name === "")).toBe(true);
    expect(listed.find((s) => s.current)?.id).toBe(second.slice(0, 10));
    const text = JSON.stringify(listed);
    for (const token of [user.token, second]) expect(text).not.toContain(token.slice(11));
    expect(text).not.toContain("hashed");
  });

  it("except_current=true signs out every other device and keeps the caller and the API tokens", async () => {
    const user = await createUser();
    const other = await login(user.email, user.password);
    const apiToken = (await json<{ key: string }>(await call("POST", "/users/me/keys/tokens", { token: user.token, body: { token_name: "kept" } })))
      .key;
    expect((await call("DELETE", "/users/me/keys/sessions?except_current=true", { token: user.token })).status).toBe(204);
    await expectError(await call("GET", "/users/me", { token: other }), 401);
    for (const token of [user.token, apiToken]) expect((await call("GET", "/users/me", { token })).status).toBe(200);
    expect((await sessionsOf(user.token)).map((s) => s.id)).toEqual([user.token.slice(0, 10)]);
  });

  it("without it every session ends, the caller's too, and a cookie caller's cookie is cleared", async () => {
    const user = await createUser();
    const other = await login(user.email, user.password);
    const res = await call("DELETE", "/users/me/keys/sessions", {
      headers: { Cookie: `service_session_token=${user.token}`, Origin: "http://localhost" },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get("Set-Cookie")).toMatch(/service_session_token=;/);
    for (const token of [user.token, other]) await expectError(await call("GET", "/users/me", { token }), 401);
    const audit = await env.DB.prepare("SELECT diff FROM audit_logs WHERE action = 'end_sessions' AND resource_id = ?")
      .bind(user.id)
      .first<{ diff: string }>();
    expect(JSON.parse(audit?.diff ?? "{}")).toEqual({ except_current: false });
  });

  it("an owner ends a member's sessions without suspending them; the member signs in again", async () => {
    const admin = await owner();
    const user = await createUser();
    expect((await sessionsOf(admin.token, user.id)).map((s) => s.id)).toEqual([user.token.slice(0, 10)]);
    expect((await call("DELETE", `/users/${user.id}/keys/sessions`, { token: admin.token })).status).toBe(204);
    await expectError(await call("GET", "/users/me", { token: user.token }), 401);
    expect((await call("GET", "/users/me", { token: admin.token })).status).toBe(200);
    expect((await call("POST", "/users/login", { body: { email: user.email, password: user.password } })).status).toBe(201);
  });
});

describe("logout", () => {
  it("deletes the key and clears the cookie", async () => {
    const user = await createUser();
    const res = await call("POST", "/users/logout", { token: user.token });
    expect(res.status).toBe(200);
    expect(res.headers.get("Set-Cookie")).toMatch(/service_session_token=;/);
    expect(await keyRow(user.token)).toBeNull();
    await expectError(await call("GET", "/users/me", { token: user.token }), 401);
  });
});

describe("API tokens", () => {
  it("creates, lists and deletes named tokens with scopes and lifetimes", async () => {
    const user = await createUser();
    const created = await call("POST", "/users/me/keys/tokens", {
      token: user.token,
      body: { token_name: "ci", lifetime: 3600, scopes: ["user:read"] },
    });
    expect(created.status).toBe(201);
    const { key } = await json<{ key: string }>(created);
    expect(key).toMatch(/^[0-9A-Za-z]{10}-[0-9A-Za-z]{22}$/);
    await expectError(await call("POST", "/users/me/keys/tokens", { token: user.token, body: { token_name: "ci" } }), 409);

    const list = await json<{ id: string; token_name: string; scopes: string[]; lifetime_seconds: number }[]>(
      await call("GET", "/users/me/keys/tokens", { token: user.token }),
    );
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject({ id: key.slice(0, 10), token_name: "ci", scopes: ["user:read"], lifetime_seconds: 3600 });
    expect(JSON.stringify(list)).not.toContain(key.slice(11));

    // The scoped token reads the user but cannot manage tokens.
    expect((await call("GET", "/users/me", { token: key })).status).toBe(200);
    await expectError(await call("GET", "/users/me/keys/tokens", { token: key }), 403);

    expect((await call("DELETE", `/users/me/keys/${key.slice(0, 10)}`, { token: user.token })).status).toBe(204);
    await expectError(await call("GET", "/users/me", { token: key }), 401);
    await expectError(await call("DELETE", `/users/me/keys/${key.slice(0, 10)}`, { token: user.token }), 404);
  });

  it("a token never mints a token that outlives it: an explicit longer lifetime is 400, the default is cut to what is left", async () => {
    const user = await createUser();
    const parent = (
      await json<{ key: string }>(await call("POST", "/users/me/keys/tokens", { token: user.token, body: { token_name: "parent", lifetime: 60 } }))
    ).key;
    const longer = await expectError(
      await call("POST", "/users/me/keys/tokens", { token: parent, body: { token_name: "child", lifetime: 30 * 86400 } }),
      400,
    );
    expect(longer.validations?.[0]).toMatchObject({ field: "lifetime" });
    expect(longer.validations?.[0]?.detail).toMatch(/cannot outlive the token that creates it/);
    const child = (await json<{ key: string }>(await call("POST", "/users/me/keys/tokens", { token: parent, body: { token_name: "child" } }))).key;
    const [parentRow, childRow] = [await keyRow(parent), await keyRow(child)];
    expect(Date.parse(childRow?.expires_at ?? "")).toBeLessThanOrEqual(Date.parse(parentRow?.expires_at ?? ""));
    // A login session may mint the usual 7-day token.
    expect((await call("POST", "/users/me/keys/tokens", { token: user.token, body: { token_name: "week", lifetime: 7 * 86400 } })).status).toBe(201);
  });

  it("caps lifetimes at TOKEN_MAX_LIFETIME and rejects unknown scopes", async () => {
    const user = await createUser();
    const tooLong = await expectError(
      await call("POST", "/users/me/keys/tokens", { token: user.token, body: { token_name: "long", lifetime: 365 * 86400 } }),
      400,
    );
    expect(tooLong.validations?.[0]?.field).toBe("lifetime");
    const bad = await expectError(
      await call("POST", "/users/me/keys/tokens", { token: user.token, body: { token_name: "bad", scopes: ["root:everything"] } }),
      400,
    );
    expect(bad.validations?.[0]?.field).toBe("scopes");
    const defaults = await call("POST", "/users/me/keys/tokens", { token: user.token, body: { token_name: "default" } });
    const row = await keyRow((await json<{ key: string }>(defaults)).key);
    const days = (Date.parse(row?.expires_at ?? "") - Date.now()) / 86400_000;
    expect(days).toBeGreaterThan(6.9);
    expect(days).toBeLessThan(7.1);
  });

  it("a scoped token cannot mint a wider token", async () => {
    const user = await createUser();
    const { key } = await json<{ key: string }>(
      await call("POST", "/users/me/keys/tokens", { token: user.token, body: { token_name: "keys", scopes: ["api_key:*"] } }),
    );
    await expectError(await call("POST", "/users/me/keys/tokens", { token: key, body: { token_name: "wide", scopes: ["all"] } }), 403);
    expect((await call("POST", "/users/me/keys/tokens", { token: key, body: { token_name: "narrow", scopes: ["api_key:read"] } })).status).toBe(201);
  });

  it("a member cannot manage another user's tokens", async () => {
    const a = await createUser();
    const b = await createUser();
    await expectError(await call("POST", `/users/${b.id}/keys/tokens`, { token: a.token, body: { token_name: "x" } }), 404);
    await expectError(await call("GET", `/users/${b.id}/keys/tokens`, { token: a.token }), 404);
    await expectError(await call("DELETE", `/users/${b.id}/keys/${b.token.slice(0, 10)}`, { token: a.token }), 404);
    expect((await call("GET", "/users/me", { token: b.token })).status).toBe(200);
  });
});

describe("the isolate's authentication cache", () => {
  it("serves repeat requests without D1, forgets a key at once when it is revoked here", async () => {
    const { createExecutionContext, waitOnExecutionContext } = await import("cloudflare:test");
    const cached = { ...env, AUTH_CACHE_TTL: "30s" };
    const send = async (path: string, token: string, method = "GET") => {
      const ctx = createExecutionContext();
      const res = await fetchApp(new Request(`http://localhost/api/v2${path}`, { method, headers: { "Service-Session-Token": token } }), cached, ctx);
      await waitOnExecutionContext(ctx);
      return res;
    };
    const user = await createUser();
    expect((await send("/users/me", user.token)).status).toBe(200);
    // Expire the key behind the cache's back: the cached entry is still used within the TTL…
    await env.DB.prepare("UPDATE api_keys SET expires_at = ? WHERE id = ?")
      .bind(new Date(Date.now() - 1000).toISOString(), user.token.slice(0, 10))
      .run();
    const me = await send("/users/me", user.token);
    expect(me.status).toBe(200);
    // …but the cached secret hash is still checked on every request.
    expect((await send("/users/me", `${user.token.slice(0, 11)}BBBBBBBBBBBBBBBBBBBBBB`)).status).toBe(401);
    // A revocation in this isolate takes effect at once.
    await env.DB.prepare("UPDATE api_keys SET expires_at = ? WHERE id = ?")
      .bind(new Date(Date.now() + 3600_000).toISOString(), user.token.slice(0, 10))
      .run();
    expect((await send("/users/logout", user.token, "POST")).status).toBe(200);
    expect((await send("/users/me", user.token)).status).toBe(401);
  });
});

describe("watch upgrades and the authentication cache", () => {
  it("an upgrade always checks D1: a key revoked elsewhere cannot open a socket from a stale cache", async () => {
    const { createExecutionContext, waitOnExecutionContext } = await import("cloudflare:test");
    const cached = { ...env, AUTH_CACHE_TTL: "30s" };
    const user = await createUser();
    const send = async (headers: Record<string, string>) => {
      const ctx = createExecutionContext();
      const res = await fetchApp(
        new Request("http://localhost/api/v2/notifications/inbox/watch", { headers: { "Service-Session-Token": user.token, ...headers } }),
        cached,
        ctx,
      );
      await waitOnExecutionContext(ctx);
      return res;
    };
    expect((await send({})).status).toBe(400); // cached now (no upgrade header: plain request)
    // Revoked in "another isolate": the row is gone, but this isolate's cache still holds the key.
    await env.DB.prepare("DELETE FROM api_keys WHERE id = ?").bind(user.token.slice(0, 10)).run();
    expect((await send({})).status).toBe(400);
    await expectError(await send({ Upgrade: "websocket" }), 401);
  });
});
