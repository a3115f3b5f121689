import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { app } from "../../src/app";
import { Messages } from "../../src/http/errors";
import { UserMessages } from "../../src/users/messages";
import { reservedUsernames, reservedUsernamesOf } from "../../src/users/reserved";
import { call, expectError, owner } from "../helpers";

/** The list docs/api.md ("Conventions") gives; the route table is its source, this test holds the two together. */
const DOCUMENTED = ["authmethods", "first", "login", "logout", "me", "not-me", "oauth2", "oidc", "otp", "validate-password"];

describe('reserved usernames (docs/api.md, "Conventions")', () => {
  it("are me and the literal segments beside {user} in the route table, as documented", () => {
    expect(reservedUsernames()).toEqual(DOCUMENTED);
    expect([...reservedUsernamesOf(app.routes)].sort()).toEqual(DOCUMENTED);
    // Derived, not listed: a new literal route under /users/ reserves its segment.
    const routes = [...app.routes, { method: "GET", path: "/api/v2/users/brand-new" }];
    expect(reservedUsernamesOf(routes)).toContain("brand-new");
  });

  it("POST /users refuses each, in any case, with 400 and a validation on username; nothing is stored", async () => {
    const { token } = await owner();
    for (const name of [...DOCUMENTED, "LOGIN", "Me"]) {
      const res = await call("POST", "/users", {
        token,
        body: { email: `${name.toLowerCase()}-x@herald.test`, username: name, password: "a-fine-long-passphrase-9" },
      });
      const body = await expectError(res, 400, Messages.validation);
      expect(body.validations, name).toEqual([{ field: "username", detail: UserMessages.usernameReserved(name) }]);
    }
    const stored = await env.DB.prepare("SELECT count(*) AS n FROM users WHERE lower(username) IN (SELECT value FROM json_each(?))")
      .bind(JSON.stringify(DOCUMENTED))
      .first<{ n: number }>();
    expect(stored?.n).toBe(0);
  });

  it("POST /users/first refuses them too", async () => {
    const res = await call("POST", "/users/first", { body: { email: "first@herald.test", username: "first", password: "a-fine-long-passphrase-9" } });
    const body = await expectError(res, 400, Messages.validation);
    expect(body.validations?.map((v) => v.field)).toEqual(["username"]);
  });

  it("names that merely start like one are ordinary usernames", async () => {
    const { token } = await owner();
    const res = await call("POST", "/users", {
      token,
      body: { email: "login-page@herald.test", username: "login-page", password: "a-fine-long-passphrase-9" },
    });
    expect(res.status).toBe(201);
    expect((await call("GET", "/users/login-page", { token })).status).toBe(200);
  });
});
