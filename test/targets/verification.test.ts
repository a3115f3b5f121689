import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { TARGET_KINDS, type TargetKind } from "../../src/db/schema";
import { Messages } from "../../src/http/errors";
import { TARGET_VERIFICATION_TEMPLATE_ID } from "../../src/notifications/templates";
import { TargetMessages } from "../../src/targets/messages";
import { call, createUser, json } from "../helpers";
import { waitFor } from "../peers";
import { addTarget, type CreatedTarget, codeIn, codeSentTo, scriptStandIn, standInPath, standInUrl, waitForDeliveries } from "./stand-ins";

// Adding a target and proving it is yours (docs/targets.md, "Verification"), for each kind, against the stand-ins of
// test/peers/targets.ts: the code goes out at once through the message log, arrives where the URL points, and only
// that code verifies the target; five wrong ones remove it.

const verify = (token: string, id: string, code: string) => call("POST", `/users/me/notification-targets/${id}/verify`, { token, body: { code } });
const list = async (token: string) => json<CreatedTarget[]>(await call("GET", "/users/me/notification-targets", { token }));

/** A 6-digit code other than `code`. */
const wrong = (code: string) => String((Number(code) + 1) % 1_000_000).padStart(6, "0");

describe('docs/targets.md, "Verification"', () => {
  it.each(TARGET_KINDS)("a %s target receives its code at once, and the code verifies it", async (kind: TargetKind) => {
    const user = await createUser();
    const { target, path } = await addTarget(user.token, kind, `My ${kind}`);
    expect(target).toMatchObject({ kind, name: `My ${kind}`, url_origin: env.TARGETS_URL, verified: false });
    expect(target.code_delivery).toMatchObject({ status: "pending" });
    // Only a webhook gets a signing secret, shown this once: `whsec_` and 32 random bytes.
    if (kind === "webhook") expect(atob((target.secret ?? "").replace(/^whsec_/, "")).length).toBe(32);
    else expect(target.secret).toBeUndefined();

    const [delivery] = await waitForDeliveries(path, 1, target.secret);
    if (!delivery) throw new Error("no verification message");
    expect(delivery.problems).toEqual([]);
    const code = codeIn(delivery);
    if (kind === "webhook") {
      // The deployment webhook's body, with the event type and only the code in `payload`, signed with the target's secret.
      expect(delivery.signature).toBe("valid");
      const body = JSON.parse(delivery.body);
      expect(body).toMatchObject({ _version: "1.1", type: "target.verification", msg_id: target.id, payload: { code } });
      expect(Object.keys(body.payload)).toEqual(["code"]);
      expect(delivery.headers["webhook-id"]).toBe(target.id);
    } else {
      expect(delivery.body).toContain(`Verification code: ${code}`);
    }

    const res = await verify(user.token, target.id, code);
    expect(res.status).toBe(200);
    const { secret: _shownOnce, ...shown } = target;
    expect(await json(res)).toEqual({ ...shown, verified: true, code_delivery: null });
    expect(await list(user.token)).toEqual([{ ...shown, verified: true, code_delivery: null }]);
    // A second try at a verified target changes nothing.
    const again = await verify(user.token, target.id, code);
    expect(again.status).toBe(409);
    expect((await json(again)).message).toBe(TargetMessages.alreadyVerified);
  });

  it("the verification message is in the message log, and the code itself is nowhere in it once sent", async () => {
    const user = await createUser();
    const { target, path } = await addTarget(user.token, "slack");
    const code = await codeSentTo(path);
    const row = await waitFor(async () => {
      const found = await env.DB.prepare("SELECT * FROM notification_messages WHERE id = ?").bind(target.id).first<Record<string, unknown>>();
      return found?.status === "sent" ? found : undefined;
    });
    expect(row).toMatchObject({ method: "target", destination: target.id, template_id: TARGET_VERIFICATION_TEMPLATE_ID, user_id: user.id });
    expect(JSON.stringify(row)).not.toContain(code);
    const stored = await env.DB.prepare("SELECT * FROM notification_targets WHERE id = ?").bind(target.id).first<Record<string, unknown>>();
    // Neither the URL nor the code is stored in clear: the URL is sealed, the code kept as an HMAC.
    expect(JSON.stringify(stored)).not.toContain(path);
    expect(JSON.stringify(stored)).not.toContain(code);
  });

  it("a target that was briefly down gets its code on a retry, and its owner sees the retry meanwhile", async () => {
    const user = await createUser();
    const path = standInPath("slack");
    // Down for two tries: each failure leaves the message waiting half a second or more for its retry.
    await scriptStandIn(path, [
      { status: 500, body: "rollup_error" },
      { status: 500, body: "rollup_error" },
    ]);
    const res = await call("POST", "/users/me/notification-targets", {
      token: user.token,
      body: { kind: "slack", url: standInUrl(path), name: "Ops" },
    });
    expect(res.status).toBe(201);
    const { id } = await json<CreatedTarget>(res);
    // Meanwhile the target shows its owner what the service answered, and when it is tried again…
    const retrying = await waitFor(async () => {
      const [t] = await list(user.token);
      return t?.code_delivery?.status === "temporary_failure" ? t.code_delivery : undefined;
    });
    expect(retrying).toMatchObject({ status_reason: "Slack answered 500: rollup_error", next_retry_after: expect.any(String) });
    // …and the same code arrives on the third try, and verifies.
    const deliveries = await waitForDeliveries(path, 3);
    expect(deliveries.map((d) => d.status)).toEqual([500, 500, 200]);
    const codes = deliveries.map(codeIn);
    expect(new Set(codes).size).toBe(1);
    expect((await verify(user.token, id, codes[0] ?? "")).status).toBe(200);
  });

  it("four wrong codes say how many tries are left; the fifth removes the target, and says so", async () => {
    const user = await createUser();
    const { target, path } = await addTarget(user.token, "discord");
    const code = await codeSentTo(path);
    for (const left of [4, 3, 2, 1]) {
      const res = await verify(user.token, target.id, wrong(code));
      expect(res.status).toBe(400);
      const body = await json<{ message: string; detail: string; validations: unknown[] }>(res);
      expect(body).toEqual({
        message: TargetMessages.incorrectCode,
        detail: TargetMessages.triesLeft(left),
        validations: [{ field: "code", detail: TargetMessages.incorrectCode }],
      });
    }
    const last = await verify(user.token, target.id, wrong(code));
    expect(last.status).toBe(400);
    expect(await json(last)).toEqual({ message: TargetMessages.removedAfterTries, detail: TargetMessages.removedDetail });
    expect(await list(user.token)).toEqual([]);
    // Gone for good: even the right code now finds nothing.
    const right = await verify(user.token, target.id, code);
    expect(right.status).toBe(404);
    expect((await json(right)).message).toBe(Messages.notFoundOrNoAccess);
    const audit = await env.DB.prepare("SELECT action, status_code FROM audit_logs WHERE resource_id = ? ORDER BY time, rowid")
      .bind(target.id)
      .all<{ action: string; status_code: number }>();
    expect(audit.results.map((r) => r.action)).toEqual([
      "create",
      "verify_failed",
      "verify_failed",
      "verify_failed",
      "verify_failed",
      "verify_failed",
      "delete",
    ]);
  });

  it("five wrong codes at once remove the target once, and no more than five are counted", async () => {
    const user = await createUser();
    const { target, path } = await addTarget(user.token, "teams");
    const code = await codeSentTo(path);
    const answers = await Promise.all(Array.from({ length: 5 }, () => verify(user.token, target.id, wrong(code))));
    const messages = await Promise.all(answers.map(async (r) => (await json<{ message: string }>(r)).message));
    expect(messages.filter((m) => m === TargetMessages.removedAfterTries)).toHaveLength(1);
    expect(await list(user.token)).toEqual([]);
    const deletes = await env.DB.prepare("SELECT count(*) AS n FROM audit_logs WHERE resource_id = ? AND action = 'delete'")
      .bind(target.id)
      .first<{ n: number }>();
    expect(deletes?.n).toBe(1);
  });

  it("a code is bound to its target: another target's code does not verify it", async () => {
    const user = await createUser();
    const first = await addTarget(user.token, "slack");
    const second = await addTarget(user.token, "slack");
    const firstCode = await codeSentTo(first.path);
    const secondCode = await codeSentTo(second.path);
    if (firstCode !== secondCode) expect((await verify(user.token, second.target.id, firstCode)).status).toBe(400);
    expect((await verify(user.token, second.target.id, secondCode)).status).toBe(200);
  });
});
