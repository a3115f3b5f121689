import type { ClientResponse } from "hono/client";
import { createHeraldClient } from "../client";
import { plainDetail } from "./ui/plain-words";

/**
 * The typed client, for this origin. No token: the browser sends the HttpOnly session cookie itself, and every
 * state-changing call carries this page's `Origin`, which the API requires of cookie callers (docs/dashboard.md#security).
 */
export const api = createHeraldClient({ baseUrl: location.origin });

/** One entry of an error body's `validations` (docs/api.md, Conventions). */
export interface Validation {
  field: string;
  detail: string;
}

/** A refused call, with the error body's parts: shown to the person as `message`, `detail` and per-field text. */
export class ApiProblem extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly detail?: string,
    readonly validations: Validation[] = [],
  ) {
    super(message);
  }

  /** What a validation said about `field`, in plain words (ui/plain-words.ts), for the form control that holds it. */
  about(field: string): string | undefined {
    const validation = this.validations.find((v) => v.field === field);
    return validation ? plainDetail(validation.field, validation.detail) : undefined;
  }
}

/** What went wrong, as the ApiProblem an alert shows (`call` throws those; anything else is wrapped). */
export function asProblem(error: unknown): ApiProblem {
  return error instanceof ApiProblem ? error : new ApiProblem(0, "Something went wrong.", error instanceof Error ? error.message : undefined);
}

type Success = 200 | 201 | 202 | 204;
/** The body type of the successful answers among the ones a typed call may produce. */
type SuccessBody<R> = R extends ClientResponse<infer Body, infer Status, infer _Format> ? (Status extends Success ? Body : never) : never;

/** Listeners for an answer that says the session is gone (401): the app goes back to the sign-in page. */
const signedOutListeners = new Set<() => void>();
export function onSignedOut(listener: () => void): () => void {
  signedOutListeners.add(listener);
  return () => signedOutListeners.delete(listener);
}

async function problemOf(res: { status: number; json(): Promise<unknown> }): Promise<ApiProblem> {
  try {
    const body = (await res.json()) as { message?: unknown; detail?: unknown; validations?: unknown };
    const validations = Array.isArray(body.validations) ? (body.validations as Validation[]) : [];
    return new ApiProblem(
      res.status,
      typeof body.message === "string" ? body.message : `The server answered ${res.status}.`,
      typeof body.detail === "string" ? body.detail : undefined,
      validations,
    );
  } catch {
    return new ApiProblem(res.status, `The server answered ${res.status}.`);
  }
}

/**
 * Awaits a typed call and returns its body; a refusal is thrown as an ApiProblem. A 401 on a call that needed the
 * session also tells the app that the person is signed out (`quiet401` for the calls that only ask whether they are).
 */
export async function call<R extends ClientResponse<unknown, number, "json" | "text" | "body">>(
  request: Promise<R>,
  options: { quiet401?: boolean } = {},
): Promise<SuccessBody<R>> {
  let res: R;
  try {
    res = await request;
  } catch {
    throw new ApiProblem(0, "Herald could not be reached.", "Check the connection and try again.");
  }
  if (!res.ok) {
    const problem = await problemOf(res);
    if (res.status === 401 && !options.quiet401) for (const listener of signedOutListeners) listener();
    throw problem;
  }
  if (res.status === 204) return undefined as SuccessBody<R>;
  const type = res.headers.get("Content-Type") ?? "";
  return (type.includes("json") ? await res.json() : await res.text()) as SuccessBody<R>;
}
