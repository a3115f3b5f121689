import { and, eq, getTableColumns } from "drizzle-orm";
import { applySwitch, isPersonal, plannedCopies } from "../channels/model";
import { destinationQueries, destinationsByUser } from "../channels/store";
import { type Config, getConfig } from "../config/config";
import { type Database, database } from "../db/client";
import {
  type DispatchMethod,
  type MessageRow,
  notificationMessages,
  notificationPreferences,
  notificationTemplates,
  type TemplateRow,
  type UserRow,
  users,
} from "../db/schema";
import { inSlices } from "../db/slices";
import type { Env } from "../env";
import type { Background } from "../lib/background";
import { nowIso, uuidv7 } from "../lib/crypto";
import { holdForDigest, holdForQuietHours } from "../schedule/hold";
import { scheduleOf, scheduleQuery } from "../schedule/store";
import { deliverInboxNow, kickMessages } from "./dispatch";
import { seal } from "./sealed";
import { isPaused, pausedQuery } from "./settings";
import type { InitialStatus } from "./status";

export interface EnqueueRequest {
  userId: string;
  templateId: string;
  labels?: Record<string, string>;
  /** Labels that must never be stored in clear (they are sealed in the log and opened only to send). */
  secretLabels?: Record<string, string>;
  data?: Record<string, unknown>;
  targets?: string[];
  /** Who caused it: a user id, or a subsystem name such as "system". */
  createdBy: string;
}

/** Message-log rows per INSERT: each binds one parameter per column, within D1's 100 (src/db/slices.ts). */
const ROWS_PER_INSERT = Math.max(1, Math.floor(90 / Object.keys(getTableColumns(notificationMessages)).length));

/** Version of the payload shape (Coder's `types.MessagePayload`). */
const PAYLOAD_VERSION = "1.2";

/** The webhook `payload` shape of docs/api.md (Notification delivery), as the message log stores it. */
export function messagePayload(
  template: Pick<TemplateRow, "id" | "name">,
  user: Pick<UserRow, "id" | "email" | "name" | "username">,
  content: Pick<EnqueueRequest, "labels" | "data" | "targets">,
): Record<string, unknown> {
  return {
    _version: PAYLOAD_VERSION,
    notification_name: template.name,
    notification_template_id: template.id,
    user_id: user.id,
    user_email: user.email,
    user_name: user.name,
    user_username: user.username,
    actions: [],
    labels: content.labels ?? {},
    data: content.data ?? {},
    targets: content.targets ?? [],
  };
}

/**
 * How a message starts (docs/api.md, Notification delivery): `inhibited` when the user's preference (or the
 * template's default) turned it off; a `permanent_failure` at once when nothing could ever send it (an e-mail with no
 * SMTP smarthost: local development, webhook-only setups); otherwise `pending`.
 */
export function initialState(
  config: Config,
  method: DispatchMethod,
  disabledBy: "preference" | "default" | undefined,
): { status: InitialStatus; statusReason: string | null } {
  if (disabledBy === "preference") return { status: "inhibited", statusReason: "disabled by the user's preference" };
  if (disabledBy === "default") return { status: "inhibited", statusReason: "template is disabled by default" };
  if (method === "smtp" && !config.EMAIL_SMARTHOST) {
    return { status: "permanent_failure", statusReason: "e-mail delivery is not configured (EMAIL_SMARTHOST)" };
  }
  return { status: "pending", statusReason: null };
}

/**
 * Read-aware e-mail (docs/broadcasts.md) applies to the copies meant for the person (e-mail, push, their own targets)
 * of a notification that also has an inbox copy, when a delay is set; the deployment's webhook feeds machines and
 * goes out at once.
 */
export function isReadAware(method: DispatchMethod, delayMs: number, hasInboxCopy: boolean): boolean {
  return isPersonal(method) && delayMs > 0 && hasInboxCopy;
}

/**
 * The one way any producer sends a notification (docs/api.md, Notification delivery): one durable message per method — the template's (or
 * deployment's) external method, plus the inbox unless the template is external-only. Disabled templates are
 * recorded as `inhibited`; mandatory ones ignore preferences. Unless the notifier is paused, the inbox copy goes
 * straight to the user's object and the external one onto the queue, after the rows are committed.
 *
 * `db` is a request's own D1 session when the client may read the message log back (docs/consistency.md): its answer's
 * bookmark then covers these rows. Producers off the request path use the binding itself. `admitted` is a check that
 * must pass before anything is stored (a caller's rate limit): it runs alongside the reads, and its refusal is thrown
 * before any write.
 */
export async function enqueueNotification(
  env: Env,
  background: Background,
  request: EnqueueRequest,
  db: Database = database(env.DB),
  admitted: Promise<void> = Promise.resolve(),
): Promise<MessageRow[]> {
  const config = getConfig(env);
  const reads = db.batch([
    db.select().from(notificationTemplates).where(eq(notificationTemplates.id, request.templateId)),
    db.select().from(users).where(eq(users.id, request.userId)),
    db
      .select({ disabled: notificationPreferences.disabled })
      .from(notificationPreferences)
      .where(and(eq(notificationPreferences.userId, request.userId), eq(notificationPreferences.templateId, request.templateId))),
    pausedQuery(db),
    scheduleQuery(db, request.userId),
    ...destinationQueries(db, request.userId, request.templateId),
  ]);
  const [[templates, recipients, preferences, paused, schedules, subscriptions, targets, switchRows]] = await Promise.all([reads, admitted]);
  const template = templates[0];
  const user = recipients[0];
  if (!template) throw new Error(`unknown notification template ${request.templateId}`);
  if (!user || user.deleted) return [];

  const preference = preferences[0];
  const disabled = !template.mandatory && (preference ? preference.disabled : !template.enabledByDefault);
  const methods = [template.method || config.NOTIFICATIONS_METHOD, ...(template.externalOnly ? [] : ["inbox" as const])];

  const payload = messagePayload(template, user, request);
  if (request.secretLabels && Object.keys(request.secretLabels).length > 0) {
    payload.sealed_labels = await seal(config.SECRET_KEY, request.secretLabels);
  }

  const at = Date.now();
  const now = nowIso(at);
  // v7 ids: the inbox and the re-drive order by (created_at, id), so ties within a millisecond keep creation order.
  const notificationId = uuidv7();
  const schedule = scheduleOf(schedules[0]);
  const { destinations, switches } = destinationsByUser(subscriptions, targets, switchRows)(user.id);
  const copies = plannedCopies(methods, destinations, template, disabled);
  const rows: MessageRow[] = copies.map(({ method, destination }) => {
    const readAware = isReadAware(method, template.emailWhenUnreadAfterMs, !template.externalOnly);
    const dueAt = readAware ? at + template.emailWhenUnreadAfterMs : at;
    const initial = applySwitch(
      initialState(config, method, disabled ? (preference ? "preference" : "default") : undefined),
      switches,
      { method, destination },
      template.mandatory,
    );
    return {
      id: uuidv7(),
      notificationId,
      templateId: template.id,
      userId: user.id,
      method,
      destination,
      ...initial,
      payload,
      targets: request.targets ?? [],
      createdBy: request.createdBy,
      attempts: 0,
      nextRetryAfter: readAware ? nowIso(dueAt) : null,
      leasedUntil: null,
      createdAt: now,
      updatedAt: now,
      sentAt: null,
      sendIfUnread: readAware,
    };
  });
  holdForQuietHours(rows, template, schedule, at);
  if (schedule.digest.kind !== "off" && !template.mandatory) await holdForDigest(env, rows, schedule, user, at);
  // One statement per slice of rows, in one batch: D1 binds at most 100 parameters per statement, and a user with a
  // few targets and browsers has more copies than fit in one.
  const [first, ...more] = inSlices(rows, ROWS_PER_INSERT).map((slice) => db.insert(notificationMessages).values(slice));
  if (first) await db.batch([first, ...more]);

  const pending = rows.filter((r) => r.status === "pending");
  if (pending.length > 0 && !isPaused(paused)) {
    const external = pending.filter((r) => r.method !== "inbox");
    if (external.length > 0)
      background.waitUntil(
        kickMessages(
          env,
          external.map((row) => ({ ...row, mandatory: template.mandatory })),
        ),
      );
    const labels = { ...(request.labels ?? {}), ...(request.secretLabels ?? {}) };
    for (const row of pending) {
      if (row.method === "inbox") background.waitUntil(deliverInboxNow(env, row, template, user, labels));
    }
  }
  return rows;
}
