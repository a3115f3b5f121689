import type { ClientResponse } from "hono/client";
import { createHeraldClient } from "../client";
import { plainDetail, SAY } from "./ui/plain-words";

/** The `detail` of a 403 that asks the person to confirm it is them before a sensitive change (docs/dashboard.md, "Step-up"). */
const STEP_UP_REQUIRED = "step-up required";
/** The `detail` of a 403 that refuses everything until a person whose role needs a second factor enrols one. */
const SECOND_FACTOR_REQUIRED = "second factor required";

/**
 * Asks the person to confirm it is them (the step-up prompt, step-up.tsx); resolves true once the API accepted it,
 * false when they cancelled. Set by the app while someone is signed in.
 */
let confirmIdentity: (() => Promise<boolean>) | undefined;
/** One prompt for every call refused at once: the calls wait for the same answer. */
let confirming: Promise<boolean> | undefined;

export function setStepUpPrompt(prompt: (() => Promise<boolean>) | undefined): void {
  confirmIdentity = prompt;
}

/** The `detail` of a refusal's JSON body, read from a copy so the answer itself stays unread for the caller. */
async function detailOf(res: Response): Promise<string | undefined> {
  try {
    const body = (await res.clone().json()) as { detail?: unknown };
    return typeof body.detail === "string" ? body.detail : undefined;
  } catch {
    return undefined;
  }
}

/**
 * fetch, for every call of the dashboard: an answer asking for a step-up opens the prompt, and once the person has
 * confirmed, the same request is sent again, once. The refused request changed nothing, so sending it again is
 * safe; a cancelled prompt hands the refusal on, and `call` says it in plain words (docs/dashboard.md, "Step-up").
 */
const confirmingFetch: typeof fetch = async (input, init) => {
  const res = await fetch(input, init);
  if (res.status !== 403 || !confirmIdentity || (await detailOf(res)) !== STEP_UP_REQUIRED) return res;
  confirming ??= confirmIdentity().finally(() => {
    confirming = undefined;
  });
  if (!(await confirming)) return res;
  await res.body?.cancel();
  return fetch(input, init);
};

/**
 * The typed client, for this origin. No token: the browser sends the HttpOnly session cookie itself, and every
 * state-changing call carries this page's `Origin`, which the API requires of cookie callers (docs/dashboard.md#security).
 */
export const api = createHeraldClient({ baseUrl: location.origin, fetch: confirmingFetch });

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
    /** A refusal the whole dashboard reacts to, not only the form that met it (a step-up, a second factor to enrol). */
    readonly refusal?: "step-up" | "second-factor",
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

/**
 * Listeners for an answer that says the person's role needs a second factor first: the app opens the enrolment page.
 */
const factorRequiredListeners = new Set<() => void>();
export function onSecondFactorRequired(listener: () => void): () => void {
  factorRequiredListeners.add(listener);
  return () => factorRequiredListeners.delete(listener);
}

async function problemOf(res: { status: number; json(): Promise<unknown> }): Promise<ApiProblem> {
  try {
    const body = (await res.json()) as { message?: unknown; detail?: unknown; validations?: unknown };
    const validations = Array.isArray(body.validations) ? (body.validations as Validation[]) : [];
    // Still asking for a step-up after confirmingFetch: the person cancelled the prompt, and nothing was changed.
    if (res.status === 403 && body.detail === STEP_UP_REQUIRED) return new ApiProblem(403, SAY.stepUpCancelled, SAY.stepUpAgain, [], "step-up");
    if (res.status === 403 && body.detail === SECOND_FACTOR_REQUIRED) {
      return new ApiProblem(403, SAY.factorRequired, SAY.factorWhere, [], "second-factor");
    }
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
  const res = await answerOf(request, options);
  if (res.status === 204) return undefined as SuccessBody<R>;
  const type = res.headers.get("Content-Type") ?? "";
  return (type.includes("json") ? await res.json() : await res.text()) as SuccessBody<R>;
}

/** Awaits a typed call and returns the answer unread (a file to save), refusals thrown as `call` throws them. */
export async function answerOf<R extends ClientResponse<unknown, number, "json" | "text" | "body">>(
  request: Promise<R>,
  options: { quiet401?: boolean } = {},
): Promise<R> {
  let res: R;
  try {
    res = await request;
  } catch {
    throw new ApiProblem(0, "Herald could not be reached.", "Check the connection and try again.");
  }
  if (!res.ok) {
    const problem = await problemOf(res);
    if (res.status === 401 && !options.quiet401) for (const listener of signedOutListeners) listener();
    if (problem.refusal === "second-factor") for (const listener of factorRequiredListeners) listener();
    throw problem;
  }
  return res;
}
