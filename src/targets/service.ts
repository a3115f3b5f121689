import { and, desc, eq, inArray, isNull, lt, sql } from "drizzle-orm";
import type { Context } from "hono";
import type * as z from "zod";
import { auditInsert, auditInsertWhere } from "../audit/log";
import { targetChannel } from "../channels/model";
import type { Config } from "../config/config";
import type { Database } from "../db/client";
import { insertWhere } from "../db/insert-where";
import {
  channelPreferences,
  type MessageRow,
  type NotificationTargetRow,
  notificationMessages,
  notificationTargets,
  type UserRow,
} from "../db/schema";
import { badRequest, conflict, notFound, validationFailed } from "../http/errors";
import type { AppEnv } from "../http/types";
import { nowIso, uuidv7 } from "../lib/crypto";
import { kickMessages } from "../notifications/dispatch";
import { checkOutboundUrl } from "../outbound/allow-list";
import { noticeChannelAdded } from "../security/notices";
import { TargetMessages } from "./messages";
import { type CreatedNotificationTarget, type createTargetBody, type NotificationTarget, TARGETS_MAX_PER_USER } from "./schemas";
import { codeHash, codeMatches, newSigningSecret, newVerificationCode, sealSigningSecret, sealUrl } from "./secrets";
import { verificationMessage } from "./verification";

/** Wrong codes a target takes; the fifth removes it (docs/targets.md, "Verification"). */
export const MAX_CODE_TRIES = 5;

/** The target's channel in channel preferences (docs/channels.md, "Channel preferences"). */

/**
 * The public shape of a target: its URL's origin only, never the URL or a secret. `delivery` is the verification
 * message's row, shown while the target is unverified so its owner sees a retry (docs/targets.md, "Verification").
 */
function targetJson(row: NotificationTargetRow, delivery: MessageRow | undefined): z.input<typeof NotificationTarget> {
  const verified = row.verifiedAt !== null;
  return {
    id: row.id,
    kind: row.kind,
    name: row.name,
    url_origin: row.urlOrigin,
    verified,
    created_at: row.createdAt,
    code_delivery:
      verified || delivery === undefined
        ? null
        : {
            status: delivery.status,
            status_reason: delivery.statusReason ?? "",
            attempts: delivery.attempts,
            next_retry_after: delivery.nextRetryAfter,
          },
  };
}

/** The verification messages of these targets (each has its target's id), for `targetJson`. */
async function deliveriesOf(db: Database, targets: readonly NotificationTargetRow[]): Promise<Map<string, MessageRow>> {
  const unverified = targets.filter((t) => t.verifiedAt === null).map((t) => t.id);
  if (unverified.length === 0) return new Map();
  const rows = await db.select().from(notificationMessages).where(inArray(notificationMessages.id, unverified));
  return new Map(rows.map((m) => [m.id, m]));
}

/** A user's targets, newest first. */
export async function listTargets(db: Database, userId: string): Promise<z.input<typeof NotificationTarget>[]> {
  const rows = await db
    .select()
    .from(notificationTargets)
    .where(eq(notificationTargets.userId, userId))
    .orderBy(desc(notificationTargets.createdAt), desc(notificationTargets.id));
  const deliveries = await deliveriesOf(db, rows);
  return rows.map((row) => targetJson(row, deliveries.get(row.id)));
}

/**
 * The URL a new target may post to (docs/targets.md, "Outbound safety"), as the URL parser writes it; a refusal is a
 * validation on `url`, like every other bad field.
 */
export function allowedUrl(config: Config, body: z.infer<typeof createTargetBody>): URL {
  const checked = checkOutboundUrl(body.kind, body.url, config.OUTBOUND_ALLOWED_ORIGINS);
  if (!checked.ok) throw validationFailed([{ field: "url", detail: `The URL ${checked.reason}.` }]);
  return checked.url;
}

/**
 * Adds a target and its verification message in one batch (docs/targets.md), `url` being the one `allowedUrl`
 * accepted. The cap is counted by the insert itself, so two requests at once cannot both take the last place. Once
 * committed, the message goes onto the queue like any other, and is retried like any other if the target is
 * briefly down.
 */
export async function createTarget(
  c: Context<AppEnv>,
  db: Database,
  user: UserRow,
  body: z.infer<typeof createTargetBody>,
  url: URL,
): Promise<z.input<typeof CreatedNotificationTarget>> {
  const config = c.get("config");
  const refuseFull = () => badRequest(TargetMessages.tooMany, { detail: TargetMessages.tooManyDetail(TARGETS_MAX_PER_USER) });
  const [held] = await db.select({ n: sql<number>`count(*)` }).from(notificationTargets).where(eq(notificationTargets.userId, user.id));
  if ((held?.n ?? 0) >= TARGETS_MAX_PER_USER) throw refuseFull();

  const id = uuidv7();
  const now = nowIso();
  const code = newVerificationCode();
  const secret = body.kind === "webhook" ? newSigningSecret() : undefined;
  const row: NotificationTargetRow = {
    id,
    userId: user.id,
    kind: body.kind,
    name: body.name,
    urlSealed: await sealUrl(config.SECRET_KEY, id, url.href),
    urlOrigin: url.origin,
    secretSealed: secret === undefined ? null : await sealSigningSecret(config.SECRET_KEY, id, secret),
    codeHash: await codeHash(config.SECRET_KEY, id, code),
    failedAttempts: 0,
    verifiedAt: null,
    createdAt: now,
  };
  const message = await verificationMessage(config, row, user, code, now);
  const created = sql`EXISTS (SELECT 1 FROM ${notificationTargets} WHERE ${notificationTargets.id} = ${id})`;
  const [inserted] = await db.batch([
    insertWhere(
      db,
      notificationTargets,
      row,
      sql`(SELECT count(*) FROM ${notificationTargets} WHERE ${notificationTargets.userId} = ${user.id}) < ${TARGETS_MAX_PER_USER}`,
    ).returning({ id: notificationTargets.id }),
    insertWhere(db, notificationMessages, message, created),
    auditInsertWhere(
      db,
      c,
      {
        action: "create",
        resourceType: "notification_target",
        resourceId: id,
        diff: { owner: user.id, kind: row.kind, name: row.name, url_origin: row.urlOrigin },
      },
      created,
    ),
  ]);
  if (inserted.length === 0) throw refuseFull();
  c.executionCtx.waitUntil(kickMessages(c.env, [{ ...message, mandatory: true }]));
  // Told at once, not at verification: whoever added the target also reads its code, so verifying it proves nothing.
  noticeChannelAdded(c, user.id, { kind: row.kind, name: row.name, origin: row.urlOrigin });
  return { ...targetJson(row, message), ...(secret === undefined ? {} : { secret }) };
}

/** A user's target by id, or 404: another user's target is as unknown as one that never was. */
async function findTarget(db: Database, userId: string, id: string): Promise<NotificationTargetRow> {
  const [row] = await db
    .select()
    .from(notificationTargets)
    .where(and(eq(notificationTargets.id, id), eq(notificationTargets.userId, userId)))
    .limit(1);
  if (!row) throw notFound();
  return row;
}

/** Removes a target and its channel switches; copies still queued for it fail as "the target was removed". */
export async function removeTarget(c: Context<AppEnv>, db: Database, user: UserRow, id: string): Promise<void> {
  const target = await findTarget(db, user.id, id);
  await db.batch([
    db.delete(notificationTargets).where(eq(notificationTargets.id, target.id)),
    db.delete(channelPreferences).where(and(eq(channelPreferences.userId, user.id), eq(channelPreferences.channel, targetChannel(target.id)))),
    auditInsert(db, c, {
      action: "delete",
      resourceType: "notification_target",
      resourceId: target.id,
      diff: { owner: user.id, kind: target.kind, name: target.name },
    }),
  ]);
}

/**
 * Checks a verification code (docs/targets.md, "Verification"). The right one verifies the target; a wrong one is
 * counted, and the fifth removes the target, in the same batch that counts it. Every outcome is audited with the
 * change it records.
 */
export async function verifyTarget(
  c: Context<AppEnv>,
  db: Database,
  user: UserRow,
  id: string,
  code: string,
): Promise<z.input<typeof NotificationTarget>> {
  const secretKey = c.get("config").SECRET_KEY;
  const target = await findTarget(db, user.id, id);
  if (target.verifiedAt !== null) throw conflict(TargetMessages.alreadyVerified);
  const which = eq(notificationTargets.id, target.id);
  const diff = { owner: user.id, kind: target.kind, name: target.name };

  if (target.codeHash !== null && (await codeMatches(secretKey, target.id, code, target.codeHash))) {
    const now = nowIso();
    const [verified] = await db.batch([
      db
        .update(notificationTargets)
        .set({ verifiedAt: now, codeHash: null })
        .where(and(which, isNull(notificationTargets.verifiedAt), lt(notificationTargets.failedAttempts, MAX_CODE_TRIES)))
        .returning(),
      auditInsertWhere(
        db,
        c,
        { action: "verify", resourceType: "notification_target", resourceId: target.id, diff },
        sql`EXISTS (SELECT 1 FROM ${notificationTargets} WHERE ${which} AND ${notificationTargets.verifiedAt} = ${now})`,
      ),
    ]);
    const row = verified[0];
    if (row) return targetJson(row, undefined);
    throw await overtaken(db, user.id, id);
  }

  const gone = sql`(SELECT ${notificationTargets.failedAttempts} FROM ${notificationTargets} WHERE ${which}) >= ${MAX_CODE_TRIES}`;
  const [counted] = await db.batch([
    db
      .update(notificationTargets)
      .set({ failedAttempts: sql`${notificationTargets.failedAttempts} + 1` })
      .where(and(which, isNull(notificationTargets.verifiedAt)))
      .returning({ failedAttempts: notificationTargets.failedAttempts }),
    auditInsertWhere(
      db,
      c,
      { action: "verify_failed", resourceType: "notification_target", resourceId: target.id, diff, statusCode: 400 },
      sql`EXISTS (SELECT 1 FROM ${notificationTargets} WHERE ${which} AND ${notificationTargets.verifiedAt} IS NULL)`,
    ),
    // The wrong code that reaches the limit removes the target: its removal is recorded, then done.
    auditInsertWhere(
      db,
      c,
      { action: "delete", resourceType: "notification_target", resourceId: target.id, diff: { ...diff, reason: "too many incorrect codes" } },
      sql`(SELECT ${notificationTargets.failedAttempts} FROM ${notificationTargets} WHERE ${which}) = ${MAX_CODE_TRIES}`,
    ),
    db.delete(channelPreferences).where(and(eq(channelPreferences.userId, user.id), eq(channelPreferences.channel, targetChannel(target.id)), gone)),
    db.delete(notificationTargets).where(and(which, gone)),
  ]);
  const failed = counted[0]?.failedAttempts;
  if (failed === undefined) throw await overtaken(db, user.id, id);
  const event = "authentication_failed" as const;
  if (failed >= MAX_CODE_TRIES) throw badRequest(TargetMessages.removedAfterTries, { detail: TargetMessages.removedDetail, event });
  const left = MAX_CODE_TRIES - failed;
  throw badRequest(TargetMessages.incorrectCode, {
    detail: TargetMessages.triesLeft(left),
    validations: [{ field: "code", detail: TargetMessages.incorrectCode }],
    event,
  });
}

/** The answer for a code whose target another request verified or removed meanwhile: as if this one had come second. */
async function overtaken(db: Database, userId: string, id: string) {
  const [row] = await db
    .select({ verifiedAt: notificationTargets.verifiedAt })
    .from(notificationTargets)
    .where(and(eq(notificationTargets.id, id), eq(notificationTargets.userId, userId)))
    .limit(1);
  return row?.verifiedAt ? conflict(TargetMessages.alreadyVerified) : notFound();
}
