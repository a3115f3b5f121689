import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { database } from "../../src/db/client";
import { type MessageRow, notificationMessages, TARGET_KINDS, type TargetKind } from "../../src/db/schema";
import { dispatchMessage } from "../../src/notifications/dispatch";
import { messagePayload } from "../../src/notifications/enqueue";
import { TEMPLATE_IDS } from "../../src/notifications/templates";
import { TargetReasons } from "../../src/targets/messages";
import { messageRow } from "../fixtures/message-row";
import { call, createUser, type TestUser } from "../helpers";
import { waitFor } from "../peers";
import { addTarget, addVerifiedTarget, type CreatedTarget, receivedAt, scriptStandIn, waitForDeliveries } from "./stand-ins";

// Delivery to a user's own targets (docs/targets.md, "Delivery"): message-log rows of method `target` whose
// destination is the target, inserted here as enqueue writes them and sent by the dispatcher, against the stand-ins
// of test/peers/targets.ts. Each body must be one the service takes, and each answer is classified as the deployment
// webhook's is (docs/email.md, "Webhooks"): 429, 5xx and network errors retried, other 4xx permanent, a deleted
// Slack or Discord webhook (404) permanent with a reason that says so.

interface Row {
  status: string;
  status_reason: string | null;
  attempts: number;
}

const rowOf = (id: string) => env.DB.prepare("SELECT status, status_reason, attempts FROM notification_messages WHERE id = ?").bind(id).first<Row>();

/** A custom notification's copy for `target`, pending, as enqueue writes it (the payload the webhook carries). */
async function targetCopy(user: TestUser, targetId: string, title: string, message: string): Promise<MessageRow> {
  const row = messageRow({
    templateId: TEMPLATE_IDS.custom,
    userId: user.id,
    method: "target",
    destination: targetId,
    payload: messagePayload(
      { id: TEMPLATE_IDS.custom, name: "Custom Notification" },
      { id: user.id, email: user.email, name: "", username: user.username },
      { labels: { custom_title: title, custom_message: message } },
    ),
    createdBy: user.id,
  });
  await database(env.DB).insert(notificationMessages).values(row);
  return row;
}

let user: TestUser;
const targets = new Map<TargetKind, { target: CreatedTarget; path: string }>();

beforeAll(async () => {
  user = await createUser();
  for (const kind of TARGET_KINDS) targets.set(kind, await addVerifiedTarget(user.token, kind));
});

function verified(kind: TargetKind) {
  const found = targets.get(kind);
  if (!found) throw new Error(`no ${kind} target`);
  return found;
}

describe('docs/targets.md, "Delivery"', () => {
  it.each(TARGET_KINDS)("a %s target receives a notification in its service's own shape", async (kind) => {
    const { target, path } = verified(kind);
    const before = (await receivedAt(path)).length;
    const row = await targetCopy(user, target.id, "Deploy <prod> & friends", "Build **42** passed: https://ci.example.com/builds/42 @everyone");
    expect(await dispatchMessage(env, row.id)).toBe("sent");
    const delivery = (await waitForDeliveries(path, before + 1, target.secret))[before];
    if (!delivery) throw new Error("nothing arrived");
    expect(delivery.problems).toEqual([]);
    expect(delivery.headers["x-message-id"]).toBe(row.id);
    const body = JSON.parse(delivery.body);
    switch (kind) {
      case "slack":
        // Slack's markup characters arrive escaped, so nothing in a notification becomes a link or a mention.
        expect(body.text).toBe("Deploy &lt;prod&gt; &amp; friends");
        expect(body.blocks[0]).toEqual({ type: "header", text: { type: "plain_text", text: "Deploy <prod> & friends", emoji: true } });
        expect(body.blocks[1].text.text).toBe("Build 42 passed: https://ci.example.com/builds/42 @everyone");
        expect(body.blocks[2].elements[0]).toMatchObject({
          type: "button",
          text: { text: "Open in Herald" },
          url: expect.stringMatching(/\/#\/inbox$/),
        });
        break;
      case "teams":
        expect(body.attachments[0].content).toMatchObject({ type: "AdaptiveCard", version: "1.5" });
        expect(body.attachments[0].content.body.map((b: { text: string }) => b.text)).toEqual([
          "Deploy <prod> & friends",
          "Build 42 passed: https://ci.example.com/builds/42 @everyone",
        ]);
        break;
      case "discord":
        expect(body.allowed_mentions).toEqual({ parse: [] });
        expect(body.embeds[0]).toMatchObject({ title: "Deploy <prod> & friends", timestamp: row.createdAt });
        expect(body.embeds[0].description).toContain("Build 42 passed: https://ci.example.com/builds/42 @everyone");
        break;
      case "webhook":
        // The deployment webhook's body, signed with this target's own secret (checked by `standardwebhooks`).
        expect(delivery.signature).toBe("valid");
        expect(delivery.headers["webhook-id"]).toBe(row.id);
        expect(body).toEqual({
          _version: "1.1",
          msg_id: row.id,
          payload: { ...row.payload, actions: [] },
          title: "Deploy <prod> & friends",
          title_markdown: "Deploy <prod> & friends",
          body: "Build 42 passed: https://ci.example.com/builds/42 @everyone",
          body_markdown: "Build **42** passed: https://ci.example.com/builds/42 @everyone",
        });
        break;
    }
    expect(await rowOf(row.id)).toMatchObject({ status: "sent", status_reason: null });
  });

  it("a notification sent through the API reaches each verified target once, and an unverified one gets no copy", async () => {
    const pending = await addTarget(user.token, "slack", "Not yet verified");
    await waitForDeliveries(pending.path);
    const before = new Map(await Promise.all(TARGET_KINDS.map(async (kind) => [kind, (await receivedAt(verified(kind).path)).length] as const)));
    const title = `Sent through the API ${crypto.randomUUID().slice(0, 8)}`;
    const sent = await call("POST", "/notifications/custom", { token: user.token, body: { content: { title, message: "To every channel." } } });
    expect(sent.status).toBe(204);
    for (const kind of TARGET_KINDS) {
      const { target, path } = verified(kind);
      const [delivery] = (await waitForDeliveries(path, (before.get(kind) ?? 0) + 1, target.secret)).slice(before.get(kind));
      expect(delivery?.problems).toEqual([]);
      expect(delivery?.body).toContain(title);
      if (kind === "webhook") expect(delivery?.signature).toBe("valid");
    }
    const copies = await env.DB.prepare(
      "SELECT destination, status FROM notification_messages WHERE user_id = ? AND method = 'target' AND json_extract(payload, '$.labels.custom_title') = ?",
    )
      .bind(user.id, title)
      .all<{ destination: string; status: string }>();
    expect(copies.results.map((r) => r.destination).sort()).toEqual(TARGET_KINDS.map((kind) => verified(kind).target.id).sort());
    await waitFor(async () => {
      const { results } = await env.DB.prepare(
        "SELECT status FROM notification_messages WHERE user_id = ? AND method = 'target' AND json_extract(payload, '$.labels.custom_title') = ?",
      )
        .bind(user.id, title)
        .all<{ status: string }>();
      return results.every((r) => r.status === "sent") ? true : undefined;
    });
    expect((await receivedAt(pending.path)).map((d) => d.body).join()).not.toContain(title);
    expect((await call("DELETE", `/users/me/notification-targets/${pending.target.id}`, { token: user.token })).status).toBe(204);
  });

  it("a webhook target's signature is its own: the deployment's secret does not verify it", async () => {
    const { target, path } = verified("webhook");
    const before = (await receivedAt(path)).length;
    const row = await targetCopy(user, target.id, "Signed", "with the target's secret");
    expect(await dispatchMessage(env, row.id)).toBe("sent");
    const [own] = (await waitForDeliveries(path, before + 1, target.secret)).slice(before);
    const [deployment] = (await receivedAt(path, env.NOTIFICATIONS_WEBHOOK_SECRET)).slice(before);
    expect(own?.signature).toBe("valid");
    expect(deployment?.signature).not.toBe("valid");
  });

  it.each([429, 500, 503])("%i is retried, and the retry delivers", async (status) => {
    const { target, path } = verified("slack");
    const before = (await receivedAt(path)).length;
    await scriptStandIn(path, [{ status, body: "busy" }]);
    const row = await targetCopy(user, target.id, `Retried after ${status}`, "");
    expect(await dispatchMessage(env, row.id)).toBe("retry");
    expect(await rowOf(row.id)).toMatchObject({ status: "temporary_failure", status_reason: `Slack answered ${status}: busy` });
    // The queue takes the retry when it falls due (NOTIFICATIONS_RETRY_BASE is 1s here).
    await waitFor(async () => ((await rowOf(row.id))?.status === "sent" ? true : undefined));
    const deliveries = (await receivedAt(path)).slice(before);
    expect(deliveries.map((d) => d.status)).toEqual([status, 200]);
    expect(deliveries[0]?.body).toBe(deliveries[1]?.body);
  });

  it.each(["slack", "discord"] as const)("a %s 404 means the webhook was deleted: permanent, with what to do", async (kind) => {
    const { target, path } = verified(kind);
    const body = kind === "slack" ? "no_service" : '{"message": "Unknown Webhook", "code": 10015}';
    await scriptStandIn(path, [{ status: 404, body }]);
    const row = await targetCopy(user, target.id, "To a deleted webhook", "");
    expect(await dispatchMessage(env, row.id)).toBe("failed");
    const service = kind === "slack" ? "Slack" : "Discord";
    expect(await rowOf(row.id)).toMatchObject({ status: "permanent_failure", status_reason: TargetReasons.deleted(service, 404, body), attempts: 1 });
  });

  it.each([
    [400, "teams", "Microsoft Teams answered 400: bad request"],
    [403, "webhook", "webhook answered 403: bad request"],
  ] as const)("any other 4xx (%i from %s) is permanent", async (status, kind, reason) => {
    const { target, path } = verified(kind);
    await scriptStandIn(path, [{ status, body: "bad request" }]);
    const row = await targetCopy(user, target.id, `Refused with ${status}`, "");
    expect(await dispatchMessage(env, row.id)).toBe("failed");
    expect(await rowOf(row.id)).toMatchObject({ status: "permanent_failure", status_reason: reason });
  });

  it("a redirect is not followed: permanent, and the target's URL is never in the reason", async () => {
    const { target, path } = verified("webhook");
    await scriptStandIn(path, [{ status: 301 }]);
    const row = await targetCopy(user, target.id, "Redirected", "");
    expect(await dispatchMessage(env, row.id)).toBe("failed");
    const stored = await rowOf(row.id);
    expect(stored?.status_reason).toBe(`webhook answered 301 (a redirect); redirects are not followed, ${TargetReasons.redirect}`);
    expect(stored?.status_reason).not.toContain(path);
  });

  it("an unverified target receives nothing but its verification message", async () => {
    const owner = await createUser();
    const { target, path } = await addTarget(owner.token, "discord");
    await waitForDeliveries(path);
    const row = await targetCopy(owner, target.id, "Not for an unverified target", "");
    expect(await dispatchMessage(env, row.id)).toBe("failed");
    expect(await rowOf(row.id)).toMatchObject({ status: "permanent_failure", status_reason: TargetReasons.unverified, attempts: 1 });
    expect((await receivedAt(path)).map((d) => d.body).join()).not.toContain("Not for an unverified target");
  });

  it("a removed target, or another user's, receives nothing", async () => {
    const owner = await createUser();
    const { target, path } = await addVerifiedTarget(owner.token, "slack");
    const before = (await receivedAt(path)).length;
    // A row naming someone else's target is not sent to it.
    const stranger = await targetCopy(user, target.id, "Someone else's target", "");
    expect(await dispatchMessage(env, stranger.id)).toBe("failed");
    expect(await rowOf(stranger.id)).toMatchObject({ status: "permanent_failure", status_reason: TargetReasons.gone });

    const queued = await targetCopy(owner, target.id, "After removal", "");
    expect((await call("DELETE", `/users/me/notification-targets/${target.id}`, { token: owner.token })).status).toBe(204);
    expect(await dispatchMessage(env, queued.id)).toBe("failed");
    expect(await rowOf(queued.id)).toMatchObject({ status: "permanent_failure", status_reason: TargetReasons.gone });
    expect(await receivedAt(path)).toHaveLength(before);
  });

  it("a target's URL is checked again at each send: one the deployment no longer allows is not posted to", async () => {
    const { target, path } = verified("teams");
    const before = (await receivedAt(path)).length;
    const row = await targetCopy(user, target.id, "Allow-list changed", "");
    const elsewhere = { ...env, OUTBOUND_ALLOWED_ORIGINS: "https://allowed.example" };
    expect(await dispatchMessage(elsewhere, row.id)).toBe("failed");
    expect((await rowOf(row.id))?.status_reason).toBe(
      TargetReasons.notAllowed(`must be on an origin listed in OUTBOUND_ALLOWED_ORIGINS (${env.TARGETS_URL} is not)`),
    );
    expect(await receivedAt(path)).toHaveLength(before);
  });
});
