import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { AuthMessages } from "../../src/auth/messages";
import { hashPassword } from "../../src/auth/passwords/hash";
import { Messages } from "../../src/http/errors";
import { coderHash } from "../fixtures/coder-hash";
import { untilLimited } from "../fixtures/rate-limits";
import { call, createUser, expectError, fetchApp, json, login, owner } from "../helpers";

describe('A3 POST /users/login (docs/api.md, "Signing in with a password")', () => {
  it("answers 201 with a session token and sets the HttpOnly SameSite=Lax cookie", async () => {
    const user = await createUser();
    const res = await call("POST", "/users/login", { body: { email: user.email, password: user.password } });
    expect(res.status).toBe(201);
    const { session_token } = await json<{ session_token: string }>(res);
    expect(session_token).toMatch(/^[0-9A-Za-z]{10}-[0-9A-Za-z]{22}$/);
    const cookie = res.headers.get("Set-Cookie") ?? "";
    expect(cookie).toContain(`service_session_token=${session_token}`);
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Lax/i);
    expect(cookie).toMatch(/Path=\//);
    expect(cookie).not.toMatch(/Secure/i); // http ACCESS_URL
  });

  it("signs in a user imported with a Coder pbkdf2 hash and upgrades it to argon2id", async () => {
    const user = await createUser();
    const legacy = await coderHash(user.password, crypto.getRandomValues(new Uint8Array(16)));
    await env.DB.prepare("UPDATE users SET hashed_password = ? WHERE id = ?").bind(legacy, user.id).run();
    expect(await login(user.email, user.password)).toBeTruthy();
    const row = await env.DB.prepare("SELECT hashed_password FROM users WHERE id = ?").bind(user.id).first<{ hashed_password: string }>();
    expect(row?.hashed_password).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    expect(await login(user.email, user.password)).toBeTruthy();
  });

  it("matches e-mails case-insensitively", async () => {
    const user = await createUser();
    expect(await login(user.email.toUpperCase(), user.password)).toBeTruthy();
  });

  it("gives unknown e-mail and wrong password the identical 401 body", async () => {
    const user = await createUser();
    const wrong = await call("POST", "/users/login", { body: { email: user.email, password: "wrong-password-123" } });
    const unknown = await call("POST", "/users/login", { body: { email: "nobody-here@herald.test", password: "wrong-password-123" } });
    const a = await expectError(wrong, 401, AuthMessages.incorrectLogin);
    const b = await expectError(unknown, 401, AuthMessages.incorrectLogin);
    expect(a).toEqual(b);
  });

  it("answers a suspended user 401 with the suspension message, only after a correct password", async () => {
    const admin = await owner();
    const user = await createUser();
    expect((await call("PUT", `/users/${user.id}/status/suspend`, { token: admin.token })).status).toBe(200);
    await expectError(await call("POST", "/users/login", { body: { email: user.email, password: user.password } }), 401, AuthMessages.suspended);
    await expectError(
      await call("POST", "/users/login", { body: { email: user.email, password: "not-the-password" } }),
      401,
      AuthMessages.incorrectLogin,
    );
    // Suspension also ends existing sessions.
    await expectError(await call("GET", "/users/me", { token: user.token }), 401);
  });

  it("answers 403 with the login type when an external-login user presents a correct password", async () => {
    const admin = await owner();
    const email = `oidc-${crypto.randomUUID().slice(0, 8)}@herald.test`;
    const res = await call("POST", "/users", { token: admin.token, body: { email, username: email.split("@")[0], login_type: "oidc" } });
    expect(res.status).toBe(201);
    const { id } = await json<{ id: string }>(res);
    // Such users normally have no password (so they get the 401); give one a hash directly to reach the 403.
    await env.DB.prepare("UPDATE users SET hashed_password = ? WHERE id = ?")
      .bind(await hashPassword("some-password-value"), id)
      .run();
    await expectError(
      await call("POST", "/users/login", { body: { email, password: "some-password-value" } }),
      403,
      AuthMessages.wrongLoginType("password", "oidc"),
    );
    await expectError(await call("POST", "/users/login", { body: { email, password: "other" } }), 401, AuthMessages.incorrectLogin);
  });

  it("answers 403 when password authentication is disabled", async () => {
    const user = await createUser();
    const ctx = createExecutionContext();
    const res = await fetchApp(
      new Request("http://localhost/api/v2/users/login", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ email: user.email, password: user.password }),
      }),
      { ...env, PASSWORD_AUTH_DISABLED: "true" },
      ctx,
    );
    await waitOnExecutionContext(ctx);
    await expectError(res, 403, AuthMessages.passwordAuthDisabled);
  });

  it("system users cannot sign in with a password", async () => {
    const svc = await createUser({ service: true });
    const me = await json<{ email: string; login_type: string; service_account: boolean }>(await call("GET", "/users/me", { token: svc.token }));
    expect(me.login_type).toBe("none");
    expect(me.service_account).toBe(true);
    await expectError(
      await call("POST", "/users/login", { body: { email: `${svc.username}@herald.test`, password: "anything-at-all" } }),
      401,
      AuthMessages.incorrectLogin,
    );
  });

  it("rate limits per account and client with 429 and Retry-After", async () => {
    const email = `target-${crypto.randomUUID().slice(0, 8)}@herald.test`;
    const attacker = { "CF-Connecting-IP": `198.51.100.${Math.floor(Math.random() * 250)}` };
    const limited = await untilLimited(
      10,
      () => call("POST", "/users/login", { headers: attacker, body: { email, password: "guess-guess-guess" } }),
      (res) => expect(res.status).toBe(401),
    );
    const body = await expectError(limited, 429);
    expect(body.message).toBe(Messages.rateLimited(10, "1m0s"));
    expect(limited.headers.get("Retry-After")).toBe("60");
  });

  it("an attacker's failures from elsewhere never refuse the owner's correct password (no lock-out weapon)", async () => {
    const user = await createUser();
    const attacker = { "CF-Connecting-IP": `198.51.100.${Math.floor(Math.random() * 250)}` };
    await untilLimited(10, () => call("POST", "/users/login", { headers: attacker, body: { email: user.email, password: "guess-guess-guess" } }));
    const owner = await call("POST", "/users/login", {
      headers: { "CF-Connecting-IP": "203.0.113.7" },
      body: { email: user.email, password: user.password },
    });
    expect(owner.status).toBe(201);
  });

  it("a slower ceiling per account counts every address together (100 a minute)", async () => {
    const email = `spread-${crypto.randomUUID().slice(0, 8)}@herald.test`;
    let limitedAt = 0;
    // Each guess from its own address; the local limiter counts in clock-aligned windows, so allow two of them.
    for (let i = 1; i <= 210 && limitedAt === 0; i++) {
      const res = await call("POST", "/users/login", { body: { email, password: "guess-guess-guess" } });
      if (res.status === 429) limitedAt = i;
      else expect(res.status).toBe(401);
    }
    expect(limitedAt).toBeGreaterThan(10);
    const body = await expectError(await call("POST", "/users/login", { body: { email, password: "guess-guess-guess" } }), 429);
    expect(body.message).toBe(Messages.rateLimited(100, "1m0s"));
  }, 60_000);

  it("rate limits per client IP", async () => {
    const ip = `192.0.2.${Math.floor(Math.random() * 250)}`;
    let status = 0;
    for (let i = 0; i < 45 && status !== 429; i++) {
      const res = await call("POST", "/users/login", {
        body: { email: `ip-${i}-${crypto.randomUUID().slice(0, 6)}@herald.test`, password: "guess-guess-guess" },
        headers: { "CF-Connecting-IP": ip },
      });
      status = res.status;
    }
    expect(status).toBe(429);
  });

  it("an unknown e-mail costs the same order of time as a wrong password (a dummy hash is verified)", async () => {
    const user = await createUser();
    // workerd's clock only moves at I/O, so a trivial query before each reading makes it include the hashing.
    const tick = () => env.DB.prepare("SELECT 1").first();
    const time = async (email: string) => {
      await tick();
      const start = performance.now();
      await call("POST", "/users/login", { body: { email, password: "wrong-password-123" } });
      await tick();
      return performance.now() - start;
    };
    // Warm both paths, then compare medians; no wall-clock threshold, only the ratio between the two paths.
    await time(user.email);
    await time("ghost@herald.test");
    const wrong: number[] = [];
    const unknown: number[] = [];
    for (let i = 0; i < 3; i++) {
      wrong.push(await time(user.email));
      unknown.push(await time(`ghost-${i}@herald.test`));
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
    const ratio = median(unknown) / median(wrong);
    expect(ratio).toBeGreaterThan(0.33);
    expect(ratio).toBeLessThan(3);
  });
});

describe("sign-in refuses another site (login CSRF)", () => {
  const EVIL = "https://evil.example.com";

  it("A3: an Origin that is not allowed → 403 and no cookie; our own origin or none → 201", async () => {
    const user = await createUser();
    const body = { email: user.email, password: user.password };
    const refused = await call("POST", "/users/login", { headers: { Origin: EVIL }, body });
    await expectError(refused, 403, Messages.forbidden);
    expect(refused.headers.get("Set-Cookie")).toBeNull();
    // The attack: a text/plain form whose field name and value make up a JSON body.
    const form = await call("POST", "/users/login", {
      headers: { Origin: EVIL, "Content-Type": "text/plain" },
      raw: `{"email":"${user.email}","password":"${user.password}","x":"="}`,
    });
    await expectError(form, 403, Messages.forbidden);
    expect((await call("POST", "/users/login", { headers: { Origin: "http://localhost:8787" }, body })).status).toBe(201);
    expect((await call("POST", "/users/login", { body })).status).toBe(201);
  });

  it("a form content type without a JSON body is refused", async () => {
    const user = await createUser();
    const res = await call("POST", "/users/login", {
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      raw: `email=${encodeURIComponent(user.email)}&password=${encodeURIComponent(user.password)}`,
    });
    await expectError(res, 400, Messages.badJson);
    expect(res.headers.get("Set-Cookie")).toBeNull();
  });

  it("A4 and the first user: an Origin that is not allowed → 403", async () => {
    await owner();
    await expectError(
      await call("POST", "/users/otp/change-password", {
        headers: { Origin: EVIL },
        body: { email: "a@herald.test", one_time_passcode: crypto.randomUUID(), password: "violet-anchor-mountain-73" },
      }),
      403,
      Messages.forbidden,
    );
    await expectError(
      await call("POST", "/users/first", {
        headers: { Origin: EVIL },
        body: { email: "x@herald.test", username: "x", password: "violet-anchor-mountain-73" },
      }),
      403,
      Messages.forbidden,
    );
  });
});
