import { and, eq } from "drizzle-orm";
import { getConfig } from "../config/config";
import { database } from "../db/client";
import { notificationMessages, notificationPreferences, notificationTemplates, users, type MessageRow } from "../db/schema";
import type { Env } from "../env";
import type { Background } from "../lib/background";
import { nowIso, uuidv7 } from "../lib/crypto";
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

/** Version of the payload shape (Coder's `types.MessagePayload`). */
const PAYLOAD_VERSION = "1.2";

/**
 * The one way any producer sends a notification (docs/api.md, Notification delivery): one durable message per method — the template's (or
 * deployment's) external method, plus the inbox unless the template is external-only. Disabled templates are
 * recorded as `inhibited`; mandatory ones ignore preferences. Unless the notifier is paused, the inbox copy goes
 * straight to the user's object and the external one onto the queue, after the rows are committed.
 */
export async function enqueueNotification(env: Env, background: Background, request: EnqueueRequest): Promise<MessageRow[]> {
  const config = getConfig(env);
  const db = database(env.DB);
  const [templates, recipients, preferences, paused] = await db.batch([
    db.select().from(notificationTemplates).where(eq(notificationTemplates.id, request.templateId)),
    db.select().from(users).where(eq(users.id, request.userId)),
    db
      .select({ disabled: notificationPreferences.disabled })
      .from(notificationPreferences)
      .where(and(eq(notificationPreferences.userId, request.userId), eq(notificationPreferences.templateId, request.templateId))),
    pausedQuery(db),
  ]);
  const template = templates[0];
  const user = recipients[0];
  if (!template) throw new Error(`unknown notification template ${request.templateId}`);
  if (!user || user.deleted) return [];

  const preference = preferences[0];
  const disabled = !template.mandatory && (preference ? preference.disabled : !template.enabledByDefault);
  const methods = [template.method || config.NOTIFICATIONS_METHOD, ...(template.externalOnly ? [] : ["inbox" as const])];

  const payload: Record<string, unknown> = {
    _version: PAYLOAD_VERSION,
    notification_name: template.name,
    notification_template_id: template.id,
    user_id: user.id,
    user_email: user.email,
    user_name: user.name,
    user_username: user.username,
    actions: [],
    labels: request.labels ?? {},
    data: request.data ?? {},
    targets: request.targets ?? [],
  };
  if (request.secretLabels && Object.keys(request.secretLabels).length > 0) {
    payload.sealed_labels = await seal(config.SECRET_KEY, request.secretLabels);
  }

  const now = nowIso();
  // v7 ids: the inbox and the re-drive order by (created_at, id), so ties within a millisecond keep creation order.
  const notificationId = uuidv7();
  const rows: MessageRow[] = methods.map((method) => ({
    id: uuidv7(),
    notificationId,
    templateId: template.id,
    userId: user.id,
    method,
    status: (disabled ? "inhibited" : method === "smtp" && !config.EMAIL_SMARTHOST ? "permanent_failure" : "pending") satisfies InitialStatus,
    statusReason: disabled
      ? preference
        ? "disabled by the user's preference"
        : "template is disabled by default"
      : // Recorded at once rather than queued to fail: nothing could send it (local development, webhook-only setups).
        method === "smtp" && !config.EMAIL_SMARTHOST
        ? "e-mail delivery is not configured (EMAIL_SMARTHOST)"
        : null,
    payload,
    targets: request.targets ?? [],
    createdBy: request.createdBy,
    attempts: 0,
    nextRetryAfter: null,
    leasedUntil: null,
    createdAt: now,
    updatedAt: now,
    sentAt: null,
  }));
  await db.insert(notificationMessages).values(rows);

  const pending = rows.filter((r) => r.status === "pending");
  if (pending.length > 0 && !isPaused(paused)) {
    const external = pending.filter((r) => r.method !== "inbox");
    if (external.length > 0) background.waitUntil(kickMessages(env, external));
    const labels = { ...(request.labels ?? {}), ...(request.secretLabels ?? {}) };
    for (const row of pending) {
      if (row.method === "inbox") background.waitUntil(deliverInboxNow(env, row, template, user, labels));
    }
  }
  return rows;
}
