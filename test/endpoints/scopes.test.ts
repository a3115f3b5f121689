import { beforeAll, describe, expect, it } from "vitest";
import { app } from "../../src/app";
import { TEMPLATE_IDS } from "../../src/notifications/templates";
import { operationsOf } from "../../src/openapi/document";
import { call, createUser, json, owner, type TestUser } from "../helpers";
import { deliver } from "../inbox/inbox-helpers";

// Every route checks a scope (docs/security.md): an owner's token narrowed to a scope no route uses
// (`organization_member:create`) is refused with 403 everywhere, with a request that is otherwise valid, so the
// refusal can only come from the scope. Routes that act on another user first resolve that user, and a credential
// that may not read users gets SPEC §2's 404 there; so those rows use a token narrowed to `user:read`, which lacks
// the scope the change needs. The table must name every authenticated route of the OpenAPI document.

interface Fixture {
  admin: { token: string; id: string };
  narrowed: string;
  readUsers: string;
  member: TestUser;
  notificationId: string;
  keyId: string;
}

let fx: Fixture;

beforeAll(async () => {
  const admin = await owner();
  const member = await createUser();
  const created = await call("POST", "/users/me/keys/tokens", {
    token: admin.token,
    body: { token_name: `narrow-${crypto.randomUUID().slice(0, 8)}`, scopes: ["organization_member:create"] },
  });
  expect(created.status).toBe(201);
  const narrowed = (await json<{ key: string }>(created)).key;
  const reader = await call("POST", "/users/me/keys/tokens", {
    token: admin.token,
    body: { token_name: `reader-${crypto.randomUUID().slice(0, 8)}`, scopes: ["user:read"] },
  });
  const readUsers = (await json<{ key: string }>(reader)).key;
  const other = await call("POST", "/users/me/keys/tokens", {
    token: admin.token,
    body: { token_name: `victim-${crypto.randomUUID().slice(0, 8)}` },
  });
  const keyId = (await json<{ key: string }>(other)).key.slice(0, 10);
  const notification = await deliver(admin.id);
  fx = { admin, narrowed, readUsers, member, notificationId: notification.id, keyId };
});

type Request = { method: string; path: () => string; body?: () => unknown; headers?: Record<string, string>; token?: "readUsers" };

const ROUTES: Record<string, Request> = {
  "POST /api/v2/authcheck": {
    method: "POST",
    path: () => "/authcheck",
    body: () => ({ checks: { a: { action: "read", object: { resource_type: "user" } } } }),
  },
  "POST /api/v2/users/logout": { method: "POST", path: () => "/users/logout" },
  "POST /api/v2/users/validate-password": {
    method: "POST",
    path: () => "/users/validate-password",
    body: () => ({ password: "violet-anchor-mountain-73" }),
  },
  "POST /api/v2/users/{user}/convert-login": {
    method: "POST",
    path: () => "/users/me/convert-login",
    body: () => ({ password: "x", to_type: "oidc" }),
  },
  "POST /api/v2/users": {
    method: "POST",
    path: () => "/users",
    body: () => ({
      email: `s-${crypto.randomUUID().slice(0, 8)}@herald.test`,
      username: `s-${crypto.randomUUID().slice(0, 8)}`,
      password: "violet-anchor-mountain-73",
    }),
  },
  "GET /api/v2/users": { method: "GET", path: () => "/users" },
  // Another user would be hidden (404, SPEC §2) from a credential that may not read users; the caller's own record is not.
  "GET /api/v2/users/{user}": { method: "GET", path: () => "/users/me" },
  "DELETE /api/v2/users/{user}": { method: "DELETE", path: () => `/users/${fx.member.id}`, token: "readUsers" },
  "PUT /api/v2/users/{user}/roles": {
    method: "PUT",
    path: () => `/users/${fx.member.id}/roles`,
    body: () => ({ roles: ["auditor"] }),
    token: "readUsers",
  },
  "PUT /api/v2/users/{user}/status/suspend": { method: "PUT", path: () => `/users/${fx.member.id}/status/suspend`, token: "readUsers" },
  "PUT /api/v2/users/{user}/status/activate": { method: "PUT", path: () => `/users/${fx.member.id}/status/activate`, token: "readUsers" },
  "PUT /api/v2/users/{user}/password": {
    method: "PUT",
    path: () => `/users/${fx.member.id}/password`,
    body: () => ({ password: "violet-anchor-mountain-73" }),
    token: "readUsers",
  },
  "POST /api/v2/users/{user}/keys/tokens": {
    method: "POST",
    path: () => "/users/me/keys/tokens",
    body: () => ({ token_name: `t-${crypto.randomUUID().slice(0, 8)}` }),
  },
  "GET /api/v2/users/{user}/keys/tokens": { method: "GET", path: () => "/users/me/keys/tokens" },
  "GET /api/v2/users/{user}/keys/sessions": { method: "GET", path: () => "/users/me/keys/sessions" },
  "DELETE /api/v2/users/{user}/keys/sessions": { method: "DELETE", path: () => "/users/me/keys/sessions" },
  "DELETE /api/v2/users/{user}/keys/{id}": { method: "DELETE", path: () => `/users/me/keys/${fx.keyId}` },
  "POST /api/v2/notifications/custom": { method: "POST", path: () => "/notifications/custom", body: () => ({ content: { title: "scoped" } }) },
  "GET /api/v2/notifications/dispatch-methods": { method: "GET", path: () => "/notifications/dispatch-methods" },
  "GET /api/v2/notifications/inbox": { method: "GET", path: () => "/notifications/inbox" },
  "GET /api/v2/notifications/inbox/watch": { method: "GET", path: () => "/notifications/inbox/watch", headers: { Upgrade: "websocket" } },
  "PUT /api/v2/notifications/inbox/mark-all-as-read": { method: "PUT", path: () => "/notifications/inbox/mark-all-as-read" },
  "PUT /api/v2/notifications/inbox/{id}/read-status": {
    method: "PUT",
    path: () => `/notifications/inbox/${fx.notificationId}/read-status`,
    body: () => ({ is_read: true }),
  },
  "PUT /api/v2/notifications/inbox/{id}/archive-status": {
    method: "PUT",
    path: () => `/notifications/inbox/${fx.notificationId}/archive-status`,
    body: () => ({ is_archived: true }),
  },
  "PUT /api/v2/notifications/inbox/{id}/snooze": {
    method: "PUT",
    path: () => `/notifications/inbox/${fx.notificationId}/snooze`,
    body: () => ({ until: null }),
  },
  "POST /api/v2/notifications/inbox/bulk": {
    method: "POST",
    path: () => "/notifications/inbox/bulk",
    body: () => ({ action: "read", ids: [fx.notificationId] }),
  },
  "GET /api/v2/notifications/inbox/counts": { method: "GET", path: () => "/notifications/inbox/counts" },
  "GET /api/v2/notifications/settings": { method: "GET", path: () => "/notifications/settings" },
  "PUT /api/v2/notifications/settings": { method: "PUT", path: () => "/notifications/settings", body: () => ({ notifier_paused: true }) },
  "GET /api/v2/notifications/templates/custom": { method: "GET", path: () => "/notifications/templates/custom" },
  "GET /api/v2/notifications/templates/system": { method: "GET", path: () => "/notifications/templates/system" },
  "POST /api/v2/notifications/test": { method: "POST", path: () => "/notifications/test" },
  "GET /api/v2/notifications/messages": { method: "GET", path: () => "/notifications/messages" },
  "GET /api/v2/notifications/templates/{id}/settings": { method: "GET", path: () => `/notifications/templates/${TEMPLATE_IDS.test}/settings` },
  "PUT /api/v2/notifications/templates/{id}/settings": {
    method: "PUT",
    path: () => `/notifications/templates/${TEMPLATE_IDS.test}/settings`,
    body: () => ({ email_when_unread_after: "" }),
  },
  "POST /api/v2/notifications/broadcasts": {
    method: "POST",
    path: () => "/notifications/broadcasts",
    body: () => ({ audience: { user_ids: [fx.member.id] }, content: { title: "scoped" } }),
  },
  "GET /api/v2/notifications/broadcasts": { method: "GET", path: () => "/notifications/broadcasts" },
  // The permission is checked before the lookup, so any id shows the refusal.
  "GET /api/v2/notifications/broadcasts/{id}": { method: "GET", path: () => `/notifications/broadcasts/${crypto.randomUUID()}` },
  "GET /api/v2/users/{user}/notifications/preferences": { method: "GET", path: () => "/users/me/notifications/preferences" },
  "PUT /api/v2/users/{user}/notifications/preferences": {
    method: "PUT",
    path: () => "/users/me/notifications/preferences",
    body: () => ({ template_disabled_map: { [TEMPLATE_IDS.test]: true } }),
  },
};

describe("every route checks a scope (docs/security.md)", () => {
  it("the table names every authenticated route", () => {
    const authenticated = operationsOf(app.routes)
      .filter((o) => o.authenticated)
      .map((o) => `${o.method.toUpperCase()} ${o.path}`);
    expect(Object.keys(ROUTES).sort()).toEqual(authenticated.sort());
  });

  for (const [route, request] of Object.entries(ROUTES)) {
    if (route === "POST /api/v2/authcheck") {
      // A2 answers questions about the caller; for a narrowed token every answer is limited by its scopes.
      it(`${route}: answers within the token's scopes (everything false)`, async () => {
        const res = await call("POST", request.path(), { token: fx.narrowed, body: request.body?.() });
        expect(res.status).toBe(200);
        expect(await json(res)).toEqual({ a: false });
      });
      continue;
    }
    it(`${route}: 403 for a token without the scope`, async () => {
      const token = request.token === "readUsers" ? fx.readUsers : fx.narrowed;
      const res = await call(request.method, request.path(), {
        token,
        headers: request.headers ?? {},
        ...(request.body ? { body: request.body() } : {}),
      });
      expect(res.status, await res.clone().text()).toBe(403);
    });
  }
});
