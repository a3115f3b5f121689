import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { AuthMessages } from "../../src/auth/messages";
import { Messages } from "../../src/http/errors";
import { UserMessages } from "../../src/users/messages";
import { call, createUser, expectError, json, login, OWNER, owner } from "../helpers";

interface UserBody {
  id: string;
  username: string;
  email: string;
  status: string;
  login_type: string;
  roles: { name: string }[];
  organization_ids: string[];
}

async function auditActions(resourceId: string): Promise<string[]> {
  const { results } = await env.DB.prepare("SELECT action FROM audit_logs WHERE resource_id = ? ORDER BY time")
    .bind(resourceId)
    .all<{ action: string }>();
  return results.map((r) => r.action);
}

describe('first-owner bootstrap (docs/api.md, "Bootstrapping the first user")', () => {
  it("creates the owner and the default organization once, then answers 409", async () => {
    const admin = await owner();
    const first = await call("GET", "/users/first");
    expect(first.status).toBe(200);
    await expectError(await call("POST", "/users/first", { body: { ...OWNER, email: "second@herald.test", username: "second" } }), 409);
    const me = await json<UserBody>(await call("GET", "/users/me", { token: admin.token }));
    expect(me.roles.map((r) => r.name)).toEqual(["owner"]);
    expect(me.organization_ids).toHaveLength(1);
    const org = await env.DB.prepare("SELECT is_default FROM organizations WHERE id = ?")
      .bind(me.organization_ids[0])
      .first<{ is_default: number }>();
    expect(org?.is_default).toBe(1);
    expect(await auditActions(me.id)).toContain("create_first_user");
  });
});

describe("users", () => {
  it("creates a user in the default organization, audited, with no password hash in the response", async () => {
    const admin = await owner();
    const res = await call("POST", "/users", {
      token: admin.token,
      body: { email: "Mixed.Case@herald.test", username: "mixed-case", password: "a-fine-long-passphrase-9" },
    });
    expect(res.status).toBe(201);
    const text = await res.text();
    expect(text).not.toContain("argon2");
    const user = JSON.parse(text) as UserBody;
    expect(user.login_type).toBe("password");
    expect(user.status).toBe("active");
    expect(user.organization_ids).toHaveLength(1);
    expect(await auditActions(user.id)).toEqual(["create"]);
    // Usernames and e-mails are unique case-insensitively.
    await expectError(
      await call("POST", "/users", {
        token: admin.token,
        body: { email: "other@herald.test", username: "MIXED-CASE", password: "a-fine-long-passphrase-9" },
      }),
      409,
    );
    await expectError(
      await call("POST", "/users", {
        token: admin.token,
        body: { email: "mixed.case@HERALD.test", username: "other-name", password: "a-fine-long-passphrase-9" },
      }),
      409,
    );
  });

  it("rejects a weak password with 400 Invalid password. and a password validation, creating nothing", async () => {
    const admin = await owner();
    const body = await expectError(
      await call("POST", "/users", { token: admin.token, body: { email: "weak@herald.test", username: "weak-user", password: "password" } }),
      400,
      AuthMessages.invalidPassword,
    );
    expect(body.validations?.[0]?.field).toBe("password");
    await expectError(await call("GET", "/users/weak-user", { token: admin.token }), 404);
  });

  it("resolves {user} by me, UUID and case-insensitive username; 404 when missing", async () => {
    const admin = await owner();
    const user = await createUser();
    for (const ref of [user.id, user.username, user.username.toUpperCase()]) {
      const res = await call("GET", `/users/${ref}`, { token: admin.token });
      expect(res.status).toBe(200);
      expect((await json<UserBody>(res)).id).toBe(user.id);
    }
    expect((await json<UserBody>(await call("GET", "/users/me", { token: user.token }))).id).toBe(user.id);
    await expectError(await call("GET", "/users/no-such-user", { token: admin.token }), 404, Messages.notFoundOrNoAccess);
    await expectError(await call("GET", `/users/${crypto.randomUUID()}`, { token: admin.token }), 404);
  });

  it("a member sees only itself: others are 404 and the list holds one user", async () => {
    const a = await createUser();
    const b = await createUser();
    await expectError(await call("GET", `/users/${b.id}`, { token: a.token }), 404);
    const list = await json<{ users: UserBody[]; count: number }>(await call("GET", "/users", { token: a.token }));
    expect(list.users.map((u) => u.id)).toEqual([a.id]);
    expect(list.count).toBe(1);
  });

  it("lists and searches users with pagination for an owner", async () => {
    const admin = await owner();
    const user = await createUser();
    const found = await json<{ users: UserBody[]; count: number }>(await call("GET", `/users?q=${user.username}`, { token: admin.token }));
    expect(found.users.map((u) => u.id)).toEqual([user.id]);
    const page = await json<{ users: UserBody[]; count: number }>(await call("GET", "/users?limit=1&offset=0", { token: admin.token }));
    expect(page.users).toHaveLength(1);
    expect(page.count).toBeGreaterThan(1);
    await expectError(await call("GET", "/users?limit=0", { token: admin.token }), 400, Messages.validation);
    await expectError(await call("GET", "/users?bogus=1", { token: admin.token }), 400, Messages.validation);
  });

  it('understands Coder\'s search syntax in q: status:, role:, login_type:, free text; 400 for an unknown key (docs/api.md, "Endpoints")', async () => {
    const admin = await owner();
    const tag = crypto.randomUUID().slice(0, 8);
    const ada = await createUser({ roles: ["auditor"] });
    // Names set by hand, as docs/api.md (Searching users) says to: the search keys cleared with them.
    await env.DB.prepare("UPDATE users SET name = ?, search_name = NULL, search_email = NULL WHERE id = ?").bind(`Ada ${tag} Lovelace`, ada.id).run();
    const grace = await createUser();
    await env.DB.prepare("UPDATE users SET name = ?, search_name = NULL, search_email = NULL, status = 'suspended' WHERE id = ?")
      .bind(`Grace ${tag} Hopper`, grace.id)
      .run();
    const ids = async (q: string) => {
      const res = await call("GET", `/users?q=${encodeURIComponent(q)}`, { token: admin.token });
      expect(res.status, await res.clone().text()).toBe(200);
      return (await json<{ users: UserBody[] }>(res)).users.map((u) => u.id).sort();
    };
    expect(await ids(tag)).toEqual([ada.id, grace.id].sort());
    // Coder's web client asks for its Users page with this default filter.
    expect(await ids(`status:active ${tag}`)).toEqual([ada.id]);
    expect(await ids(`STATUS:Suspended ${tag}`)).toEqual([grace.id]);
    expect(await ids(`status:active,suspended ${tag}`)).toEqual([ada.id, grace.id].sort());
    expect(await ids(`role:auditor ${tag}`)).toEqual([ada.id]);
    expect(await ids(`role:member ${tag}`)).toEqual([ada.id, grace.id].sort());
    expect(await ids(`login_type:password search:"${tag} lovelace"`)).toEqual([ada.id]);
    expect(await ids(`login_type:oidc ${tag}`)).toEqual([]);
    expect(await ids(grace.email.toUpperCase())).toEqual([grace.id]);
    const bad = await expectError(
      await call("GET", `/users?q=${encodeURIComponent("colour:blue")}`, { token: admin.token }),
      400,
      UserMessages.invalidSearch,
    );
    expect(bad.validations).toEqual([{ field: "q", detail: UserMessages.searchUnknownKey("colour") }]);
    const badValue = await expectError(await call("GET", "/users?q=status:dormant", { token: admin.token }), 400, UserMessages.invalidSearch);
    expect(badValue.validations?.[0]?.detail).toBe(UserMessages.searchBadValue("dormant", "status", ["active", "suspended"]));
  });

  it("setting another user's password: owners for anyone, user-admins for members only (never an admin, auditor or owner)", async () => {
    const admin = await owner();
    const newPassword = `Quartz-lantern-${crypto.randomUUID()}`;
    const expected: [actorRoles: string[], targetRoles: string[], status: number][] = [
      [["owner"], [], 204],
      [["owner"], ["auditor"], 204],
      [["owner"], ["user-admin"], 204],
      [["owner"], ["owner"], 204],
      [["user-admin"], [], 204],
      [["user-admin"], ["auditor"], 403],
      [["user-admin"], ["user-admin"], 403],
      [["user-admin"], ["owner"], 403],
    ];
    for (const [actorRoles, targetRoles, status] of expected) {
      const actor = await createUser({ roles: actorRoles });
      const target = await createUser({ roles: targetRoles });
      const res = await call("PUT", `/users/${target.id}/password`, { token: actor.token, body: { password: newPassword } });
      expect(res.status, `${actorRoles.join()} → ${targetRoles.join() || "member"}`).toBe(status);
      // A refusal leaves the target's own password working.
      const stillWorks = await call("POST", "/users/login", { body: { email: target.email, password: target.password } });
      expect(stillWorks.status).toBe(status === 204 ? 401 : 201);
    }
    expect(admin.id).toBeTruthy();
  });

  it("deletes a user: its keys die, it is gone, it cannot delete itself", async () => {
    const admin = await owner();
    const user = await createUser();
    const res = await call("DELETE", `/users/${user.id}`, { token: admin.token });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ message: UserMessages.deleted });
    await expectError(await call("GET", "/users/me", { token: user.token }), 401);
    await expectError(await call("GET", `/users/${user.id}`, { token: admin.token }), 404);
    await expectError(await call("DELETE", "/users/me", { token: admin.token }), 403, UserMessages.cannotDeleteSelf);
    expect(await auditActions(user.id)).toContain("delete");
    // The name can be reused after deletion.
    const again = await call("POST", "/users", { token: admin.token, body: { email: user.email, username: user.username, password: user.password } });
    expect(again.status).toBe(201);
  });

  it("suspends and activates, audited; nobody suspends themselves", async () => {
    const admin = await owner();
    const user = await createUser();
    const suspended = await json<UserBody>(await call("PUT", `/users/${user.id}/status/suspend`, { token: admin.token }));
    expect(suspended.status).toBe("suspended");
    await expectError(await call("GET", "/users/me", { token: user.token }), 401);
    const active = await json<UserBody>(await call("PUT", `/users/${user.id}/status/activate`, { token: admin.token }));
    expect(active.status).toBe("active");
    // Suspension ended the old session for good (ASVS 7.4.2); the user signs in again.
    await expectError(await call("GET", "/users/me", { token: user.token }), 401);
    expect((await call("POST", "/users/login", { body: { email: user.email, password: user.password } })).status).toBe(201);
    await expectError(await call("PUT", "/users/me/status/suspend", { token: admin.token }), 400, UserMessages.cannotChangeOwnStatus("suspend"));
    expect(await auditActions(user.id)).toEqual(expect.arrayContaining(["suspend", "activate"]));
  });
});

describe('service accounts in user answers (docs/authorization.md, "Fields (ASVS 8.1.2)")', () => {
  it("every user answer carries is_service_account, the same value as service_account", async () => {
    const admin = await owner();
    const service = await createUser({ service: true });
    const member = await createUser();
    for (const [id, expected] of [
      [service.id, true],
      [member.id, false],
    ] as const) {
      const user = await json<{ service_account: boolean; is_service_account: boolean }>(await call("GET", `/users/${id}`, { token: admin.token }));
      expect(user).toMatchObject({ service_account: expected, is_service_account: expected });
    }
    const me = await json<{ is_service_account: boolean }>(await call("GET", "/users/me", { token: admin.token }));
    expect(me.is_service_account).toBe(false);
    const list = await json<{ users: { service_account: boolean; is_service_account: boolean }[] }>(
      await call("GET", "/users", { token: admin.token }),
    );
    for (const user of list.users) expect(user.is_service_account).toBe(user.service_account);
  });
});

describe("roles", () => {
  it("only an owner grants site roles; nobody changes their own", async () => {
    const admin = await owner();
    const userAdmin = await createUser({ roles: ["user-admin"] });
    const member = await createUser();
    await expectError(await call("PUT", `/users/${member.id}/roles`, { token: userAdmin.token, body: { roles: ["auditor"] } }), 403);
    await expectError(await call("PUT", "/users/me/roles", { token: userAdmin.token, body: { roles: [] } }), 400, UserMessages.cannotChangeOwnRoles);
    await expectError(await call("PUT", `/users/${userAdmin.id}/roles`, { token: member.token, body: { roles: ["owner"] } }), 404);
    const res = await call("PUT", `/users/${member.id}/roles`, { token: admin.token, body: { roles: ["auditor"] } });
    expect(res.status).toBe(200);
    expect((await json<UserBody>(res)).roles.map((r) => r.name)).toEqual(["auditor"]);
    await expectError(await call("PUT", `/users/${member.id}/roles`, { token: admin.token, body: { roles: ["emperor"] } }), 400, Messages.validation);
    expect(await auditActions(member.id)).toContain("update_roles");
  });

  it("a request that changes no role still needs the right to change roles, and writes nothing", async () => {
    const admin = await owner();
    const auditor = await createUser({ roles: ["auditor"] });
    const userAdmin = await createUser({ roles: ["user-admin"] });
    const member = await createUser();
    const before = await env.DB.prepare("SELECT updated_at FROM users WHERE id = ?").bind(member.id).first<{ updated_at: string }>();
    // An auditor reads every user but assigns no roles: before the fix this answered 200 and wrote an audit entry.
    await expectError(await call("PUT", `/users/${member.id}/roles`, { token: auditor.token, body: { roles: [] } }), 403);
    await expectError(await call("PUT", `/users/${admin.id}/roles`, { token: userAdmin.token, body: { roles: ["owner"] } }), 403);
    expect((await call("PUT", `/users/${member.id}/roles`, { token: userAdmin.token, body: { roles: [] } })).status).toBe(200);
    const after = await env.DB.prepare("SELECT updated_at FROM users WHERE id = ?").bind(member.id).first<{ updated_at: string }>();
    expect(after?.updated_at).toBe(before?.updated_at);
    expect(await auditActions(member.id)).not.toContain("update_roles");
  });

  it("a user-admin cannot suspend, delete or re-password an owner", async () => {
    const admin = await owner();
    const userAdmin = await createUser({ roles: ["user-admin"] });
    await expectError(await call("PUT", `/users/${admin.id}/status/suspend`, { token: userAdmin.token }), 403);
    await expectError(await call("DELETE", `/users/${admin.id}`, { token: userAdmin.token }), 403);
    await expectError(
      await call("PUT", `/users/${admin.id}/password`, { token: userAdmin.token, body: { password: "a-takeover-passphrase-77" } }),
      403,
    );
  });
});

describe("password change", () => {
  it("requires the old password for your own, enforces the policy, and ends other sessions", async () => {
    const user = await createUser();
    const other = await login(user.email, user.password);
    await expectError(
      await call("PUT", "/users/me/password", { token: user.token, body: { old_password: "wrong", password: "brand-new-passphrase-88" } }),
      400,
      UserMessages.oldPasswordIncorrect,
    );
    await expectError(await call("PUT", "/users/me/password", { token: user.token, body: { password: "brand-new-passphrase-88" } }), 400);
    await expectError(
      await call("PUT", "/users/me/password", { token: user.token, body: { old_password: user.password, password: "short" } }),
      400,
      AuthMessages.invalidPassword,
    );
    await expectError(
      await call("PUT", "/users/me/password", { token: user.token, body: { old_password: user.password, password: user.password } }),
      400,
      AuthMessages.samePassword,
    );
    const ok = await call("PUT", "/users/me/password", {
      token: user.token,
      body: { old_password: user.password, password: "brand-new-passphrase-88" },
    });
    expect(ok.status).toBe(204);
    expect((await call("GET", "/users/me", { token: user.token })).status).toBe(200);
    await expectError(await call("GET", "/users/me", { token: other }), 401);
    await expectError(await call("POST", "/users/login", { body: { email: user.email, password: user.password } }), 401);
    expect(await login(user.email, "brand-new-passphrase-88")).toBeTruthy();
  });

  it("lets an owner reset a member's password without the old one", async () => {
    const admin = await owner();
    const user = await createUser();
    expect((await call("PUT", `/users/${user.id}/password`, { token: admin.token, body: { password: "owner-chosen-passphrase-5" } })).status).toBe(
      204,
    );
    expect(await login(user.email, "owner-chosen-passphrase-5")).toBeTruthy();
  });
});
