import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { claimPasscodeMail, PASSCODE_MAILS } from "../../src/auth/password-reset";
import { CUSTOM_NOTIFICATIONS } from "../../src/auth/rate-limit";
import { database } from "../../src/db/client";
import type { Env } from "../../src/env";
import { Messages } from "../../src/http/errors";
import { handleScheduled } from "../../src/notifications/background";
import { TEMPLATE_IDS } from "../../src/notifications/templates";
import { UserMessages } from "../../src/users/messages";
import { untilLimited } from "../fixtures/rate-limits";
import { BASE, call, createUser, expectError, fetchApp } from "../helpers";
import { requestPasscodeSettled } from "./passcode-helpers";

// Limits on every password check and on minting credentials, on custom notifications, and caps on passcode mail
// (docs/security.md).

describe("per-user limits on password checks and credentials (10 a minute)", () => {
  it("POST /users/validate-password", async () => {
    const user = await createUser();
    const limited = await untilLimited(10, () =>
      call("POST", "/users/validate-password", { token: user.token, body: { password: "candidate-password-1" } }),
    );
    expect((await expectError(limited, 429)).message).toBe(Messages.rateLimited(10, "1m0s"));
  });

  it("PUT /users/me/password: the old password cannot be guessed without limit", async () => {
    const user = await createUser();
    const limited = await untilLimited(10, () =>
      call("PUT", "/users/me/password", { token: user.token, body: { old_password: "a-wrong-guess-99", password: "violet-anchor-mountain-73" } }),
    );
    await expectError(limited, 429);
  });

  it("POST /users/{user}/keys/tokens, counted against the user who will hold the token", async () => {
    const user = await createUser();
    let n = 0;
    const limited = await untilLimited(10, () => call("POST", "/users/me/keys/tokens", { token: user.token, body: { token_name: `t${n++}` } }));
    await expectError(limited, 429);
  });

  it("a user holds at most TOKEN_MAX_PER_USER tokens", async () => {
    const user = await createUser();
    const capped = { ...env, TOKEN_MAX_PER_USER: "2" } as Env;
    const create = async (name: string) => {
      const ctx = createExecutionContext();
      const res = await fetchApp(
        new Request(`${BASE}/api/v2/users/me/keys/tokens`, {
          method: "POST",
          headers: { "Service-Session-Token": user.token, "Content-Type": "application/json" },
          body: JSON.stringify({ token_name: name }),
        }),
        capped,
        ctx,
      );
      await waitOnExecutionContext(ctx);
      return res;
    };
    expect((await create("one")).status).toBe(201);
    expect((await create("two")).status).toBe(201);
    const third = await expectError(await create("three"), 400, UserMessages.tooManyTokens);
    expect(third.detail).toMatch(/at most 2 API tokens/);
  });
});

describe('login sessions per user (docs/security.md, "What one user can make Herald hold")', () => {
  it("past SESSIONS_MAX_PER_USER a sign-in ends the least recently used session; API tokens are not counted", async () => {
    const user = await createUser(); // one session already
    const capped = { ...env, SESSIONS_MAX_PER_USER: "3" } as Env;
    const signIn = async () => {
      const ctx = createExecutionContext();
      const res = await fetchApp(
        new Request(`${BASE}/api/v2/users/login`, { method: "POST", body: JSON.stringify({ email: user.email, password: user.password }) }),
        capped,
        ctx,
      );
      await waitOnExecutionContext(ctx);
      expect(res.status).toBe(201);
      return (await res.json<{ session_token: string }>()).session_token;
    };
    const token = await call("POST", "/users/me/keys/tokens", { token: user.token, body: { token_name: "kept" } });
    const apiToken = (await token.json<{ key: string }>()).key;
    const sessions = [user.token, await signIn(), await signIn()];
    const me = (t: string) => call("GET", "/users/me", { token: t }).then((r) => r.status);
    expect(await Promise.all(sessions.map(me))).toEqual([200, 200, 200]);
    // The fourth sign-in ends the session used least recently. Use is recorded at most hourly (a session slides by
    // the hour), so within the hour that is the oldest one.
    sessions.push(await signIn());
    expect(await Promise.all(sessions.map(me))).toEqual([401, 200, 200, 200]);
    expect(await me(apiToken)).toBe(200);
  });
});

describe('custom notifications per user (docs/security.md, "What one user can make Herald hold")', () => {
  it("POST /notifications/custom past 60 a minute: 429 with Retry-After, every credential of the user together; a refused one stores nothing", async () => {
    const user = await createUser();
    // The template off for this user: every accepted request still records its messages (inhibited), and nothing
    // reaches the shared peers.
    const off = await call("PUT", `/users/${user.id}/notifications/preferences`, {
      token: user.token,
      body: { template_disabled_map: { [TEMPLATE_IDS.custom]: true } },
    });
    expect(off.status).toBe(200);
    const minted = await call("POST", "/users/me/keys/tokens", { token: user.token, body: { token_name: "sender" } });
    const apiToken = (await minted.json<{ key: string }>()).key;
    const messages = async (userId: string) =>
      (
        await env.DB.prepare("SELECT count(*) AS n FROM notification_messages WHERE user_id = ? AND template_id = ?")
          .bind(userId, TEMPLATE_IDS.custom)
          .first<{ n: number }>()
      )?.n ?? 0;
    const custom = (token: string, content: Record<string, string> = { title: "again" }) =>
      call("POST", "/notifications/custom", { token, body: { content } });

    let accepted = 0;
    const limited = await untilLimited(CUSTOM_NOTIFICATIONS.limit, async () => {
      // The session and the API token by turns: the budget is the user's, not a credential's.
      const res = await custom(accepted % 2 === 0 ? user.token : apiToken);
      if (res.status === 204) accepted += 1;
      return res;
    });
    expect((await expectError(limited, 429)).message).toBe(Messages.rateLimited(CUSTOM_NOTIFICATIONS.limit, "1m0s"));
    expect(limited.headers.get("Retry-After")).toBe(String(CUSTOM_NOTIFICATIONS.periodSeconds));
    expect(accepted).toBeGreaterThanOrEqual(CUSTOM_NOTIFICATIONS.limit);
    // One message per method for each accepted request (the e-mail copy and the inbox copy), none for the refused one.
    expect(await messages(user.id)).toBe(2 * accepted);
    // Only what would fill the inbox counts: a malformed request is still answered for what it is.
    await expectError(await custom(user.token, { title: "", message: " " }), 400);
    // Another user's budget is their own.
    const other = await createUser();
    expect((await custom(other.token)).status).toBe(204);
  });
});

describe("passcode mail per address: 5 an hour, 10 a day, over sliding windows", () => {
  const passcodeMails = async (userId: string) =>
    (
      await env.DB.prepare("SELECT count(*) AS n FROM notification_messages WHERE user_id = ? AND template_id = ?")
        .bind(userId, TEMPLATE_IDS.oneTimePasscode)
        .first<{ n: number }>()
    )?.n ?? 0;

  it("requests past the hourly cap still answer 204 and send nothing more", async () => {
    const user = await createUser();
    for (let i = 0; i < PASSCODE_MAILS.perHour + 3; i++) {
      expect((await call("POST", "/users/otp/request", { body: { email: user.email } })).status).toBe(204);
    }
    // The work after each 204 runs in the urgent lane's consumer: once it is done, exactly the cap was sent.
    await requestPasscodeSettled(user.email);
    expect(await passcodeMails(user.id)).toBe(PASSCODE_MAILS.perHour);
  });

  it("the daily cap counts mails older than an hour too", async () => {
    const user = await createUser();
    const twoHoursAgo = new Date(Date.now() - 2 * 3600_000).toISOString();
    for (let i = 0; i < PASSCODE_MAILS.perDay; i++) {
      await env.DB.prepare("INSERT INTO passcode_mails (id, user_id, sent_at) VALUES (?, ?, ?)")
        .bind(crypto.randomUUID(), user.id, twoHoursAgo)
        .run();
    }
    await requestPasscodeSettled(user.email);
    expect(await passcodeMails(user.id)).toBe(0);
  });

  it("the windows slide: a mail 61 minutes old no longer counts for the hour, one 22 hours old still counts for the day", async () => {
    const db = database(env.DB);
    const user = await createUser();
    const now = Date.now();
    const at = (msAgo: number) => new Date(now - msAgo).toISOString();
    const record = (msAgo: number) =>
      env.DB.prepare("INSERT INTO passcode_mails (id, user_id, sent_at) VALUES (?, ?, ?)").bind(crypto.randomUUID(), user.id, at(msAgo)).run();
    for (let i = 0; i < PASSCODE_MAILS.perHour - 1; i++) await record(60_000);
    await record(61 * 60_000);
    // Four in the last hour: one more fits.
    expect(await claimPasscodeMail(db, user.id, now)).toBe(true);
    expect(await claimPasscodeMail(db, user.id, now)).toBe(false);
    // An hour later the hourly window is clear, but the day holds 6 + 4 = 10.
    for (let i = 0; i < 4; i++) await record(22 * 3600_000);
    expect(await claimPasscodeMail(db, user.id, now + 3600_000)).toBe(false);
    // With the day's window past the oldest ones, it fits again.
    expect(await claimPasscodeMail(db, user.id, now + 24 * 3600_000)).toBe(true);
  });

  it("the cron drops records older than a day", async () => {
    const user = await createUser();
    const old = new Date(Date.now() - 25 * 3600_000).toISOString();
    await env.DB.prepare("INSERT INTO passcode_mails (id, user_id, sent_at) VALUES (?, ?, ?)").bind(crypto.randomUUID(), user.id, old).run();
    await handleScheduled(env);
    const left = await env.DB.prepare("SELECT count(*) AS n FROM passcode_mails WHERE user_id = ?").bind(user.id).first<{ n: number }>();
    expect(left?.n).toBe(0);
  });
});
