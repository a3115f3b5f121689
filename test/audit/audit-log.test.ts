/**
 * `GET /audit` (docs/security.md, "The audit log"): who may read it, what an entry holds, the `q` search, the order,
 * the paging and the exact count, and the 400s of a bad query that change nothing. Entries are written two ways: by
 * the API's own state changes (what a person does), and straight into D1 at fixed times in 2001–2002, which a
 * `date_to:2002-12-31` term keeps apart from everything this file does now.
 */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { AuditMessages } from "../../src/audit/messages";
import { AuthzMessages } from "../../src/authz/messages";
import { Messages } from "../../src/http/errors";
import { codeAt, enrolTotp, passwordStep } from "../auth/mfa-helpers";
import { rejectedWithoutChange } from "../fixtures/stored-state";
import { call, createUser, expectError, json, owner, type TestUser } from "../helpers";
import { type Entry, readAudit, seedEntries } from "./audit-helpers";

let admin: { token: string; id: string };
let alice: TestUser;
let bob: TestUser;
const id = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, "0")}`;
const OLD = "date_to:2002-12-31";
const ids = (entries: readonly Entry[]) => entries.map((e) => e.id);

beforeAll(async () => {
  admin = await owner();
  alice = await createUser();
  bob = await createUser();
  await seedEntries([
    {
      id: id(1),
      time: "2001-03-01T10:00:00.000Z",
      userId: alice.id,
      action: "login",
      resourceType: "api_key",
      resourceId: "key_alice1",
      ip: "192.0.2.1",
    },
    {
      id: id(2),
      time: "2001-03-01T23:59:59.999Z",
      userId: bob.id,
      action: "logout",
      resourceType: "api_key",
      resourceId: "key_bob_1",
      ip: "192.0.2.2",
    },
    {
      id: id(3),
      time: "2001-03-02T00:00:00.000Z",
      userId: alice.id,
      action: "delete",
      resourceType: "user",
      resourceId: bob.id,
      ip: "192.0.2.1",
      diff: { username: bob.username },
    },
    // The same instant as 3: the id breaks the tie, the larger first.
    {
      id: id(4),
      time: "2001-03-02T00:00:00.000Z",
      userId: null,
      action: "login_second_factor_failed",
      resourceType: "user",
      resourceId: alice.id,
      ip: "198.51.100.7",
    },
    {
      id: id(5),
      time: "2002-01-01T00:00:00.000Z",
      userId: bob.id,
      action: "update",
      resourceType: "notification_template",
      resourceId: "tmpl-%_x",
      ip: "198.51.100.7",
    },
    // An actor that no longer resolves.
    {
      id: id(6),
      time: "2002-06-01T12:00:00.000Z",
      userId: crypto.randomUUID(),
      action: "create",
      resourceType: "passkey",
      resourceId: "pk1",
      diff: { name: "Yubi" },
    },
  ]);
});

describe('docs/security.md, "The audit log": who may read it', () => {
  it("owners and auditors read it; members, user-admins and organization auditors are refused 403", async () => {
    expect((await readAudit(admin.token)).count).toBeGreaterThan(0);
    const auditor = await createUser({ roles: ["auditor"] });
    expect((await readAudit(auditor.token, { q: OLD })).count).toBe(6);
    const member = await createUser();
    await expectError(await call("GET", "/audit", { token: member.token }), 403, Messages.forbidden);
    const userAdmin = await createUser({ roles: ["user-admin"] });
    await expectError(await call("GET", "/audit", { token: userAdmin.token }), 403, Messages.forbidden);
    // An organization's auditor reads its organization's resources; the site-wide log belongs to none.
    const orgAuditor = await createUser();
    await env.DB.prepare(`UPDATE organization_members SET roles = '["organization-auditor"]' WHERE user_id = ?`).bind(orgAuditor.id).run();
    await expectError(await call("GET", "/audit", { token: orgAuditor.token }), 403, Messages.forbidden);
  });

  it("an API token with audit_log:read reads it; one without is refused, naming the scope", async () => {
    const issue = async (scopes: string[]) => {
      const res = await call("POST", "/users/me/keys/tokens", {
        token: admin.token,
        body: { token_name: `audit-${crypto.randomUUID().slice(0, 8)}`, scopes },
      });
      expect(res.status, await res.clone().text()).toBe(201);
      return (await json<{ key: string }>(res)).key;
    };
    expect((await readAudit(await issue(["audit_log:read"]), { q: OLD })).count).toBe(6);
    const narrow = await expectError(await call("GET", "/audit", { token: await issue(["user:read"]) }), 403, Messages.forbidden);
    expect(narrow.detail).toBe(AuthzMessages.scopeMissing("audit_log", "read"));
  });
});

describe('docs/security.md, "The audit log": an entry', () => {
  it("a sign-in: the acting user, the User-Agent cut to 512 characters, status 200, a sentence, the stored diff", async () => {
    const userAgent = `Mozilla/5.0 ${"x".repeat(600)}`;
    const res = await call("POST", "/users/login", {
      body: { email: alice.email, password: alice.password },
      headers: { "User-Agent": userAgent, "CF-Connecting-IP": "203.0.113.9" },
    });
    expect(res.status).toBe(201);
    const [entry] = (await readAudit(admin.token, { q: `username:${alice.username} action:login`, limit: 1 })).audit_logs;
    expect(entry).toMatchObject({
      user: { id: alice.id, username: alice.username },
      action: "login",
      resource_type: "api_key",
      ip: "203.0.113.9",
      user_agent: userAgent.slice(0, 512),
      status_code: 200,
      description: `${alice.username} signed in with a password`,
      additional_fields: {},
    });
    const token = (await json<{ session_token: string }>(res)).session_token;
    expect(entry?.resource_id).toBe(token.slice(0, 10));
  });

  it("a refused second factor is kept with its 401", async () => {
    const carol = await createUser();
    await enrolTotp(carol);
    const { mfa_token } = await passwordStep(carol);
    const wrong = codeAt("JBSWY3DPEHPK3PXP");
    const res = await call("POST", "/users/login/mfa", { body: { mfa_token, code: wrong } });
    expect(res.status).toBe(401);
    const [entry] = (await readAudit(admin.token, { q: `username:${carol.username} action:login_second_factor_failed` })).audit_logs;
    expect(entry).toMatchObject({ status_code: 401, description: `${carol.username} failed the second factor of a sign-in` });
  });

  it("an entry without an actor, or whose actor no longer resolves, has user null", async () => {
    const page = await readAudit(admin.token, { q: OLD });
    const byId = new Map(page.audit_logs.map((e) => [e.id, e]));
    expect(byId.get(id(4))?.user).toBeNull();
    expect(byId.get(id(4))?.description).toBe(`Someone failed the second factor of a sign-in`);
    expect(byId.get(id(6))?.user).toBeNull();
    expect(byId.get(id(6))?.description).toBe(`An unknown user added passkey "Yubi"`);
    expect(byId.get(id(3))?.description).toBe(`${alice.username} deleted user "${bob.username}"`);
    expect(byId.get(id(3))?.additional_fields).toEqual({ username: bob.username });
  });
});

describe('docs/security.md, "The audit log": order, paging and count', () => {
  it("newest first, the id breaking a tie in time", async () => {
    expect(ids((await readAudit(admin.token, { q: OLD })).audit_logs)).toEqual([id(6), id(5), id(4), id(3), id(2), id(1)]);
  });

  it("limit and offset page through; count is every match, whatever the page", async () => {
    const pages = [];
    for (const offset of [0, 2, 4, 6]) pages.push(await readAudit(admin.token, { q: OLD, limit: 2, offset }));
    expect(pages.map((p) => ids(p.audit_logs))).toEqual([[id(6), id(5)], [id(4), id(3)], [id(2), id(1)], []]);
    expect(pages.map((p) => p.count)).toEqual([6, 6, 6, 6]);
  });

  it("without q, count is exactly the rows held; the default page is 25", async () => {
    const all = await readAudit(admin.token);
    const held = await env.DB.prepare("SELECT count(*) AS n FROM audit_logs").first<{ n: number }>();
    expect(all.count).toBe(held?.n);
    expect(all.audit_logs).toHaveLength(Math.min(25, all.count));
  });
});

describe('docs/security.md, "The audit log": q', () => {
  const cases: [string, () => string, () => string[]][] = [
    ["action", () => `action:login ${OLD}`, () => [id(1)]],
    ["action, any ASCII case (the key's too)", () => `ACTION:Login ${OLD}`, () => [id(1)]],
    ["resource_type", () => `resource_type:api_key ${OLD}`, () => [id(2), id(1)]],
    ["resource_id", () => `resource_id:key_bob_1 ${OLD}`, () => [id(2)]],
    ["resource_id with % and _, literal", () => `resource_id:tmpl-%_x ${OLD}`, () => [id(5)]],
    ["resource_id: % and _ are no wildcards", () => `resource_id:key_bob_% ${OLD}`, () => []],
    ["action: _ is no wildcard", () => `action:logou_ ${OLD}`, () => []],
    ["username, the acting user, any case", () => `username:${alice.username.toUpperCase()} ${OLD}`, () => [id(3), id(1)]],
    ["email, the acting user, any case", () => `email:${bob.email.toUpperCase()} ${OLD}`, () => [id(5), id(2)]],
    ["username: % is no wildcard", () => `username:${alice.username.slice(0, 4)}% ${OLD}`, () => []],
    ["ip", () => `ip:198.51.100.7 ${OLD}`, () => [id(5), id(4)]],
    ["date_from and date_to, one whole UTC day", () => "date_from:2001-03-02 date_to:2001-03-02", () => [id(4), id(3)]],
    ["date_to includes its last millisecond", () => "date_to:2001-03-01", () => [id(2), id(1)]],
    ["date_from", () => `date_from:2002-01-01 ${OLD}`, () => [id(6), id(5)]],
    ["terms narrow together", () => `username:${alice.username} action:delete resource_type:user ${OLD}`, () => [id(3)]],
    ["SQL in a value is a value", () => `resource_id:'OR'1'='1 ${OLD}`, () => []],
    ["SQL in a name is a name", () => `username:x'--;DROP ${OLD}`, () => []],
  ];
  it.each(cases)("%s", async (_name, q, expected) => {
    const page = await readAudit(admin.token, { q: q() });
    expect(ids(page.audit_logs)).toEqual(expected());
    expect(page.count).toBe(expected().length);
  });

  it("extra spaces between terms are nothing", async () => {
    expect(ids((await readAudit(admin.token, { q: `  action:login    ${OLD}  ` })).audit_logs)).toEqual([id(1)]);
  });
});

describe('docs/security.md, "The audit log": a bad query is a 400 that changes nothing', () => {
  const badQ: [string, string, string][] = [
    ["a term without a key", "alice", AuditMessages.searchNoKey("alice")],
    ["an empty key", ":alice", AuditMessages.searchNoKey(":alice")],
    ["an unknown key", "colour:red", AuditMessages.searchUnknownKey("colour")],
    ["a key twice", "action:login action:logout", AuditMessages.searchTwice("action")],
    ["an empty value", "action:", AuditMessages.searchNeedsValue("action")],
    ["an over-long value", `resource_id:${"r".repeat(129)}`, AuditMessages.searchTooLong("resource_id", 128)],
    ["a day that does not exist", "date_from:2001-02-29", AuditMessages.searchBadDate("date_from")],
    ["a month that does not exist", "date_to:2001-13-01", AuditMessages.searchBadDate("date_to")],
    ["another date format", "date_from:01/03/2001", AuditMessages.searchBadDate("date_from")],
    ["a date and time", "date_to:2001-03-01T00:00", AuditMessages.searchBadDate("date_to")],
    ["date_from after date_to", "date_from:2002-01-02 date_to:2002-01-01", AuditMessages.searchDatesReversed],
  ];
  it.each(badQ)("q: %s", async (_name, q, detail) => {
    const body = await rejectedWithoutChange(() => call("GET", `/audit?q=${encodeURIComponent(q)}`, { token: admin.token }), {
      status: 400,
      message: AuditMessages.invalidSearch,
    });
    expect(body.validations).toEqual([{ field: "q", detail }]);
  });

  it("q over 1,024 characters is refused before it is read", async () => {
    const q = `resource_id:${"%".repeat(2_000)}`;
    const body = await rejectedWithoutChange(() => call("GET", `/audit?q=${encodeURIComponent(q)}`, { token: admin.token }), {
      status: 400,
      message: Messages.validation,
    });
    expect(body.validations?.map((v) => v.field)).toEqual(["q"]);
  });

  it.each([
    ["limit", "0"],
    ["limit", "101"],
    ["limit", "1.5"],
    ["limit", "ten"],
    ["limit", "-1"],
    ["offset", "-1"],
    ["offset", "1000001"],
    ["offset", "0.5"],
    ["offset", "x"],
  ])("%s=%s", async (name, value) => {
    const body = await rejectedWithoutChange(() => call("GET", `/audit?${name}=${value}`, { token: admin.token }), {
      status: 400,
      message: Messages.validation,
    });
    expect(body.validations?.map((v) => v.field)).toEqual([name]);
  });
});
