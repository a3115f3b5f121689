import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { getConfig } from "../../src/config/config";
import type { Env } from "../../src/env";
import { Messages } from "../../src/http/errors";
import { userInbox } from "../../src/inbox/address";
import { assertInboxJurisdiction, decideJurisdiction, JURISDICTION_KEY } from "../../src/inbox/jurisdiction";
import { apiRequest, createUser, fetchApp, json } from "../helpers";

// docs/deployment.md, "Where data lives": DATA_JURISDICTION creates every inbox object in that Durable Objects
// jurisdiction. workerd does not implement jurisdictions (a restricted namespace refuses to make ids: "Jurisdiction
// restrictions are not implemented in workerd."), so what runs here is what can: the setting's validation, that the
// namespace used is the restricted one, that an inbox's id does not change while the setting is empty, and that a
// deployment whose setting changed under existing inboxes refuses to run.

const withJurisdiction = (jurisdiction: string): Env => ({ ...env, DATA_JURISDICTION: jurisdiction });

afterEach(() => {
  vi.restoreAllMocks();
});

describe('docs/deployment.md, "Where data lives": the namespace', () => {
  it("accepts the jurisdictions Durable Objects have, and none", () => {
    for (const jurisdiction of ["", "eu", "us", "fedramp", "fedramp-high"])
      expect(getConfig(withJurisdiction(jurisdiction)).DATA_JURISDICTION).toBe(jurisdiction);
    expect(getConfig(env).DATA_JURISDICTION).toBe("");
  });

  it("without a jurisdiction, an inbox's id is what it always was: the user id's name in the whole namespace", async () => {
    const user = await createUser();
    expect(userInbox(env, user.id).id.toString()).toBe(env.USER_INBOX.idFromName(user.id).toString());
    expect(userInbox(env, user.id).id.equals(env.USER_INBOX.idFromName(user.id))).toBe(true);
  });

  it("with one, every inbox is addressed in the namespace restricted to it", () => {
    // The runtime's own refusal shows the restricted namespace was the one asked for an id.
    expect(() => userInbox(withJurisdiction("eu"), crypto.randomUUID())).toThrow(/Jurisdiction restrictions are not implemented in workerd/);
    const asked: string[] = [];
    const namespace = env.USER_INBOX;
    const observed = new Proxy(namespace, {
      get(target, property, receiver) {
        if (property === "jurisdiction") {
          return (jurisdiction: DurableObjectJurisdiction) => {
            asked.push(jurisdiction);
            // workerd cannot make restricted ids: the whole namespace stands in, once the argument is seen.
            return target;
          };
        }
        const value = Reflect.get(target, property, receiver);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    userInbox({ ...withJurisdiction("fedramp"), USER_INBOX: observed }, crypto.randomUUID());
    expect(asked).toEqual(["fedramp"]);
  });
});

describe('docs/deployment.md, "Where data lives": a changed setting is refused, never followed', () => {
  it("decides from what was recorded and whether any user exists", () => {
    // A new deployment records what it is configured with, whatever it is.
    expect(decideJurisdiction("eu", undefined, false)).toEqual({ ok: true, record: "eu" });
    expect(decideJurisdiction("", "", false)).toEqual({ ok: true });
    expect(decideJurisdiction("eu", "", false)).toEqual({ ok: true, record: "eu" });
    // Users from before the setting: their inboxes were made without a jurisdiction.
    expect(decideJurisdiction("", undefined, true)).toEqual({ ok: true, record: "" });
    expect(decideJurisdiction("eu", undefined, true)).toMatchObject({ ok: false });
    // The same setting runs; another is refused while any user exists.
    expect(decideJurisdiction("eu", "eu", true)).toEqual({ ok: true });
    expect(decideJurisdiction("", "eu", true)).toMatchObject({ ok: false });
    expect(decideJurisdiction("us", "eu", true)).toMatchObject({ ok: false });
    const refused = decideJurisdiction("eu", "", true);
    expect(refused.ok ? "" : refused.message).toMatch(/DATA_JURISDICTION is "eu", but this deployment's inboxes were created in no jurisdiction/);
    expect(refused.ok ? "" : refused.message).toMatch(/docs\/deployment\.md, "Where data lives"/);
  });

  it("a deployment with users, configured with a jurisdiction its inboxes are not in, answers every request with a 500 and says why in its log", async () => {
    await createUser();
    const logged = vi.spyOn(console, "error").mockImplementation(() => undefined);
    const ctx = createExecutionContext();
    const eu = withJurisdiction("eu");
    for (const path of ["/users/first", "/auth/scopes"]) {
      const res = await fetchApp(apiRequest("GET", path), eu, ctx);
      expect(res.status).toBe(500);
      expect((await json<{ message: string }>(res)).message).toBe(Messages.internal);
    }
    await waitOnExecutionContext(ctx);
    expect(logged.mock.calls.map((c) => String(c[0])).join("\n")).toMatch(
      /DATA_JURISDICTION is "eu", but this deployment's inboxes were created in no jurisdiction/,
    );
    // The cron and the queue consumers check the same before they reach an inbox.
    await expect(assertInboxJurisdiction(withJurisdiction("us"))).rejects.toThrow(/DATA_JURISDICTION is "us"/);
    // Nothing was recorded by the refusals: the deployment goes on as it was once the setting is put back.
    const row = await env.DB.prepare("SELECT value FROM site_config WHERE key = ?").bind(JURISDICTION_KEY).first<{ value: string }>();
    expect(row?.value).toBe("");
    expect((await fetchApp(apiRequest("GET", "/auth/scopes"), withJurisdiction(""), createExecutionContext())).status).toBe(200);
  });

  it("a deployment from before the setting (no record) is taken to have made its inboxes without a jurisdiction", async () => {
    await createUser();
    await env.DB.prepare("DELETE FROM site_config WHERE key = ?").bind(JURISDICTION_KEY).run();
    await expect(assertInboxJurisdiction(withJurisdiction("eu"))).rejects.toThrow(/created in no jurisdiction/);
    await assertInboxJurisdiction(withJurisdiction(""));
    const row = await env.DB.prepare("SELECT value FROM site_config WHERE key = ?").bind(JURISDICTION_KEY).first<{ value: string }>();
    expect(row?.value).toBe("");
  });
});
