import type { InboxNotification } from "../inbox/model";

/**
 * Where the embed's requests go and how they authenticate (docs/embed.md, "Signing in"): with a token, the
 * `Service-Session-Token` header and no cookies; without one, the browser's session cookie (`credentials: "include"`),
 * which Herald only accepts from a same-site page on CORS_ALLOWED_ORIGINS.
 */
export interface Credentials {
  /** Herald's origin (scheme, host, port), never a path. */
  server: string;
  token: string | undefined;
}

/** `GET /notifications/inbox` (docs/openapi.json, ListInboxNotificationsResponse). */
export interface InboxPage {
  notifications: InboxNotification[];
  unread_count: number;
  seq: number;
}

/** `PUT /notifications/inbox/{id}/read-status` and `…/archive-status` (UpdateInboxNotificationReadStatusResponse). */
interface ReadAnswer {
  notification: InboxNotification;
  unread_count: number;
}

/** Herald answered with an error status (401: signed out or the token was refused; 403: scopes or Origin). */
export class HttpError extends Error {
  readonly status: number;
  constructor(status: number) {
    super(`Herald answered ${status}.`);
    this.status = status;
  }
}

async function call(credentials: Credentials, path: string, method = "GET", body?: unknown): Promise<Response> {
  const headers: Record<string, string> = {};
  if (credentials.token !== undefined) headers["Service-Session-Token"] = credentials.token;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(`${credentials.server}/api/v2/notifications/inbox${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    // An explicit token wins over the cookie anyway (docs/api.md, Conventions); omitting cookies keeps the two modes apart.
    credentials: credentials.token === undefined ? "include" : "omit",
    cache: "no-store",
  });
  if (!res.ok) {
    // Only the status is used; a body never read would keep the request open.
    await res.body?.cancel();
    throw new HttpError(res.status);
  }
  return res;
}

/**
 * A page of `limit` notifications (archived and snoozed ones left out, the list's default), newest first, strictly
 * older than `startingBefore` when given, with Markdown content (docs/api.md, Notifications).
 */
export async function listInbox(credentials: Credentials, limit: number, startingBefore?: string): Promise<InboxPage> {
  const older = startingBefore === undefined ? "" : `&starting_before=${encodeURIComponent(startingBefore)}`;
  const page = (await (await call(credentials, `?format=markdown&limit=${limit}${older}`)).json()) as InboxPage;
  if (!Array.isArray(page.notifications) || typeof page.seq !== "number" || typeof page.unread_count !== "number") {
    throw new Error("Unexpected answer from Herald.");
  }
  return page;
}

/** `PUT /notifications/inbox/{id}/archive-status`: the item leaves the list (docs/inbox.md, "Item states"). */
export async function archive(credentials: Credentials, id: string): Promise<ReadAnswer> {
  return (await (await call(credentials, `/${encodeURIComponent(id)}/archive-status`, "PUT", { is_archived: true })).json()) as ReadAnswer;
}

export async function markRead(credentials: Credentials, id: string): Promise<ReadAnswer> {
  return (await (await call(credentials, `/${encodeURIComponent(id)}/read-status`, "PUT", { is_read: true })).json()) as ReadAnswer;
}

/** Answers 204: the new count arrives with the change frame (or is 0 when read again). */
export async function markAllRead(credentials: Credentials): Promise<void> {
  await call(credentials, "/mark-all-as-read", "PUT");
}
