/**
 * Signed embed tokens (docs/embed.md, "Signed embed tokens"): a host's backend signs `<key id>.<user id>.<expiry>`
 * with a key of EMBED_SIGNING_KEYS, and Herald takes the result as a credential with the two inbox scopes and
 * nothing more, on the paths the embed uses (the `Service-Session-Token` header and the watch's `herald.token.`
 * subprotocol). Tokens here are signed the way docs/embed.md tells a host to, with WebCrypto directly, not through
 * Herald's own signer; the keys are the suite's (test/fixtures/vars.ts, WORKERD_VARS). Every refused token is a 401
 * with the one detail every bad credential gets (docs/security.md, "Sign-in pathways"), never a 5xx.
 */
import { env } from "cloudflare:workers";
import * as fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { app } from "../../src/app";
import { EMBED_SCOPES, signEmbedToken } from "../../src/auth/embed-token";
import { issueKey } from "../../src/auth/keys";
import { AuthMessages } from "../../src/auth/messages";
import { database } from "../../src/db/client";
import { InboxMessages } from "../../src/inbox/messages";
import { operationsOf } from "../../src/openapi/document";
import { expectRejected } from "../fixtures/error-shape";
import { apiPath, deref, document, sample } from "../fixtures/requests";
import { BASE, call, createUser, json, owner, send, type TestUser } from "../helpers";
import { deliver, watch } from "../inbox/inbox-helpers";

const KEYS = { "test-old": "test-embed-key-old-0123456789abcdefghijkl", "test-new": "test-embed-key-new-0123456789abcdefghijkl" } as const;
const WATCH = "/notifications/inbox/watch";
const HOUR = 3600;

function base64url(bytes: ArrayBuffer): string {
  return btoa(String.fromCharCode(...new Uint8Array(bytes)))
    .replaceAll("+", "-")
    .replaceAll("/", "_")
    .replace(/=+$/, "");
}

/** The host's side, as docs/embed.md spells it: HMAC-SHA256 over `herald-embed.v1.<kid>.<user>.<exp>`, base64url. */
async function sign(userId: string, options: { keyId?: string; secret?: string; exp?: number } = {}): Promise<string> {
  const keyId = options.keyId ?? "test-new";
  const secret = options.secret ?? KEYS[keyId as keyof typeof KEYS];
  const exp = options.exp ?? Math.floor(Date.now() / 1000) + HOUR;
  const payload = `herald-embed.v1.${keyId}.${userId}.${exp}`;
  const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return `${payload}.${base64url(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(payload)))}`;
}

async function expectBadCredential(res: Response): Promise<void> {
  const body = await expectRejected(res, { status: 401 });
  expect(body.detail).toBe(AuthMessages.badCredential);
}

/** The token in each place the embed puts it: the header for requests, the subprotocol for the watch. */
async function refusedEverywhere(token: string): Promise<void> {
  await expectBadCredential(await call("GET", "/notifications/inbox", { token }));
  await expectBadCredential(
    await call("GET", WATCH, { headers: { Upgrade: "websocket", "Sec-WebSocket-Protocol": `herald.v1, herald.token.${token}` } }),
  );
}

let admin: { token: string; id: string };
let member: TestUser;

beforeAll(async () => {
  admin = await owner();
  member = await createUser();
});

describe("signed embed tokens (docs/embed.md, Signed embed tokens)", () => {
  it("a token signed with either configured key lists, reads and marks the user's own inbox (docs/configuration.md, EMBED_SIGNING_KEYS)", async () => {
    const n = await deliver(member.id);
    for (const keyId of ["test-old", "test-new"]) {
      const token = await sign(member.id, { keyId });
      const res = await call("GET", "/notifications/inbox", { token });
      expect(res.status).toBe(200);
      const page = await json<{ notifications: { id: string; user_id: string }[] }>(res);
      expect(page.notifications.map((x) => x.id)).toContain(n.id);
      expect(page.notifications.every((x) => x.user_id === member.id)).toBe(true);
    }
    const token = await sign(member.id);
    const read = await call("PUT", `/notifications/inbox/${n.id}/read-status`, { token, body: { is_read: true } });
    expect(read.status).toBe(200);
    // Authorization: Bearer and an upper-case user id work too (docs/api.md, Conventions).
    const bearer = await call("GET", "/notifications/inbox/counts", { headers: { Authorization: `Bearer ${await sign(member.id.toUpperCase())}` } });
    expect(bearer.status).toBe(200);
  });

  it("the typed client's signEmbedToken makes tokens Herald accepts, and refuses to sign beyond 24 hours", async () => {
    const token = await signEmbedToken({ keyId: "test-old", key: KEYS["test-old"], userId: member.id, expiresIn: 600 });
    expect(token).toMatch(/^herald-embed\.v1\.test-old\.[0-9a-f-]{36}\.\d+\.[A-Za-z0-9_-]{43}$/);
    expect((await call("GET", "/notifications/inbox", { token })).status).toBe(200);
    await expect(signEmbedToken({ keyId: "test-old", key: KEYS["test-old"], userId: member.id, expiresIn: 24 * HOUR + 1 })).rejects.toThrow(
      RangeError,
    );
  });

  it("opens the watch with the herald.token subprotocol, and the socket closes with 4401 when the token expires (docs/api.md, Watching the inbox)", async () => {
    const user = await createUser();
    const token = await sign(user.id, { exp: Math.floor(Date.now() / 1000) + 3 });
    const w = await watch("", { "Sec-WebSocket-Protocol": `herald.v1, herald.token.${token}` });
    expect(w.protocol).toBe("herald.v1");
    const n = await deliver(user.id);
    expect(((await w.next()).notification as { id: string }).id).toBe(n.id);
    const ended = await w.closed;
    expect(ended.code).toBe(4401);
    expect(ended.reason).toBe(InboxMessages.sessionExpired);
  });

  it("suspending the user closes a watch opened with an embed token, and refuses the token from then on", async () => {
    const user = await createUser();
    const token = await sign(user.id);
    const w = await watch("", { "Sec-WebSocket-Protocol": `herald.v1, herald.token.${token}` });
    expect((await call("PUT", `/users/${user.id}/status/suspend`, { token: admin.token })).status).toBe(200);
    expect((await w.closed).code).toBe(4401);
    await refusedEverywhere(token);
    // Activation brings the user back, and a token signed for them works again: nothing was stored to revoke.
    expect((await call("PUT", `/users/${user.id}/status/activate`, { token: admin.token })).status).toBe(200);
    expect((await call("GET", "/notifications/inbox", { token })).status).toBe(200);
  });

  it("a deleted user's tokens are refused", async () => {
    const user = await createUser();
    const token = await sign(user.id);
    expect((await call("DELETE", `/users/${user.id}`, { token: admin.token })).status).toBe(200);
    await refusedEverywhere(token);
  });

  it("refuses malformed, oversized, unknown-key, expired, too-far, tampered and foreign tokens with 401, never a 5xx (docs/security.md)", async () => {
    const now = Math.floor(Date.now() / 1000);
    const good = await sign(member.id);
    const parts = good.split(".");
    const signature = parts[5] ?? "";
    const flip = (c: string) => (c === "A" ? "B" : "A");
    const cases: Record<string, string> = {
      "the prefix alone": "herald-embed.v1.",
      "another version": good.replace("herald-embed.v1.", "herald-embed.v2."),
      "a missing signature": parts.slice(0, 5).join("."),
      "an oversized token": `${good}${"A".repeat(10_000)}`,
      "a signature that is not base64url": `${parts.slice(0, 5).join(".")}.${"*".repeat(43)}`,
      "a non-canonical last signature character": `${parts.slice(0, 5).join(".")}.${signature.slice(0, 42)}${signature.endsWith("B") ? "C" : "B"}`,
      "an unknown key id": await sign(member.id, { keyId: "test-gone", secret: KEYS["test-new"] }),
      "a known key id with another secret": await sign(member.id, { keyId: "test-new", secret: "some-other-secret-0123456789abcdefghijkl" }),
      "the other key's signature under this key id": await sign(member.id, { keyId: "test-new", secret: KEYS["test-old"] }),
      expired: await sign(member.id, { exp: now - 1 }),
      "expiring more than 24 hours ahead": await sign(member.id, { exp: now + 24 * HOUR + 120 }),
      "an expiry of zeros": await sign(member.id, { exp: 0 }),
      "a tampered user id": good.replace(member.id, admin.id),
      "a tampered expiry": good.replace(`.${parts[4]}.`, `.${Number(parts[4]) + 60}.`),
      "a tampered signature": `${good.slice(0, -2)}${flip(good.slice(-2, -1))}${good.slice(-1)}`,
      "another user's signature on this user's claims": `${parts.slice(0, 5).join(".")}.${(await sign(admin.id, { exp: Number(parts[4]) })).split(".")[5]}`,
      "a user that does not exist": await sign(crypto.randomUUID()),
      "a user id that is no UUID": await sign("not-a-uuid"),
      "a key id with a dot": await sign(member.id, { keyId: "test.new", secret: KEYS["test-new"] }),
    };
    for (const [name, token] of Object.entries(cases)) {
      expect(token, name).not.toBe(good);
      await refusedEverywhere(token).catch((error: unknown) => {
        throw new Error(`${name}: ${error instanceof Error ? error.message : String(error)}`);
      });
    }
    // The good one still works: each refusal was about its own change.
    expect((await call("GET", "/notifications/inbox", { token: good })).status).toBe(200);
  });

  it("is never taken from the session cookie: Herald never sets one there", async () => {
    const token = await sign(member.id);
    await expectBadCredential(await call("GET", "/notifications/inbox", { headers: { Cookie: `service_session_token=${token}` } }));
  });

  it("a token that is not yet too far ahead works until its expiry and not after", async () => {
    const user = await createUser();
    const token = await sign(user.id, { exp: Math.floor(Date.now() / 1000) + 2 });
    expect((await call("GET", "/notifications/inbox", { token })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 2_100));
    await refusedEverywhere(token);
  });

  it("with no EMBED_SIGNING_KEYS, every embed token is refused (docs/configuration.md)", async () => {
    const token = await sign(member.id);
    const ctx = { waitUntil: () => undefined, passThroughOnException: () => undefined, props: {} } as unknown as ExecutionContext;
    const res = await app.fetch(
      new Request(`${BASE}/api/v2/notifications/inbox`, { headers: { "Service-Session-Token": token } }),
      { ...env, EMBED_SIGNING_KEYS: "" },
      ctx,
    );
    await expectBadCredential(res);
  });

  it("property: no string presented as an embed token gets a 5xx, and none but the signed one gets in", async () => {
    const good = await sign(member.id);
    const alphabet = fc.constantFrom(..."ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.".split(""));
    const candidate = fc.oneof(
      fc.string({ maxLength: 300 }).map((s) => `herald-embed.v1.${s}`),
      fc.string({ unit: alphabet, maxLength: 200 }).map((s) => `herald-embed.v1.${s}`),
      // One character of the good token changed, removed or added.
      fc.tuple(fc.nat({ max: good.length - 1 }), alphabet, fc.constantFrom("change", "remove", "insert")).map(([i, c, how]) => {
        if (how === "remove") return good.slice(0, i) + good.slice(i + 1);
        if (how === "insert") return good.slice(0, i) + c + good.slice(i);
        return good.slice(0, i) + c + good.slice(i + 1);
      }),
      fc.string({ unit: "binary-ascii", maxLength: 100 }).map((s) => `herald-embed.v1.test-new.${member.id}.${s}`),
    );
    await fc.assert(
      fc.asyncProperty(candidate, fc.boolean(), async (token, asProtocol) => {
        fc.pre(token !== good);
        // A header cannot carry every string: such a request never reaches Herald, so there is nothing to check.
        let request: Request;
        try {
          const headers: Record<string, string> = asProtocol
            ? { Upgrade: "websocket", "Sec-WebSocket-Protocol": `herald.v1, herald.token.${token}` }
            : { "Service-Session-Token": token };
          request = new Request(`${BASE}/api/v2${asProtocol ? WATCH : "/notifications/inbox"}`, { headers });
        } catch {
          return;
        }
        const res = await send(request);
        expect(res.status, token).toBeLessThan(500);
        // A change that keeps the token valid is impossible except where base64url or the id's case allows it.
        if (res.status < 400) {
          res.webSocket?.accept();
          res.webSocket?.close();
          expect(token.toLowerCase()).toBe(good.toLowerCase());
        } else {
          await expectBadCredential(res);
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe("an embed token reaches exactly what an API token with the two inbox scopes reaches (docs/authorization.md, API token scopes)", () => {
  const routes = operationsOf(app.routes)
    .filter((op) => op.authenticated)
    .map((op) => {
      const body = document.paths[op.path]?.[op.method]?.requestBody?.content["application/json"].schema;
      return {
        id: `${op.method.toUpperCase()} ${op.path}`,
        method: op.method.toUpperCase(),
        path: op.path,
        body: body === undefined ? undefined : sample(deref(body)),
        headers: (op.path.endsWith("/watch") ? { Upgrade: "websocket" } : {}) as Record<string, string>,
      };
    });

  async function outcome(route: (typeof routes)[number], token: string): Promise<{ status: number; detail?: string }> {
    const res = await call(route.method, apiPath(route.path, "me"), { token, body: route.body, headers: route.headers });
    res.webSocket?.accept();
    res.webSocket?.close();
    if (res.status < 400) return { status: res.status };
    return { status: res.status, detail: (await json<{ detail?: string }>(res)).detail };
  }

  it("GET /users/me: 403 naming the scope the token lacks, like the scoped API token", async () => {
    const res = await call("GET", "/users/me", { token: await sign(admin.id) });
    expect(res.status).toBe(403);
  });

  for (const route of routes) {
    it(`${route.id}: the same answer for an owner's embed token as for the owner's inbox-scoped API token`, async () => {
      const key = await issueKey(database(env.DB), {
        userId: admin.id,
        loginType: "token",
        lifetimeMs: HOUR * 1000,
        scopes: [...EMBED_SCOPES],
        tokenName: `inbox-${crypto.randomUUID().slice(0, 8)}`,
      });
      await key.insert;
      const scoped = await outcome(route, key.token);
      const embed = await outcome(route, await sign(admin.id));
      expect(embed).toEqual(scoped);
      // Only the inbox's own routes let either in.
      if (embed.status < 400) expect(route.path.startsWith("/api/v2/notifications/inbox") || route.path === "/api/v2/authcheck").toBe(true);
    });
  }
});
