import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { and, eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { database } from "../../src/db/client";
import { auditLogs, pushSubscriptions } from "../../src/db/schema";
import type { Env } from "../../src/env";
import { Messages } from "../../src/http/errors";
import { PushMessages } from "../../src/push/messages";
import { PUSH_SUBSCRIPTIONS_MAX_PER_USER } from "../../src/push/subscriptions";
import { expectRejected } from "../fixtures/error-shape";
import { untilLimited } from "../fixtures/rate-limits";
import { TEST_VAPID_KEYS } from "../fixtures/vars";
import { apiRequest, call, createUser, fetchApp, json, owner } from "../helpers";
import { subscribeBrowser } from "../peers";

/**
 * docs/push.md, "Subscribing a browser": the public key, adding, listing and removing a user's push subscriptions,
 * and what Herald answers without VAPID keys. Who may do what is test/push/permissions.test.ts; junk input is
 * test/push/bad-input.test.ts.
 */

const db = database(env.DB);
const CHROME = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";

interface Subscription {
  id: string;
  name: string;
  endpoint_origin: string;
  created_at: string;
}

/** The app without VAPID keys: Web Push off (docs/push.md, "Keys"). */
async function withoutKeys(request: Request): Promise<Response> {
  const ctx = createExecutionContext();
  const res = await fetchApp(request, { ...env, VAPID_PUBLIC_KEY: "", VAPID_PRIVATE_KEY: "" } as Env, ctx);
  await waitOnExecutionContext(ctx);
  return res;
}

const rowsOf = (userId: string) => db.select().from(pushSubscriptions).where(eq(pushSubscriptions.userId, userId));

const add = (token: string, body: object) => call("POST", "/users/me/push-subscriptions", { token, body });

/** Adds per minute and user (docs/push.md, "Subscribing a browser"). */
const ADDS_PER_MINUTE = 10;

/** `n` subscriptions of the user, straight into D1: through the API, adding is limited to 10 a minute. */
async function holdStraightInD1(userId: string, n: number): Promise<void> {
  const insert = env.DB.prepare(
    "INSERT INTO push_subscriptions (id, user_id, name, endpoint, p256dh, auth, created_at) VALUES (?, ?, 'Held', ?, 'p256dh', 'auth', ?)",
  );
  const now = new Date().toISOString();
  await env.DB.batch(
    Array.from({ length: n }, () => insert.bind(crypto.randomUUID(), userId, `${env.PUSH_SERVICE_URL}/push/held-${crypto.randomUUID()}`, now)),
  );
}

describe('docs/push.md, "Subscribing a browser"', () => {
  it("serves the VAPID public key to anyone", async () => {
    const res = await call("GET", "/notifications/push/public-key");
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ public_key: TEST_VAPID_KEYS.VAPID_PUBLIC_KEY });
  });

  it("adds a subscription named after the browser, shows only the endpoint's origin, and audits it", async () => {
    const [user, browser] = await Promise.all([createUser(), subscribeBrowser()]);
    const res = await call("POST", "/users/me/push-subscriptions", {
      token: user.token,
      body: browser.subscription,
      headers: { "User-Agent": CHROME },
    });
    expect(res.status).toBe(201);
    const created = await json<Subscription>(res);
    expect(created).toEqual({
      id: expect.any(String),
      name: "Chrome 131 on Linux",
      endpoint_origin: env.PUSH_SERVICE_URL,
      created_at: expect.any(String),
    });
    expect(JSON.stringify(created)).not.toContain(browser.token);
    const [row] = await rowsOf(user.id);
    expect(row).toMatchObject({
      endpoint: browser.subscription.endpoint,
      p256dh: browser.subscription.keys.p256dh,
      auth: browser.subscription.keys.auth,
    });
    const [audit] = await db
      .select()
      .from(auditLogs)
      .where(and(eq(auditLogs.resourceId, created.id), eq(auditLogs.action, "create")));
    expect(audit).toMatchObject({
      userId: user.id,
      resourceType: "push_subscription",
      diff: { owner: user.id, name: created.name, endpoint_origin: env.PUSH_SERVICE_URL },
    });
    expect(JSON.stringify(audit?.diff)).not.toContain(browser.token);
  });

  it("takes a name, and a browser's PushSubscription.toJSON() as it is (expirationTime ignored)", async () => {
    const [user, browser] = await Promise.all([createUser(), subscribeBrowser()]);
    const body = { ...browser.subscription, expirationTime: null, name: "Work laptop" };
    const res = await call("POST", "/users/me/push-subscriptions", { token: user.token, body });
    expect(res.status).toBe(201);
    expect((await json<Subscription>(res)).name).toBe("Work laptop");
    // A client that names no browser (a script) gets a plain name.
    const other = await subscribeBrowser();
    const plain = await call("POST", "/users/me/push-subscriptions", {
      token: user.token,
      body: other.subscription,
      headers: { "User-Agent": "curl/8.5.0" },
    });
    expect((await json<Subscription>(plain)).name).toBe("Browser");
  });

  it("answers the same endpoint again with the existing subscription, updated with the new keys and name, never a second", async () => {
    const [user, browser, renewed] = await Promise.all([createUser(), subscribeBrowser(), subscribeBrowser()]);
    const first = await json<Subscription>(await call("POST", "/users/me/push-subscriptions", { token: user.token, body: browser.subscription }));
    const again = await call("POST", "/users/me/push-subscriptions", { token: user.token, body: browser.subscription });
    expect(again.status).toBe(200);
    expect(await json(again)).toEqual(first);
    // The browser renewed its keys (same endpoint): the subscription takes them, under the same id.
    const keys = { endpoint: browser.subscription.endpoint, keys: renewed.subscription.keys, name: "Renamed" };
    const updated = await call("POST", "/users/me/push-subscriptions", { token: user.token, body: keys });
    expect(updated.status).toBe(200);
    expect(await json(updated)).toEqual({ ...first, name: "Renamed" });
    const rows = await rowsOf(user.id);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ p256dh: renewed.subscription.keys.p256dh, auth: renewed.subscription.keys.auth });
    const audits = await db.select({ action: auditLogs.action }).from(auditLogs).where(eq(auditLogs.resourceId, first.id));
    expect(audits.map((a) => a.action).sort()).toEqual(["create", "update"]);
  });

  it("gives the same endpoint sent twice at once one subscription", async () => {
    const [user, browser] = await Promise.all([createUser(), subscribeBrowser()]);
    const answers = await Promise.all(
      [1, 2, 3].map(() => call("POST", "/users/me/push-subscriptions", { token: user.token, body: browser.subscription })),
    );
    expect(answers.map((r) => r.status).sort()).toEqual([200, 200, 201]);
    const ids = await Promise.all(answers.map(async (r) => (await json<Subscription>(r)).id));
    expect(new Set(ids).size).toBe(1);
    expect(await rowsOf(user.id)).toHaveLength(1);
  });

  it("lists the user's subscriptions newest first; an owner may list and remove them", async () => {
    const admin = await owner();
    const user = await createUser();
    const made: Subscription[] = [];
    for (const name of ["one", "two"]) {
      const { subscription } = await subscribeBrowser();
      made.push(await json<Subscription>(await call("POST", "/users/me/push-subscriptions", { token: user.token, body: { ...subscription, name } })));
    }
    const listed = await json<Subscription[]>(await call("GET", "/users/me/push-subscriptions", { token: user.token }));
    expect(listed.map((s) => s.name)).toEqual(["two", "one"]);
    expect(await json(await call("GET", `/users/${user.id}/push-subscriptions`, { token: admin.token }))).toEqual(listed);
    expect((await call("DELETE", `/users/${user.id}/push-subscriptions/${made[0]?.id}`, { token: admin.token })).status).toBe(204);
    expect((await rowsOf(user.id)).map((r) => r.name)).toEqual(["two"]);
    const [audit] = await db
      .select()
      .from(auditLogs)
      .where(and(eq(auditLogs.resourceId, made[0]?.id ?? ""), eq(auditLogs.action, "delete")));
    expect(audit).toMatchObject({ userId: admin.id, diff: { owner: user.id, name: "one" } });
  });

  it("removes only the user's own subscription: another's id, an unknown one or one gone already is a 404", async () => {
    const [user, other] = await Promise.all([createUser(), createUser()]);
    const { subscription } = await subscribeBrowser();
    const theirs = await json<Subscription>(await call("POST", "/users/me/push-subscriptions", { token: other.token, body: subscription }));
    await expectRejected(await call("DELETE", `/users/me/push-subscriptions/${theirs.id}`, { token: user.token }), {
      status: 404,
      message: Messages.notFoundOrNoAccess,
    });
    expect(await rowsOf(other.id)).toHaveLength(1);
    expect((await call("DELETE", `/users/me/push-subscriptions/${theirs.id}`, { token: other.token })).status).toBe(204);
    await expectRejected(await call("DELETE", `/users/me/push-subscriptions/${theirs.id}`, { token: other.token }), { status: 404 });
    await expectRejected(await call("DELETE", "/users/me/push-subscriptions/not-a-uuid", { token: other.token }), { status: 404 });
  });

  it(`holds at most ${PUSH_SUBSCRIPTIONS_MAX_PER_USER} per user: the next is a 400 that says so, and a known endpoint still answers`, async () => {
    const user = await createUser();
    await holdStraightInD1(user.id, PUSH_SUBSCRIPTIONS_MAX_PER_USER - 1);
    const [last, over] = await Promise.all([subscribeBrowser(), subscribeBrowser()]);
    expect((await add(user.token, last.subscription)).status).toBe(201);
    const refused = await expectRejected(await add(user.token, over.subscription), { status: 400, message: PushMessages.tooMany });
    expect(refused.detail).toBe(PushMessages.tooManyDetail(PUSH_SUBSCRIPTIONS_MAX_PER_USER));
    expect(await rowsOf(user.id)).toHaveLength(PUSH_SUBSCRIPTIONS_MAX_PER_USER);
    expect((await add(user.token, last.subscription)).status).toBe(200);
  });

  it("counts the cap in the insert: browsers sent at once for the last places get exactly those places", async () => {
    const user = await createUser();
    const free = 5;
    await holdStraightInD1(user.id, PUSH_SUBSCRIPTIONS_MAX_PER_USER - free);
    // As many at once as the rate limit lets through, twice the places left.
    const browsers = await Promise.all(Array.from({ length: ADDS_PER_MINUTE }, () => subscribeBrowser()));
    const answers = await Promise.all(browsers.map((b) => add(user.token, b.subscription)));
    expect(answers.map((r) => r.status).sort()).toEqual([...Array(free).fill(201), ...Array(ADDS_PER_MINUTE - free).fill(400)]);
    for (const refused of answers.filter((r) => r.status === 400)) {
      expect(await json(refused)).toEqual({ message: PushMessages.tooMany, detail: PushMessages.tooManyDetail(PUSH_SUBSCRIPTIONS_MAX_PER_USER) });
    }
    expect(await rowsOf(user.id)).toHaveLength(PUSH_SUBSCRIPTIONS_MAX_PER_USER);
    // A refused one left nothing behind: the audit log has an entry for each stored subscription and no other.
    const audited = await db
      .select({ id: auditLogs.resourceId })
      .from(auditLogs)
      .where(and(eq(auditLogs.userId, user.id), eq(auditLogs.resourceType, "push_subscription")));
    const stored = await Promise.all(answers.filter((r) => r.status === 201).map(async (r) => (await json<Subscription>(r)).id));
    expect(audited.map((a) => a.id).sort()).toEqual(stored.sort());
    const listed = await json<Subscription[]>(await call("GET", "/users/me/push-subscriptions", { token: user.token }));
    expect(listed).toHaveLength(PUSH_SUBSCRIPTIONS_MAX_PER_USER);
  });

  it("gives the last place to one browser sent several times at once: one 201, the others 200 with it, never the cap's 400", async () => {
    const [user, browser] = await Promise.all([createUser(), subscribeBrowser()]);
    await holdStraightInD1(user.id, PUSH_SUBSCRIPTIONS_MAX_PER_USER - 1);
    const answers = await Promise.all([1, 2, 3, 4].map(() => add(user.token, browser.subscription)));
    expect(answers.map((r) => r.status).sort()).toEqual([200, 200, 200, 201]);
    const ids = await Promise.all(answers.map(async (r) => (await json<Subscription>(r)).id));
    expect(new Set(ids).size).toBe(1);
    expect(await rowsOf(user.id)).toHaveLength(PUSH_SUBSCRIPTIONS_MAX_PER_USER);
  });

  it(`takes ${ADDS_PER_MINUTE} adds a minute per user, a known endpoint's too: past them a 429 with Retry-After that changes nothing`, async () => {
    const [user, browser] = await Promise.all([createUser(), subscribeBrowser()]);
    // The same browser renamed each time (a new endpoint each time could meet the cap first when the limiter's
    // clock-aligned window turns over during the loop, letting up to twice the limit through).
    const accepted: string[] = [];
    let i = 0;
    let name = "";
    const limited = await untilLimited(
      ADDS_PER_MINUTE,
      () => {
        name = `Name ${i++}`;
        return add(user.token, { ...browser.subscription, name });
      },
      (res) => {
        expect(res.status).toBe(accepted.length === 0 ? 201 : 200);
        accepted.push(name);
      },
    );
    expect(accepted.length).toBeGreaterThanOrEqual(ADDS_PER_MINUTE);
    expect(limited.headers.get("Retry-After")).toBe("60");
    await expectRejected(limited, { status: 429, message: Messages.rateLimited(ADDS_PER_MINUTE, "1m0s") });
    // The refused rename was not applied nor audited.
    const rows = await rowsOf(user.id);
    expect(rows.map((r) => r.name)).toEqual([accepted.at(-1)]);
    const audits = await db
      .select({ action: auditLogs.action })
      .from(auditLogs)
      .where(eq(auditLogs.resourceId, rows[0]?.id ?? ""));
    expect(audits).toHaveLength(accepted.length);
    // Listing is not limited.
    const listed = await call("GET", "/users/me/push-subscriptions", { token: user.token });
    expect(listed.status).toBe(200);
    expect((await json<Subscription[]>(listed)).map((s) => s.name)).toEqual([accepted.at(-1)]);
  });

  it("refuses an endpoint that is not a push service's and a p256dh that is not a point on P-256, naming each field", async () => {
    const [user, browser] = await Promise.all([createUser(), subscribeBrowser()]);
    const offCurve = `${browser.subscription.keys.p256dh.slice(0, -2)}${browser.subscription.keys.p256dh.endsWith("AA") ? "AB" : "AA"}`;
    const body = { endpoint: "https://169.254.169.254/latest/meta-data/", keys: { ...browser.subscription.keys, p256dh: offCurve } };
    const refused = await expectRejected(await call("POST", "/users/me/push-subscriptions", { token: user.token, body }), {
      status: 400,
      message: Messages.validation,
    });
    expect(refused.validations).toEqual([
      { field: "endpoint", detail: expect.stringMatching(/^must be on an origin listed in OUTBOUND_ALLOWED_ORIGINS/) },
      { field: "keys.p256dh", detail: PushMessages.badP256dh },
    ]);
    expect(await rowsOf(user.id)).toEqual([]);
  });

  it("without VAPID keys: the public key is a 404 and adding a 409, both saying push is off; listing and removing still work", async () => {
    const [user, browser] = await Promise.all([createUser(), subscribeBrowser()]);
    const made = await json<Subscription>(await call("POST", "/users/me/push-subscriptions", { token: user.token, body: browser.subscription }));
    const off = await expectRejected(await withoutKeys(apiRequest("GET", "/notifications/push/public-key")), {
      status: 404,
      message: PushMessages.notConfigured,
    });
    expect(off.detail).toBe(PushMessages.notConfiguredDetail);
    const { subscription } = await subscribeBrowser();
    await expectRejected(await withoutKeys(apiRequest("POST", "/users/me/push-subscriptions", { token: user.token, body: subscription })), {
      status: 409,
      message: PushMessages.notConfigured,
    });
    const listed = await withoutKeys(apiRequest("GET", "/users/me/push-subscriptions", { token: user.token }));
    expect(await json(listed)).toEqual([made]);
    expect((await withoutKeys(apiRequest("DELETE", `/users/me/push-subscriptions/${made.id}`, { token: user.token }))).status).toBe(204);
    expect(await rowsOf(user.id)).toEqual([]);
  });
});
