import * as fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { TEMPLATE_IDS } from "../../src/notifications/templates";
import { call, createUser, json, owner, type TestUser } from "../helpers";
import { deliver, TEMPLATE_A, watch } from "../inbox/inbox-helpers";

// Every UUID input is accepted in any case and compared in canonical lower case (src/http/ids.ts): in paths, queries,
// bodies and map keys. For each endpoint that takes one, the same request with the id's letters in random case must
// answer exactly as with the stored (lower-case) id.

/** The id with each letter's case flipped at random. */
const anyCase = (id: string) =>
  fc
    .array(fc.boolean(), { minLength: id.length, maxLength: id.length })
    .map((flips) => [...id].map((ch, i) => (flips[i] ? ch.toUpperCase() : ch.toLowerCase())).join(""));

const RUNS = { numRuns: 8 };

interface Fixture {
  admin: { token: string; id: string };
  user: TestUser;
  /** A delivered notification (lower-case id) and the target it carries. */
  notificationId: string;
  olderId: string;
  target: string;
}

let fx: Fixture;

beforeAll(async () => {
  const admin = await owner();
  const user = await createUser();
  const target = crypto.randomUUID();
  const older = await deliver(user.id, { targets: [target] });
  const newer = await deliver(user.id, { targets: [target] });
  fx = { admin, user, notificationId: newer.id, olderId: older.id, target };
});

/** Status and body of a response, for comparing two answers. */
async function answer(res: Response): Promise<{ status: number; body: unknown }> {
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: res.status, body };
}

describe("UUIDs in any case (canonical lower case)", () => {
  it("paths: GET /users/{user}, its preferences and tokens, by a UUID in any case", async () => {
    await fc.assert(
      fc.asyncProperty(anyCase(fx.user.id), async (id) => {
        for (const path of [`/users/${id}`, `/users/${id}/notifications/preferences`, `/users/${id}/keys/tokens`]) {
          const expected = await answer(await call("GET", path.replace(id, fx.user.id), { token: fx.admin.token }));
          expect(expected.status).toBe(200);
          expect(await answer(await call("GET", path, { token: fx.admin.token }))).toEqual(expected);
        }
      }),
      RUNS,
    );
  });

  it("paths: PUT /notifications/inbox/{id}/read-status", async () => {
    await fc.assert(
      fc.asyncProperty(anyCase(fx.notificationId), fc.boolean(), async (id, isRead) => {
        const res = await call("PUT", `/notifications/inbox/${id}/read-status`, { token: fx.user.token, body: { is_read: isRead } });
        expect(res.status).toBe(200);
        expect((await json<{ notification: { id: string } }>(res)).notification.id).toBe(fx.notificationId);
      }),
      RUNS,
    );
  });

  it("queries: N3 starting_before, targets and templates", async () => {
    await fc.assert(
      fc.asyncProperty(anyCase(fx.notificationId), anyCase(fx.target), anyCase(TEMPLATE_A), async (cursor, target, template) => {
        const page = await json<{ notifications: { id: string }[] }>(
          await call("GET", `/notifications/inbox?starting_before=${cursor}&targets=${target}&templates=${template}`, { token: fx.user.token }),
        );
        expect(page.notifications.map((n) => n.id)).toEqual([fx.olderId]);
      }),
      RUNS,
    );
  });

  it("queries: N5 targets and templates filter the live frames", async () => {
    const target = crypto.randomUUID();
    const w = await watch(`?targets=${target.toUpperCase()}&templates=${TEMPLATE_A.toUpperCase()}`, { "Service-Session-Token": fx.user.token });
    const n = await deliver(fx.user.id, { targets: [target] });
    expect(((await w.next()).notification as { id: string }).id).toBe(n.id);
    w.ws.close();
  });

  it("queries: GET /notifications/messages?user_id=&template_id=", async () => {
    await call("POST", "/notifications/custom", { token: fx.user.token, body: { content: { title: "case" } } });
    const path = (user: string, template: string) => `/notifications/messages?user_id=${user}&template_id=${template}`;
    const expected = await answer(await call("GET", path(fx.user.id, TEMPLATE_IDS.custom), { token: fx.admin.token }));
    expect((expected.body as { count: number }).count).toBeGreaterThan(0);
    await fc.assert(
      fc.asyncProperty(anyCase(fx.user.id), anyCase(TEMPLATE_IDS.custom), async (user, template) => {
        expect(await answer(await call("GET", path(user, template), { token: fx.admin.token }))).toEqual(expected);
      }),
      RUNS,
    );
  });

  it("bodies: POST /authcheck owner_id, organization_id and resource_id", async () => {
    await fc.assert(
      fc.asyncProperty(anyCase(fx.user.id), anyCase(fx.notificationId), async (userId, notificationId) => {
        const res = await call("POST", "/authcheck", {
          token: fx.user.token,
          body: {
            checks: {
              own: { action: "read", object: { resource_type: "user", owner_id: userId } },
              byId: { action: "read", object: { resource_type: "user", resource_id: userId } },
              notification: { action: "update", object: { resource_type: "inbox_notification", resource_id: notificationId } },
            },
          },
        });
        expect(await json(res)).toEqual({ own: true, byId: true, notification: true });
      }),
      RUNS,
    );
  });

  it("map keys: PUT /users/{user}/notifications/preferences template_disabled_map", async () => {
    await fc.assert(
      fc.asyncProperty(anyCase(TEMPLATE_IDS.test), fc.boolean(), async (key, disabled) => {
        const res = await call("PUT", `/users/${fx.user.id}/notifications/preferences`, {
          token: fx.user.token,
          body: { template_disabled_map: { [key]: disabled } },
        });
        expect(res.status).toBe(200);
        const prefs = await json<{ id: string; disabled: boolean }[]>(res);
        expect(prefs.filter((p) => p.id.toLowerCase() === TEMPLATE_IDS.test)).toEqual([expect.objectContaining({ id: TEMPLATE_IDS.test, disabled })]);
      }),
      RUNS,
    );
  });

  it("map keys: one template named twice in different case with different values → 400, nothing changed", async () => {
    const res = await call("PUT", `/users/${fx.user.id}/notifications/preferences`, {
      token: fx.user.token,
      body: { template_disabled_map: { [TEMPLATE_IDS.test]: true, [TEMPLATE_IDS.test.toUpperCase()]: false } },
    });
    expect(res.status).toBe(400);
    const body = await json<{ validations: { field: string }[] }>(res);
    expect(body.validations.map((v) => v.field)).toEqual([`template_disabled_map.${TEMPLATE_IDS.test.toUpperCase()}`]);
  });
});
