/**
 * D1 read replication through the Sessions API (docs/consistency.md): which session a request reads from, the
 * `Herald-D1-Bookmark` round trip, the fallback to the primary, and what a malformed or hostile bookmark gets.
 *
 * Local D1 (miniflare) has no replicas, so these tests check the plumbing and the bookmark round trip, never replica
 * lag. Where a lagging replica matters, `laggingReplica` stands in for one: the sessions that D1 may serve from a
 * replica read a snapshot of some tables, taken earlier, while the primary moves on; a session whose bookmark is newer
 * than the snapshot is served at least that new, as D1 does.
 */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { issueKey } from "../../src/auth/keys";
import { createHeraldClient } from "../../src/client";
import { acceptedBookmark, BOOKMARK_HEADER, BOOKMARK_PATTERN } from "../../src/db/bookmark";
import { database } from "../../src/db/client";
import { Messages } from "../../src/http/errors";
import { BASE, call, createUser, expectError, fetchApp, json, owner, send } from "../helpers";

const SHAPE = new RegExp(BOOKMARK_PATTERN);
/** Well-formed, and ahead of anything this database will reach: a forged bookmark. */
const FORGED = `ffffffff-ffffffff-ffffffff-${"f".repeat(32)}`;

/** env.DB with its `withSession` replaced; every other method is the real binding's. */
function withSessions(open: (constraintOrBookmark: string) => D1DatabaseSession): D1Database {
  return new Proxy(env.DB, {
    get(target, property) {
      if (property === "withSession") return (constraintOrBookmark = "first-unconstrained") => open(constraintOrBookmark);
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** A session whose every query fails, as D1 would fail one it cannot serve. */
function failingSession(constraintOrBookmark: string): D1DatabaseSession {
  const fail = (): never => {
    throw new Error("D1_ERROR: the stand-in cannot serve this session");
  };
  // As a real session: a constraint is no bookmark.
  return { prepare: fail, batch: async () => fail(), getBookmark: () => acceptedBookmark(constraintOrBookmark) ?? null };
}

/** The primary's current bookmark, read through a session of its own. */
async function primaryBookmark(): Promise<string> {
  const session = env.DB.withSession("first-primary");
  await session.prepare("SELECT 1").first();
  return session.getBookmark() ?? "";
}

/**
 * A replica that lags: the given tables as they are now. Sessions D1 may serve from a replica read these copies,
 * unless their bookmark is newer than the copy (then, as in D1, something at least that new answers: here the primary).
 */
async function laggingReplica(tables: readonly string[], opened: string[] = []): Promise<D1Database> {
  await env.DB.batch(
    tables.flatMap((t) => [
      env.DB.prepare(`DROP TABLE IF EXISTS "replica_${t}"`),
      env.DB.prepare(`CREATE TABLE "replica_${t}" AS SELECT * FROM "${t}"`),
    ]),
  );
  const copied = await primaryBookmark();
  const onReplica = (sql: string) => tables.reduce((query, t) => query.replaceAll(`"${t}"`, `"replica_${t}"`), sql);
  return withSessions((constraintOrBookmark) => {
    opened.push(constraintOrBookmark);
    const session = env.DB.withSession(constraintOrBookmark);
    const replicaServes =
      constraintOrBookmark === "first-unconstrained" || (constraintOrBookmark !== "first-primary" && constraintOrBookmark <= copied);
    if (!replicaServes) return session;
    return {
      prepare: (query) => session.prepare(onReplica(query)),
      batch: <T>(statements: D1PreparedStatement[]) => session.batch<T>(statements),
      getBookmark: () => session.getBookmark(),
    };
  });
}

/**
 * `fetchApp` against a stand-in D1, under a fresh execution context, with the production AUTH_CACHE_TTL: with the
 * tests' `0s`, authentication reads the primary only (docs/consistency.md).
 */
async function withDb(DB: D1Database, request: Request, AUTH_CACHE_TTL = "5s"): Promise<Response> {
  const ctx = createExecutionContext();
  const res = await fetchApp(request, { ...env, DB, AUTH_CACHE_TTL }, ctx);
  await waitOnExecutionContext(ctx);
  return res;
}

function get(path: string, headers: Record<string, string>): Request {
  return new Request(`${BASE}/api/v2${path}`, { headers });
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("docs/consistency.md, the header", () => {
  it("a write's answer carries a bookmark of D1's shape, and a read sent with it sees the write", async () => {
    const admin = await owner();
    const created = await call("POST", "/users", {
      token: admin.token,
      body: { username: `bm-${crypto.randomUUID().slice(0, 8)}`, service_account: true },
    });
    expect(created.status).toBe(201);
    const written = created.headers.get(BOOKMARK_HEADER) ?? "";
    // The shape Herald accepts is the shape D1 hands out: a new format would fail here first.
    expect(written).toMatch(SHAPE);
    expect(acceptedBookmark(written)).toBe(written);
    const { id } = await json<{ id: string }>(created);

    const read = await call("GET", `/users/${id}`, { token: admin.token, headers: { [BOOKMARK_HEADER]: written } });
    expect(read.status).toBe(200);
    expect((await json<{ id: string }>(read)).id).toBe(id);
    // The read's own bookmark is never older than the one it was sent.
    expect((read.headers.get(BOOKMARK_HEADER) ?? "") >= written).toBe(true);
  });

  it("an answer that used no D1 echoes a well-formed bookmark and adds none of its own", async () => {
    const bookmark = await primaryBookmark();
    expect((await call("GET", "/auth/scopes", { headers: { [BOOKMARK_HEADER]: bookmark } })).headers.get(BOOKMARK_HEADER)).toBe(bookmark);
    expect((await call("GET", "/auth/scopes")).headers.get(BOOKMARK_HEADER)).toBeNull();
  });

  it("is accepted and exposed through CORS for CORS_ALLOWED_ORIGINS", async () => {
    const origin = "https://dash.example.com";
    const withCors = { ...env, CORS_ALLOWED_ORIGINS: origin };
    const ctx = createExecutionContext();
    const preflight = await fetchApp(
      new Request(`${BASE}/api/v2/users/me`, {
        method: "OPTIONS",
        headers: { Origin: origin, "Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": BOOKMARK_HEADER },
      }),
      withCors,
      ctx,
    );
    expect(preflight.headers.get("Access-Control-Allow-Headers")?.split(",")).toContain(BOOKMARK_HEADER);
    const { token } = await owner();
    const me = await fetchApp(get("/users/me", { Origin: origin, "Service-Session-Token": token }), withCors, ctx);
    expect(me.status).toBe(200);
    expect(me.headers.get("Access-Control-Expose-Headers")?.split(",")).toContain(BOOKMARK_HEADER);
    expect(me.headers.get(BOOKMARK_HEADER)).toMatch(SHAPE);
    await waitOnExecutionContext(ctx);
  });
});

describe("docs/consistency.md, a malformed or hostile bookmark", () => {
  it("is ignored: the answer is the one without it, with a fresh bookmark, never a 4xx or 5xx", async () => {
    const { token } = await owner();
    const valid = await primaryBookmark();
    const malformed = [
      "garbage",
      valid.toUpperCase(),
      `${valid} `.repeat(2).trim(),
      valid.slice(0, -1),
      `${valid.slice(0, -1)}g`,
      "first-primary",
      "x".repeat(64 * 1024),
    ];
    for (const bookmark of malformed) {
      const res = await call("GET", "/users/me", { token, headers: { [BOOKMARK_HEADER]: bookmark } });
      expect(res.status, bookmark.slice(0, 80)).toBe(200);
      const answered = res.headers.get(BOOKMARK_HEADER) ?? "";
      expect(answered).toMatch(SHAPE);
      expect(answered).not.toBe(bookmark);
    }
  });

  it("a well-formed one D1 cannot serve: the read is answered again without it, not with a 5xx", async () => {
    const { token } = await owner();
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const DB = withSessions((b) => (b === FORGED ? failingSession(FORGED) : env.DB.withSession(b)));
    // GET /users reads D1 beyond authentication, which the isolate may have cached.
    const res = await withDb(DB, get("/users", { "Service-Session-Token": token, [BOOKMARK_HEADER]: FORGED }));
    expect(res.status).toBe(200);
    expect(res.headers.get(BOOKMARK_HEADER)).toMatch(SHAPE);
    expect(res.headers.get(BOOKMARK_HEADER)).not.toBe(FORGED);
    // The failed first attempt was logged as the unexpected error it was.
    expect(errors).toHaveBeenCalledTimes(1);
  });

  it("a genuine failure is answered once again and then as the 500 it is (no loop)", async () => {
    const { token } = await owner();
    vi.spyOn(console, "error").mockImplementation(() => {});
    const DB = withSessions((b) => failingSession(b));
    const res = await withDb(DB, get("/users", { "Service-Session-Token": token, [BOOKMARK_HEADER]: FORGED }));
    await expectError(res, 500, Messages.internal);
  });
});

describe("docs/consistency.md, which session a request uses", () => {
  it("a write route starts at the primary; a read route reads where a replica may answer", async () => {
    const admin = await owner();
    vi.spyOn(console, "error").mockImplementation(() => {});
    // Every session that a replica could serve fails: whatever succeeds read only the primary.
    const DB = withSessions((b) => (b === "first-primary" ? env.DB.withSession(b) : failingSession(b)));
    const created = await withDb(
      DB,
      new Request(`${BASE}/api/v2/users`, {
        method: "POST",
        headers: { "Service-Session-Token": admin.token, "Content-Type": "application/json" },
        body: JSON.stringify({ username: `primary-${crypto.randomUUID().slice(0, 8)}`, service_account: true }),
      }),
    );
    expect(created.status).toBe(201);
    expect(created.headers.get(BOOKMARK_HEADER)).toMatch(SHAPE);
    await expectError(await withDb(DB, get("/users", { "Service-Session-Token": admin.token })), 500, Messages.internal);
  });

  it("a watch upgrade, and every request under AUTH_CACHE_TTL 0s, authenticates on the primary", async () => {
    const { token } = await owner();
    vi.spyOn(console, "error").mockImplementation(() => {});
    const DB = withSessions((b) => (b === "first-primary" ? env.DB.withSession(b) : failingSession(b)));
    // GET /users/me reads nothing beyond authentication.
    expect((await withDb(DB, get("/users/me", { "Service-Session-Token": token }), "0s")).status).toBe(200);
    await expectError(await withDb(DB, get("/users/me", { "Service-Session-Token": token })), 500, Messages.internal);
    const upgrade = await withDb(DB, get("/notifications/inbox/watch", { "Service-Session-Token": token, Upgrade: "websocket" }));
    expect(upgrade.status).toBe(101);
    upgrade.webSocket?.accept();
    upgrade.webSocket?.close(1000);
  });
});

describe("docs/consistency.md, the fallback rule: no false refusal for a client without a bookmark", () => {
  it("a token issued elsewhere a moment ago works at once, though the replica has not seen it", async () => {
    const user = await createUser();
    const DB = await laggingReplica(["api_keys"]);
    // Issued straight into D1, as another isolate would: this isolate has not seen it either.
    const key = await issueKey(database(env.DB), {
      userId: user.id,
      loginType: "token",
      lifetimeMs: 60_000,
      tokenName: `fresh-${crypto.randomUUID()}`,
    });
    await key.insert;
    const me = await withDb(DB, get("/users/me", { "Service-Session-Token": key.token }));
    expect(me.status).toBe(200);
    expect((await json<{ id: string }>(me)).id).toBe(user.id);
    // A credential that does not exist anywhere is still refused, after the one primary read.
    await expectError(await withDb(DB, get("/users/me", { "Service-Session-Token": `${key.token.slice(0, 11)}${"B".repeat(22)}` })), 401);
  });

  it("a user created elsewhere a moment ago is found, not a 404", async () => {
    const admin = await owner();
    const created = await call("POST", "/users", {
      token: admin.token,
      body: { username: `fresh-${crypto.randomUUID().slice(0, 8)}`, service_account: true },
    });
    const { id } = await json<{ id: string }>(created);
    // A replica that has every user but this one (which this isolate did not write through the stand-in).
    const DB = await laggingReplica(["users"]);
    await env.DB.prepare('DELETE FROM "replica_users" WHERE id = ?').bind(id).run();
    const read = await withDb(DB, get(`/users/${id}`, { "Service-Session-Token": admin.token }));
    expect(read.status).toBe(200);
    expect((await json<{ id: string }>(read)).id).toBe(id);
    // Someone who exists nowhere is still a 404, after the one primary read.
    await expectError(await withDb(DB, get(`/users/${crypto.randomUUID()}`, { "Service-Session-Token": admin.token })), 404);
  });

  it("a just-created session works at once through the real Worker, without a bookmark", async () => {
    const user = await createUser();
    const me = await call("GET", "/users/me", { token: user.token });
    expect(me.status).toBe(200);
  });
});

describe("docs/consistency.md, the fallback rule: every refusal takes the same reads", () => {
  // No timing is measured: the test counts the primary sessions a refusal opens. Every refusal takes one, so how long
  // it takes does not tell a missing key or user from an existing one (docs/api.md, Decisions, "One 401 detail").
  it("a credential: unknown id, wrong secret; a user: missing, not readable", async () => {
    const member = await createUser();
    const other = await createUser();
    const opened: string[] = [];
    const DB = await laggingReplica(["api_keys", "users"], opened);
    const primaryReads = async (request: Request, status: number) => {
      opened.length = 0;
      expect((await withDb(DB, request)).status).toBe(status);
      return opened.filter((constraint) => constraint === "first-primary").length;
    };
    const as = (token: string, path = "/users/me") => get(path, { "Service-Session-Token": token });
    expect(await primaryReads(as(`${member.token.slice(0, 11)}${"B".repeat(22)}`), 401)).toBe(1);
    expect(await primaryReads(as(`ZZZZZZZZZZ-${"B".repeat(22)}`), 401)).toBe(1);
    expect(await primaryReads(as(member.token), 200)).toBe(0);
    expect(await primaryReads(as(member.token, `/users/${other.id}`), 404)).toBe(1);
    expect(await primaryReads(as(member.token, `/users/${crypto.randomUUID()}`), 404)).toBe(1);
    expect(await primaryReads(as(member.token, `/users/${member.username}`), 200)).toBe(0);
  });
});

describe("docs/consistency.md, the isolate floor", () => {
  it("what this isolate revoked stays revoked here at once, whatever the replica still holds", async () => {
    const user = await createUser();
    const DB = await laggingReplica(["api_keys", "users"]);
    // The replica still holds the session; the logout runs at the primary and raises this isolate's floor.
    const logout = await withDb(DB, new Request(`${BASE}/api/v2/users/logout`, { method: "POST", headers: { "Service-Session-Token": user.token } }));
    expect(logout.status).toBe(200);
    await expectError(await withDb(DB, get("/users/me", { "Service-Session-Token": user.token })), 401);
  });
});

describe("docs/consistency.md, the typed client", () => {
  it("sends back the latest bookmark it was answered with", async () => {
    const admin = await owner();
    const sent: (string | null)[] = [];
    const herald = createHeraldClient({
      baseUrl: BASE,
      token: admin.token,
      fetch: async (input, init) => {
        const request = new Request(input, init);
        sent.push(request.headers.get(BOOKMARK_HEADER));
        return send(request);
      },
    });
    const created = await herald.users.$post({ json: { username: `client-${crypto.randomUUID().slice(0, 8)}`, service_account: true } });
    expect(created.status).toBe(201);
    const written = created.headers.get(BOOKMARK_HEADER);
    const { id } = await created.json();
    const read = await herald.users[":user"].$get({ param: { user: id } });
    expect(read.status).toBe(200);
    expect(sent).toEqual([null, written]);
  });
});
