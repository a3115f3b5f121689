import { DeliveryError } from "./types";

const TIMEOUT_MS = 10_000;

/** Network errors, timeouts, 408, 429 and 5xx are worth retrying; any other non-2xx is a permanent refusal. */
function retryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/** One line of what a receiver said, for a message-log reason: control characters become spaces, at most 200 characters. */
function excerptOf(text: string): string {
  return text
    .replace(/[\u0000-\u001f\u007f-\u009f]+/g, " ")
    .trim()
    .slice(0, 200);
}

export interface JsonPost {
  url: string;
  body: string;
  headers: Headers;
  /** Epoch ms by which the send must be over. */
  deadline: number;
  /** Who answers, as the message log names it: "webhook", "Slack". */
  receiver: string;
  /** What to do about a redirect, after "redirects are not followed, ". */
  redirectAdvice: string;
  /** A reason for a status that means more than its number (a chat service's 404: the webhook was deleted). */
  explain?: (status: number, excerpt: string) => string | undefined;
}

/**
 * POSTs a JSON body and classifies the answer (docs/email.md, "Webhooks"): a 2xx is delivered; network errors, the
 * 10-second timeout, 408, 429 and 5xx are retryable; a redirect and any other status are permanent. Redirects are
 * never followed: fetch would turn the POST into a GET without the body and call it a success. The URL never appears
 * in a reason: a user's target URL is a credential (docs/targets.md).
 */
export async function postJson({ url, body, headers, deadline, receiver, redirectAdvice, explain }: JsonPost): Promise<void> {
  let response: Response;
  try {
    response = await fetch(url, {
      method: "POST",
      headers,
      body,
      redirect: "manual",
      signal: AbortSignal.timeout(Math.max(1, Math.min(TIMEOUT_MS, deadline - Date.now()))),
    });
  } catch (error) {
    const reason = error instanceof Error && error.name === "TimeoutError" ? "timed out" : "could not connect";
    throw new DeliveryError(`${receiver} ${reason}`, true);
  }
  if (response.ok) {
    await response.body?.cancel();
    return;
  }
  if (response.status >= 300 && response.status < 400) {
    await response.body?.cancel();
    const location = response.headers.get("location");
    throw new DeliveryError(
      `${receiver} answered ${response.status} (a redirect${location ? ` to ${location.slice(0, 200)}` : ""}); redirects are not followed, ${redirectAdvice}`,
      false,
    );
  }
  const excerpt = excerptOf(await response.text().catch(() => ""));
  const explained = explain?.(response.status, excerpt);
  throw new DeliveryError(
    explained ?? `${receiver} answered ${response.status}${excerpt ? `: ${excerpt}` : ""}`,
    explained === undefined ? retryableStatus(response.status) : false,
  );
}
