import { afterEach, describe, expect, it } from "vitest";
import { freePort, type RunningHerald, startHerald } from "./herald";

// npm start on another port (README, Two commands): links in notifications follow PORT unless ACCESS_URL is set.

let herald: RunningHerald | undefined;

afterEach(async () => {
  await herald?.stop();
  herald = undefined;
});

async function testNotificationLink(url: string): Promise<string> {
  const api = (method: string, route: string, body?: unknown, token?: string) =>
    fetch(`${url}/api/v2${route}`, {
      method,
      headers: { "content-type": "application/json", ...(token ? { "Service-Session-Token": token } : {}) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const owner = { email: "owner@local.test", username: "owner", password: "lantern-orchard-river-93" };
  expect((await api("POST", "/users/first", owner)).status).toBe(201);
  const { session_token: token } = (await (await api("POST", "/users/login", { email: owner.email, password: owner.password })).json()) as {
    session_token: string;
  };
  expect((await api("POST", "/notifications/test", undefined, token)).status).toBe(200);
  for (let i = 0; i < 100; i++) {
    const { notifications } = (await (await api("GET", "/notifications/inbox", undefined, token)).json()) as {
      notifications: { actions: { url: string }[] }[];
    };
    const link = notifications[0]?.actions[0]?.url;
    if (link) return link;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("the test notification did not arrive");
}

describe("ACCESS_URL locally (README, Two commands)", () => {
  it("follows PORT when it is not set", async () => {
    const port = await freePort();
    herald = await startHerald(port, {}, { unset: ["ACCESS_URL"] });
    expect(await testNotificationLink(herald.url)).toBe(`http://localhost:${port}/deployment/notifications?tab=settings`);
  });

  it("is left alone when it is set explicitly", async () => {
    const port = await freePort();
    herald = await startHerald(port, { ACCESS_URL: "https://herald.example.com" });
    expect(await testNotificationLink(herald.url)).toBe("https://herald.example.com/deployment/notifications?tab=settings");
  });
});

describe('a server whose starter is gone (docs/deployment.md, "Running locally")', () => {
  it("stops when the process that started it is killed, so nothing is left holding its port", async () => {
    const port = await freePort();
    // A starter that brings Herald up exactly as the suites do, then dies without stopping it: a test run killed midway.
    const starter = `
      import { startLocalHerald } from ${JSON.stringify(new URL("../../scripts/local-herald.mjs", import.meta.url).href)};
      await startLocalHerald({ port: ${port}, settings: { SECRET_KEY: "${"k".repeat(48)}" } });
      process.kill(process.pid, "SIGKILL");
    `;
    const { spawn } = await import("node:child_process");
    const child = spawn(process.execPath, ["--input-type=module", "-e", starter], { stdio: "ignore" });
    await new Promise((resolve) => child.once("exit", resolve));
    expect(child.signalCode).toBe("SIGKILL");
    // Herald answered before its starter died; within a few seconds nothing answers there any more.
    let answering = true;
    for (let i = 0; i < 100 && answering; i++) {
      answering = await fetch(`http://localhost:${port}/healthz`).then(
        async (res) => {
          await res.arrayBuffer();
          return true;
        },
        () => false,
      );
      if (answering) await new Promise((r) => setTimeout(r, 100));
    }
    expect(answering).toBe(false);
  });
});
