import { env } from "cloudflare:workers";
import { expect } from "vitest";
import type { InboxDelivery, InboxNotification } from "../../src/inbox/model";
import { BASE, call, send } from "../helpers";

export const TEMPLATE_A = "c425f63e-716a-4bf4-ae24-78348f706c3f";
export const TEMPLATE_B = "39b1e189-c857-4b0c-877a-511144c18516";

export function inbox(userId: string) {
  return env.USER_INBOX.get(env.USER_INBOX.idFromName(userId));
}

let clock = Date.parse("2026-01-01T00:00:00.000Z");

/** Delivers straight to the user's object, as the notification pipeline does. */
export async function deliver(userId: string, overrides: Partial<InboxDelivery> = {}): Promise<InboxDelivery> {
  clock += 1000;
  const delivery: InboxDelivery = {
    id: crypto.randomUUID(),
    userId,
    templateId: TEMPLATE_A,
    templateGroup: "Notification Events",
    targets: [],
    title: "Hello **there**",
    content: "Read [the docs](https://example.com/docs).",
    icon: "",
    actions: [{ label: "Open", url: "https://example.com" }],
    createdAt: new Date(clock).toISOString(),
    ...overrides,
  };
  await inbox(userId).deliver(delivery);
  return delivery;
}

export interface ListBody {
  notifications: InboxNotification[];
  unread_count: number;
}

export async function list(token: string, query = ""): Promise<ListBody> {
  const res = await call("GET", `/notifications/inbox${query}`, { token });
  expect(res.status).toBe(200);
  return (await res.json()) as ListBody;
}

/** A watch socket with a queue of received frames. */
export interface Watcher {
  ws: WebSocket;
  protocol: string | null;
  next(timeoutMs?: number): Promise<Record<string, unknown>>;
  /** Resolves true when no frame arrives within the window. */
  quiet(windowMs?: number): Promise<boolean>;
}

export async function watch(query: string, headers: Record<string, string>): Promise<Watcher> {
  const res = await send(
    new Request(`${BASE}/api/v2/notifications/inbox/watch${query}`, { headers: { Upgrade: "websocket", ...headers } }),
  );
  expect(res.status).toBe(101);
  const ws = res.webSocket;
  if (!ws) throw new Error("no socket");
  ws.accept();
  const frames: Record<string, unknown>[] = [];
  const waiters: ((frame: Record<string, unknown>) => void)[] = [];
  ws.addEventListener("message", (event) => {
    if (event.data === "pong") return; // the keep-alive answer, not a frame
    const frame = JSON.parse(String(event.data)) as Record<string, unknown>;
    const waiter = waiters.shift();
    if (waiter) waiter(frame);
    else frames.push(frame);
  });
  return {
    ws,
    protocol: res.headers.get("Sec-WebSocket-Protocol"),
    next(timeoutMs = 2000) {
      const queued = frames.shift();
      if (queued) return Promise.resolve(queued);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error("no frame arrived")), timeoutMs);
        waiters.push((frame) => {
          clearTimeout(timer);
          resolve(frame);
        });
      });
    },
    async quiet(windowMs = 150) {
      if (frames.length > 0) return false;
      await new Promise((r) => setTimeout(r, windowMs));
      return frames.length === 0;
    },
  };
}
