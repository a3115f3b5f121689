// Workerd-side helpers for the target stand-ins (test/peers/targets.ts) and for targets made through the API. The
// stand-ins are shared by every test file of a run, so each test posts to paths of its own (`standInPath`).
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import type { TargetKind } from "../../src/db/schema";
import { call, json } from "../helpers";
import { waitFor } from "../peers";
import type { ScriptedAnswer, TargetDelivery } from "../peers/targets";

export type { TargetDelivery };

const token = () => crypto.randomUUID().replace(/-/g, "");

/** A fresh path on the stand-in of `kind`, shaped like the service's own URLs. */
export function standInPath(kind: TargetKind): string {
  switch (kind) {
    case "slack":
      return `/slack/T${token().slice(0, 9)}/B${token().slice(0, 9)}/${token()}`;
    case "teams":
      return `/teams/workflows/${token()}/triggers/manual/paths/invoke`;
    case "discord":
      return `/api/webhooks/${Date.now()}${Math.floor(Math.random() * 1000)}/${token()}`;
    case "webhook":
      return `/webhook/${token()}`;
  }
}

export const standInUrl = (path: string) => `${env.TARGETS_URL}${path}`;

async function control(path: string, body: unknown): Promise<Response> {
  const res = await fetch(`${env.TARGETS_URL}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`stand-in control ${path} failed: ${res.status} ${await res.text()}`);
  return res;
}

/** Queues the stand-in's answers to the next POSTs to `path`; afterwards it answers as the service does. */
export async function scriptStandIn(path: string, answers: ScriptedAnswer[]): Promise<void> {
  await (await control("/control/script", { path, answers })).body?.cancel();
}

/** What the stand-in took at `path`, oldest first; with `secret`, each webhook's signature checked by `standardwebhooks`. */
export async function receivedAt(path: string, secret?: string): Promise<TargetDelivery[]> {
  return (await control("/control/received", { path, secret })).json<TargetDelivery[]>();
}

/** Waits until `path` has taken `count` posts, and returns them. */
export function waitForDeliveries(path: string, count = 1, secret?: string): Promise<TargetDelivery[]> {
  return waitFor(async () => {
    const deliveries = await receivedAt(path, secret);
    return deliveries.length >= count ? deliveries : undefined;
  }, 20_000);
}

/** The 6-digit code a verification message carries, wherever its service puts it. */
export function codeIn(delivery: TargetDelivery): string {
  const body = JSON.parse(delivery.body) as Record<string, unknown>;
  const code = delivery.kind === "webhook" ? String((body.payload as { code?: unknown }).code) : /\b(\d{6})\b/.exec(delivery.body)?.[1];
  expect(code, delivery.body).toMatch(/^\d{6}$/);
  return code ?? "";
}

/** The code of the first verification message `path` receives. */
export async function codeSentTo(path: string): Promise<string> {
  const [first] = await waitForDeliveries(path);
  if (!first) throw new Error(`nothing arrived at ${path}`);
  return codeIn(first);
}

export interface CreatedTarget {
  id: string;
  kind: TargetKind;
  name: string;
  url_origin: string;
  verified: boolean;
  created_at: string;
  secret?: string;
  code_delivery: { status: string; status_reason: string; attempts: number; next_retry_after: string | null } | null;
}

/** Adds a target pointing at a fresh stand-in path, through the API; returns it with its path. */
export async function addTarget(userToken: string, kind: TargetKind, name = `${kind} target`): Promise<{ target: CreatedTarget; path: string }> {
  const path = standInPath(kind);
  const res = await call("POST", "/users/me/notification-targets", { token: userToken, body: { kind, url: standInUrl(path), name } });
  expect(res.status, await res.clone().text()).toBe(201);
  return { target: await json<CreatedTarget>(res), path };
}

/** Adds a target and enters the code its stand-in received: a verified target, made the way a person makes one. */
export async function addVerifiedTarget(userToken: string, kind: TargetKind): Promise<{ target: CreatedTarget; path: string }> {
  const { target, path } = await addTarget(userToken, kind);
  const res = await call("POST", `/users/me/notification-targets/${target.id}/verify`, { token: userToken, body: { code: await codeSentTo(path) } });
  expect(res.status, await res.clone().text()).toBe(200);
  return { target: { ...target, verified: true }, path };
}
