import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { TEMPLATE_IDS } from "../../src/notifications/templates";
import { BASE, createUser, fetchApp } from "../helpers";
import { waitFor } from "../peers";

/** A client address of its own, so the per-address limit of A5 never refuses a test's request. */
const randomIp = () => `10.${[0, 0, 0].map(() => Math.floor(Math.random() * 256)).join(".")}`;

async function postRequest(email: string): Promise<Response> {
  const ctx = createExecutionContext();
  const res = await fetchApp(
    new Request(`${BASE}/api/v2/users/otp/request`, {
      method: "POST",
      headers: { "Content-Type": "application/json", "CF-Connecting-IP": randomIp() },
      body: JSON.stringify({ email }),
    }),
    env,
    ctx,
  );
  await waitOnExecutionContext(ctx);
  return res;
}

/**
 * A5, and its work done: the request only puts a message on the urgent lane, whose consumer does the rest
 * (docs/security.md, "Timing: existing account vs unknown e-mail"). A request for a fresh account follows it, and
 * once that one's passcode message exists the consumer has handled the first too: the local queue hands out batches
 * in order, one at a time, and the consumer takes a batch's passcode requests one after another. So "nothing was
 * sent" can be checked in D1.
 */
export async function requestPasscodeSettled(email: string): Promise<void> {
  expect((await postRequest(email)).status).toBe(204);
  const marker = await createUser();
  expect((await postRequest(marker.email)).status).toBe(204);
  await waitFor(async () => {
    const row = await env.DB.prepare("SELECT 1 AS found FROM notification_messages WHERE user_id = ? AND template_id = ?")
      .bind(marker.id, TEMPLATE_IDS.oneTimePasscode)
      .first<{ found: number }>();
    return row ? true : undefined;
  }, 15_000);
}
