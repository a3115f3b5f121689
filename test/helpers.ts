import { exports } from "cloudflare:workers";
import { expect } from "vitest";
import { app } from "../src/app";
import type { Env } from "../src/env";
import { expectConformant } from "./fixtures/conformance";

export const BASE = "http://localhost";
export const OWNER = { email: "owner@herald.test", username: "owner", password: "correct-horse-battery-staple-42" };

export interface CallOptions {
  token?: string;
  body?: unknown;
  /** Raw body text, sent as-is (for malformed JSON). */
  raw?: string;
  headers?: Record<string, string>;
}

/** Calls the Worker exactly as a client would, through its fetch handler. */
export async function call(method: string, path: string, options: CallOptions = {}): Promise<Response> {
  return send(apiRequest(method, path, options));
}

/** The request `call` sends: JSON body, credential header, a distinct client address. */
export function apiRequest(method: string, path: string, options: CallOptions = {}): Request {
  const headers = new Headers(options.headers);
  if (options.token) headers.set("Service-Session-Token", options.token);
  let body: string | undefined;
  if (options.raw !== undefined) body = options.raw;
  else if (options.body !== undefined) body = JSON.stringify(options.body);
  if (body !== undefined && !headers.has("Content-Type")) headers.set("Content-Type", "application/json");
  // A distinct client address per call keeps the per-IP sign-in limit out of tests that are not about it.
  if (!headers.has("CF-Connecting-IP")) headers.set("CF-Connecting-IP", `10.0.${Math.floor(Math.random() * 255)}.${Math.floor(Math.random() * 255)}`);
  const url = path.startsWith("http") ? path : `${BASE}/api/v2${path}`;
  return new Request(url, { method, headers, body });
}

/**
 * Sends a request to the Worker through its fetch handler, and checks the answer against the OpenAPI document
 * (test/fixtures/conformance.ts): every test that talks to the Worker goes through here or `fetchApp`.
 */
export async function send(request: Request): Promise<Response> {
  const { method, url } = request;
  const response = await exports.default.fetch(request);
  await expectConformant(method, url, response);
  return response;
}

/** `app.fetch` with an env of the test's choosing (another configuration), checked like `send`. */
export async function fetchApp(request: Request, environment: Env, ctx: ExecutionContext): Promise<Response> {
  const { method, url } = request;
  const response = await app.fetch(request, environment, ctx);
  await expectConformant(method, url, response);
  return response;
}

export async function json<T = Record<string, unknown>>(response: Response): Promise<T> {
  return (await response.json()) as T;
}

/** Asserts the error shape of docs/api.md ("Conventions") and returns the body. */
export async function expectError(response: Response, status: number, message?: string) {
  expect(response.status).toBe(status);
  expect(response.headers.get("Content-Type")).toMatch(/application\/json/);
  const body = await json<{ message: string; detail?: string; validations?: { field: string; detail: string }[] }>(response);
  expect(typeof body.message).toBe("string");
  if (message !== undefined) expect(body.message).toBe(message);
  if ("detail" in body) expect(body.detail).not.toBe("");
  if ("validations" in body) expect(body.validations?.length).toBeGreaterThan(0);
  return body;
}

export async function login(email: string, password: string): Promise<string> {
  const res = await call("POST", "/users/login", { body: { email, password } });
  expect(res.status).toBe(201);
  return (await json<{ session_token: string }>(res)).session_token;
}

let ownerCache: { token: string; id: string } | undefined;

/** The deployment's first owner, bootstrapped once per storage. */
export async function owner(): Promise<{ token: string; id: string }> {
  if (ownerCache) return ownerCache;
  const first = await call("GET", "/users/first");
  if (first.status === 404) {
    const created = await call("POST", "/users/first", { body: OWNER });
    expect(created.status).toBe(201);
  }
  const token = await login(OWNER.email, OWNER.password);
  const me = await json<{ id: string }>(await call("GET", "/users/me", { token }));
  ownerCache = { token, id: me.id };
  return ownerCache;
}

let counter = 0;

export interface TestUser {
  id: string;
  email: string;
  username: string;
  password: string;
  token: string;
}

/** Creates a user (as the owner), optionally with site roles, and signs it in. */
export async function createUser(options: { roles?: string[]; service?: boolean } = {}): Promise<TestUser> {
  const admin = await owner();
  counter += 1;
  const username = `user-${counter}-${crypto.randomUUID().slice(0, 8)}`;
  const email = `${username}@herald.test`;
  const password = `Tr0ubadour-${crypto.randomUUID()}`;
  if (options.service) {
    const res = await call("POST", "/users", { token: admin.token, body: { username, service_account: true } });
    expect(res.status).toBe(201);
    const { id } = await json<{ id: string }>(res);
    const tokenRes = await call("POST", `/users/${id}/keys/tokens`, { token: admin.token, body: { token_name: "svc" } });
    expect(tokenRes.status).toBe(201);
    return { id, email: "", username, password: "", token: (await json<{ key: string }>(tokenRes)).key };
  }
  const res = await call("POST", "/users", { token: admin.token, body: { email, username, password } });
  expect(res.status).toBe(201);
  const { id } = await json<{ id: string }>(res);
  if (options.roles?.length) {
    const roles = await call("PUT", `/users/${id}/roles`, { token: admin.token, body: { roles: options.roles } });
    expect(roles.status).toBe(200);
  }
  return { id, email, username, password, token: await login(email, password) };
}
