/**
 * Account and key changes, and the revocation each one announces (docs/architecture.md, "Account changes"): every
 * route that ends credentials or changes what was cached about a user goes through src/auth/account-changes.ts, so
 * the revoked credential answers 401 on the very next request (this isolate forgot it) and the watch sockets it
 * opened close with 4401 (the inbox subscribes to revocations), while credentials the change spared keep working.
 */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { commitAccountChanges, deleteAccount, endKeys, setPassword, setRoles, setStatus } from "../../src/auth/account-changes";
import { issuePasscode } from "../../src/auth/otp";
import { onRevocation, type Revocation } from "../../src/auth/revocation";
import { getConfig } from "../../src/config/config";
import { database } from "../../src/db/client";
import { apiKeys, auditLogs } from "../../src/db/schema";
import type { Env } from "../../src/env";
import { apiRequest, type CallOptions, createUser, fetchApp, json, login, owner, type TestUser } from "../helpers";
import { deliver, type Watcher, watch } from "../inbox/inbox-helpers";
import { enrolTotp } from "./mfa-helpers";

const closed = (ws: WebSocket) => new Promise<CloseEvent>((resolve) => ws.addEventListener("close", resolve, { once: true }));

/**
 * Each socket's fate, observed: its close code once it closed, or "open" if it still receives a new delivery. One
 * delivery serves every socket still open, so no socket reads a frame meant for another check.
 */
async function fates(sockets: { w: Watcher; ending: Promise<CloseEvent> }[], userId: string): Promise<(number | "open")[]> {
  const settled = await Promise.all(sockets.map(({ ending }) => Promise.race([ending, new Promise<undefined>((r) => setTimeout(r, 300))])));
  if (settled.every((event) => event !== undefined)) return settled.map((event) => event?.code ?? 0);
  const n = await deliver(userId);
  return Promise.all(
    sockets.map(async ({ w }, i) => {
      const event = settled[i];
      if (event) return event.code;
      // The change may have sent its own notice first (a password change does): read up to the delivery.
      for (let frame = 0; frame < 5; frame++) if (((await w.next()).notification as { id: string }).id === n.id) return "open" as const;
      throw new Error("the delivery never reached an open socket");
    }),
  );
}

async function watched(token: string) {
  const w = await watch("", { "Service-Session-Token": token });
  return { w, ending: closed(w.ws) };
}

/**
 * The suite runs with the isolate's authentication cache off (test/fixtures/vars.ts); here it is on, as deployed, so
 * a 401 on the next request proves the change made this isolate forget the credential, not merely that D1 changed.
 */
const cachedEnv = { ...env, AUTH_CACHE_TTL: "30s" } as unknown as Env;

async function call(method: string, path: string, options: CallOptions = {}): Promise<Response> {
  const ctx = createExecutionContext();
  const res = await fetchApp(apiRequest(method, path, options), cachedEnv, ctx);
  await waitOnExecutionContext(ctx);
  return res;
}

const meStatus = async (token: string) => (await call("GET", "/users/me", { token })).status;

/**
 * Each route that changes an account: `revoked` credentials must answer 401 and lose their sockets at once; `kept`
 * ones keep both. `user` has two sessions (`token`, `second`) and an API token.
 */
interface Case {
  name: string;
  act: (user: TestUser & { second: string; apiToken: string }, admin: { token: string }) => Promise<void>;
  revoked: ("token" | "second" | "apiToken")[];
}

const CASES: Case[] = [
  {
    name: "DELETE /users/{user}",
    act: async (u, admin) => expect((await call("DELETE", `/users/${u.id}`, { token: admin.token })).status).toBe(200),
    revoked: ["token", "second", "apiToken"],
  },
  {
    name: "PUT /users/{user}/status/suspend",
    act: async (u, admin) => expect((await call("PUT", `/users/${u.id}/status/suspend`, { token: admin.token })).status).toBe(200),
    revoked: ["token", "second", "apiToken"],
  },
  {
    name: "PUT /users/{user}/password by an owner",
    act: async (u, admin) =>
      expect(
        (await call("PUT", `/users/${u.id}/password`, { token: admin.token, body: { password: `Another-${crypto.randomUUID()}` } })).status,
      ).toBe(204),
    revoked: ["token", "second", "apiToken"],
  },
  {
    name: "PUT /users/me/password (the caller's own session survives)",
    act: async (u) =>
      expect(
        (await call("PUT", "/users/me/password", { token: u.token, body: { old_password: u.password, password: `Another-${crypto.randomUUID()}` } }))
          .status,
      ).toBe(204),
    revoked: ["second", "apiToken"],
  },
  {
    name: "POST /users/otp/change-password (a reset ends everything)",
    act: async (u) => {
      const code = await issuePasscode(database(env.DB), getConfig(env as unknown as Env), u.id);
      const res = await call("POST", "/users/otp/change-password", {
        body: { email: u.email, one_time_passcode: code, password: `Another-${crypto.randomUUID()}` },
      });
      expect(res.status).toBe(204);
    },
    revoked: ["token", "second", "apiToken"],
  },
  {
    name: "DELETE /users/{user}/keys/sessions?except_current=true",
    act: async (u) => expect((await call("DELETE", "/users/me/keys/sessions?except_current=true", { token: u.token })).status).toBe(204),
    revoked: ["second"],
  },
  {
    name: "DELETE /users/{user}/keys/{id} (the API token)",
    act: async (u) => expect((await call("DELETE", `/users/me/keys/${u.apiToken.split("-")[0]}`, { token: u.token })).status).toBe(204),
    revoked: ["apiToken"],
  },
  {
    name: "POST /users/logout",
    act: async (u) => expect((await call("POST", "/users/logout", { token: u.second })).status).toBe(200),
    revoked: ["second"],
  },
  {
    name: "POST /users/login over a session cookie (the old session is replaced)",
    act: async (u) => {
      const res = await call("POST", "/users/login", {
        headers: { Cookie: `service_session_token=${u.second}` },
        body: { email: u.email, password: u.password },
      });
      expect(res.status).toBe(201);
    },
    revoked: ["second"],
  },
  {
    name: "PUT /users/{user}/roles (credentials stand)",
    act: async (u, admin) =>
      expect((await call("PUT", `/users/${u.id}/roles`, { token: admin.token, body: { roles: ["auditor"] } })).status).toBe(200),
    revoked: [],
  },
  {
    name: "DELETE /users/{user}/mfa (an owner's reset ends the login sessions, not the API token)",
    act: async (u, admin) => {
      await enrolTotp(u);
      // Enrolling made this isolate forget the user's keys: each is cached again, so only the reset can end them at once.
      for (const token of [u.token, u.second, u.apiToken]) expect(await meStatus(token)).toBe(200);
      expect((await call("DELETE", `/users/${u.id}/mfa`, { token: admin.token })).status).toBe(204);
    },
    revoked: ["token", "second"],
  },
];

describe("every account or key change revokes exactly what it ended, at once", () => {
  for (const testCase of CASES) {
    it(testCase.name, async () => {
      const admin = await owner();
      const base = await createUser();
      const second = await login(base.email, base.password);
      const created = await call("POST", "/users/me/keys/tokens", { token: base.token, body: { token_name: `t-${crypto.randomUUID()}` } });
      const apiToken = (await json<{ key: string }>(created)).key;
      const user = { ...base, second, apiToken };
      // Each credential is used once first, so this isolate has it cached (for 30 s): only forgetting makes the 401 immediate.
      const sockets = {} as Record<"token" | "second" | "apiToken", Awaited<ReturnType<typeof watched>>>;
      for (const which of ["token", "second", "apiToken"] as const) {
        expect(await meStatus(user[which])).toBe(200);
        sockets[which] = await watched(user[which]);
      }

      await testCase.act(user, admin);

      const credentials = ["token", "second", "apiToken"] as const;
      const expected = credentials.map((which) => (testCase.revoked.includes(which) ? 4401 : "open"));
      expect(
        await fates(
          credentials.map((which) => sockets[which]),
          user.id,
        ),
      ).toEqual(expected);
      const statuses = await Promise.all(credentials.map((which) => meStatus(user[which])));
      expect(statuses, "each credential on the next request").toEqual(credentials.map((which) => (testCase.revoked.includes(which) ? 401 : 200)));
    });
  }

  it("a role change is seen on the very next request with the same credential", async () => {
    const admin = await owner();
    const user = await createUser();
    const roles = async () =>
      (await json<{ roles: { name: string }[] }>(await call("GET", "/users/me", { token: user.token }))).roles.map((r) => r.name);
    expect(await roles()).toEqual([]);
    expect((await call("PUT", `/users/${user.id}/roles`, { token: admin.token, body: { roles: ["auditor"] } })).status).toBe(200);
    expect(await roles()).toEqual(["auditor"]);
    expect((await call("GET", "/users", { token: user.token })).status).toBe(200);
  });
});

describe("commitAccountChanges", () => {
  const context = () => {
    const pending: Promise<unknown>[] = [];
    return { c: { env: env as unknown as Env, executionCtx: { waitUntil: (p: Promise<unknown>) => void pending.push(p) } }, pending };
  };

  it("commits the changes and the extra statements in one batch, then announces each revocation to subscribers", async () => {
    const user = await createUser();
    const second = await login(user.email, user.password);
    const heard: Revocation[] = [];
    onRevocation((revocation) => {
      if (revocation.userId === user.id) heard.push(revocation);
    });
    const db = database(env.DB);
    const auditId = crypto.randomUUID();
    const { c } = context();
    const { results, revocations } = await commitAccountChanges(
      c,
      db,
      [endKeys(db, user.id, eq(apiKeys.id, second.split("-")[0] ?? "")), setRoles(db, user.id, ["auditor"], new Date().toISOString())],
      [
        db
          .insert(auditLogs)
          .values({
            id: auditId,
            time: new Date().toISOString(),
            userId: null,
            action: "test",
            resourceType: "user",
            resourceId: user.id,
            diff: {},
            ip: "",
            requestId: "",
          })
          .returning({ id: auditLogs.id }),
      ] as const,
    );
    expect(results).toEqual([[{ id: auditId }]]);
    const expected: Revocation[] = [
      { kind: "credentials-ended", userId: user.id, keyIds: [second.split("-")[0] ?? ""] },
      { kind: "user-changed", userId: user.id },
    ];
    expect(revocations).toEqual(expected);
    expect(heard).toEqual(expected);
  });

  it("names the keys a delete actually ended: none when nothing matched, all but the kept one on a password change", async () => {
    const user = await createUser();
    const second = await login(user.email, user.password);
    const db = database(env.DB);
    const { c } = context();
    const none = await commitAccountChanges(c, db, [endKeys(db, user.id, eq(apiKeys.id, "no-such-key"))], [] as const);
    expect(none.revocations).toEqual([{ kind: "credentials-ended", userId: user.id, keyIds: [] }]);
    const kept = user.token.split("-")[0] ?? "";
    const changed = await commitAccountChanges(c, db, [setPassword(db, user.id, "x".repeat(20), { keep: kept })], [] as const);
    expect(changed.revocations).toEqual([{ kind: "credentials-ended", userId: user.id, keyIds: [second.split("-")[0]] }]);
    const left = await db.select({ id: apiKeys.id }).from(apiKeys).where(eq(apiKeys.userId, user.id));
    expect(left.map((k) => k.id)).toEqual([kept]);
  });

  it("suspension and deletion end every credential; activation only refreshes what was cached", async () => {
    const user = await createUser();
    const db = database(env.DB);
    const { c } = context();
    const now = new Date().toISOString();
    const suspended = await commitAccountChanges(c, db, [setStatus(db, user.id, "suspended", now)], [] as const);
    expect(suspended.revocations).toEqual([{ kind: "credentials-ended", userId: user.id, keyIds: "all" }]);
    const active = await commitAccountChanges(c, db, [setStatus(db, user.id, "active", now)], [] as const);
    expect(active.revocations).toEqual([{ kind: "user-changed", userId: user.id }]);
    const deleted = await commitAccountChanges(c, db, [deleteAccount(db, user.id)], [] as const);
    expect(deleted.revocations).toEqual([{ kind: "credentials-ended", userId: user.id, keyIds: "all" }]);
    expect(await db.select().from(apiKeys).where(eq(apiKeys.userId, user.id))).toEqual([]);
  });

  it("a batch that fails commits nothing and announces nothing", async () => {
    const user = await createUser();
    const heard: Revocation[] = [];
    onRevocation((revocation) => {
      if (revocation.userId === user.id) heard.push(revocation);
    });
    const db = database(env.DB);
    const { c } = context();
    const clash = crypto.randomUUID();
    const row = {
      id: clash,
      time: new Date().toISOString(),
      userId: null,
      action: "test",
      resourceType: "user",
      resourceId: user.id,
      diff: {},
      ip: "",
      requestId: "",
    };
    await db.insert(auditLogs).values(row);
    // The duplicate audit id fails the batch after the key delete ran inside it: the transaction rolls back.
    await expect(commitAccountChanges(c, db, [endKeys(db, user.id)], [db.insert(auditLogs).values(row)] as const)).rejects.toThrow();
    expect(heard).toEqual([]);
    expect((await db.select().from(apiKeys).where(eq(apiKeys.userId, user.id))).length).toBe(1);
    expect(await meStatus(user.token)).toBe(200);
  });
});
