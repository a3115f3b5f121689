import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import packageList from "@zxcvbn-ts/language-common/dist/passwords.json.mjs";
import { afterEach, describe, expect, it, vi } from "vitest";
import { AuthMessages } from "../../src/auth/messages";
import { commonPasswords } from "../../src/auth/passwords/common-list";
import { checkPasswordPolicy } from "../../src/auth/passwords/policy";
import type { Env } from "../../src/env";
import { ApiError, Messages } from "../../src/http/errors";
import { apiRequest, BASE, call, expectError, fetchApp, json, OWNER } from "../helpers";

// The password policy's common-password list is read from the Worker's static assets, once per isolate, and without
// it no password is accepted (docs/security.md, "Password policy"). This file has a module graph (and a database) of
// its own, and its tests run in order: every refusal first, while nothing has read the list, then the first
// successful read, then what the isolate keeps.

/** An ASSETS binding that cannot give the list, in each way a read can fail, with the calls it got. */
function brokenAssets(answer: () => Promise<Response>): Fetcher & { calls: number } {
  const reader = {
    calls: 0,
    fetch: () => {
      reader.calls++;
      return answer();
    },
    connect: env.ASSETS.connect.bind(env.ASSETS),
  };
  return reader;
}

/** The real binding, counting the reads that reach it. */
function countingAssets(): Fetcher & { calls: number } {
  const reader = {
    calls: 0,
    fetch: (input: RequestInfo | URL, init?: RequestInit) => {
      reader.calls++;
      return env.ASSETS.fetch(input, init);
    },
    connect: env.ASSETS.connect.bind(env.ASSETS),
  };
  return reader;
}

const LIST_URL = `${BASE}/password-policy/common-passwords.json`;
const STRONG = "mellow orbit cactus lantern";

const truncated = async () => {
  const whole = await (await env.ASSETS.fetch(LIST_URL)).text();
  return new Response(whole.slice(0, Math.floor(whole.length / 2)), { headers: { "Content-Type": "application/json" } });
};
const missing = async () => new Response("Not Found", { status: 404 });

const FAILURES: [string, () => Promise<Response>][] = [
  ["the binding answers 404", missing],
  ["the binding throws", () => Promise.reject(new Error("internal error"))],
  ["the file is another asset", () => env.ASSETS.fetch(`${BASE}/sw.js`)],
  ["the file is cut short", truncated],
  ["the file is an empty list", async () => Response.json([])],
  ["the file is not a list of strings", async () => Response.json([1, 2, 3])],
];

async function expectUnavailable(promise: Promise<unknown>) {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(ApiError);
  const { status, message, detail } = error as ApiError;
  expect({ status, message, detail }).toEqual({
    status: 503,
    message: AuthMessages.passwordCheckUnavailable,
    detail: AuthMessages.passwordCheckUnavailableDetail,
  });
}

/** A request to the app with `assets` as its ASSETS binding, checked against the OpenAPI document like every call. */
async function withAssets(assets: Fetcher, method: string, path: string, body: unknown): Promise<Response> {
  const ctx = createExecutionContext();
  const res = await fetchApp(apiRequest(method, path, { body }), { ...env, ASSETS: assets } as Env, ctx);
  await waitOnExecutionContext(ctx);
  return res;
}

describe('docs/security.md, "Password policy": the common-password list, read from static assets', () => {
  const consoleError = vi.spyOn(console, "error");
  afterEach(() => consoleError.mockClear());

  it("without the list, every password long enough to need it is refused with a 503, never accepted", async () => {
    for (const [what, answer] of FAILURES) {
      const assets = brokenAssets(answer);
      // A strong passphrase, which the policy accepts once the list is there.
      await expectUnavailable(checkPasswordPolicy(assets, STRONG));
      await expectUnavailable(checkPasswordPolicy(assets, "password1234"));
      // A failed read is not remembered: each check tries again.
      expect(assets.calls, what).toBe(2);
    }
    // Too short or too long needs no list: those verdicts stand.
    const assets = brokenAssets(missing);
    expect(await checkPasswordPolicy(assets, "short")).toEqual({ valid: false, details: AuthMessages.passwordTooShort(8) });
    expect(await checkPasswordPolicy(assets, "x".repeat(257))).toEqual({ valid: false, details: AuthMessages.passwordTooLong(256) });
    expect(assets.calls).toBe(0);
  });

  it("concurrent first callers share one failed read, which is logged once, without the list's contents", async () => {
    const assets = brokenAssets(missing);
    const checks = Array.from({ length: 5 }, () => checkPasswordPolicy(assets, STRONG));
    for (const check of checks) await expectUnavailable(check);
    expect(assets.calls).toBe(1);
    const lines = consoleError.mock.calls.map((args) => args.join(" ")).filter((line) => line.includes("common-password list"));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain("404");
  });

  it("a route that sets a password answers the 503 in the error shape and changes nothing; the first owner is not made", async () => {
    const assets = brokenAssets(missing);
    const first = await withAssets(assets, "POST", "/users/first", OWNER);
    const body = await expectError(first, 503, AuthMessages.passwordCheckUnavailable);
    expect(body.detail).toBe(AuthMessages.passwordCheckUnavailableDetail);
    expect(JSON.stringify(body)).not.toMatch(/404|password-policy|common-passwords\.json/);
    await expectError(await call("GET", "/users/first"), 404);
    // The passcode reset's new password is checked before anything about the account.
    const reset = await withAssets(assets, "POST", "/users/otp/change-password", {
      email: OWNER.email,
      one_time_passcode: "000000",
      password: STRONG,
    });
    await expectError(reset, 503, AuthMessages.passwordCheckUnavailable);
  });

  it("concurrent first callers share one read of the list, and the request refused before now succeeds", async () => {
    const assets = countingAssets();
    const bootstrap = withAssets(assets, "POST", "/users/first", OWNER);
    const verdicts = await Promise.all(Array.from({ length: 4 }, () => checkPasswordPolicy(assets, STRONG)));
    const first = await bootstrap;
    expect(first.status).toBe(201);
    expect(await json(first)).toHaveProperty("user_id");
    for (const verdict of verdicts) expect(verdict).toEqual({ valid: true, details: "" });
    expect(assets.calls).toBe(1);
  });

  it("after the first read, the isolate keeps the list: no binding is read again", async () => {
    const broken = brokenAssets(missing);
    expect(await checkPasswordPolicy(broken, STRONG)).toEqual({ valid: true, details: "" });
    expect(await checkPasswordPolicy(broken, "password1234")).toEqual({ valid: false, details: AuthMessages.passwordTooCommon });
    expect(await commonPasswords(broken)).toEqual(packageList);
    expect(broken.calls).toBe(0);
  });

  it("is not served to anyone: the Worker's router has no such path", async () => {
    await expectError(await call("GET", LIST_URL), 404, Messages.routeNotFound);
    await expectError(await call("GET", `${BASE}/assets/..%2Fpassword-policy/common-passwords.json`), 404, Messages.routeNotFound);
  });
});
