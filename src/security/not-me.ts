import { eq, lt } from "drizzle-orm";
import type { Context } from "hono";
import { auditInsert } from "../audit/log";
import { commitAccountChanges, reportCompromise } from "../auth/account-changes";
import { requestPasscode } from "../auth/password-reset";
import { type Database, database } from "../db/client";
import { type ApiKeyRow, notMeUses, users } from "../db/schema";
import type { AppEnv } from "../http/types";
import { nowIso } from "../lib/crypto";
import { enqueueNotification } from "../notifications/enqueue";
import { TEMPLATE_IDS } from "../notifications/templates";
import { liveUsersWithRoles } from "../users/service";
import { requestOrigin } from "./device";
import { NOT_ME_LIFETIME_MS, type NotMeClaims } from "./not-me-token";
import { describeDevice, describePlace, formatWhen, type NoticeEvent, SECURITY_EVENTS } from "./notices";

export interface NotMeOutcome {
  revoked_sessions: number;
  revoked_tokens: number;
}

/**
 * "This wasn't me" (docs/security.md): in one transaction every session and API token of the account ends (their
 * watch sockets close with 4401 once it commits), password sign-in is refused until a passcode reset, and the account's
 * devices are forgotten; then the report is audited, a passcode e-mail goes out and the owners are told.
 * Answers undefined, having changed nothing, when the account is gone or the link was already used.
 *
 * It never signs anyone in, and it cannot undo what was done before it: a factor or passkey an intruder added stays
 * until the person removes it (docs/security.md says so).
 */
export async function reportNotMe(c: Context<AppEnv>, db: Database, claims: NotMeClaims): Promise<NotMeOutcome | undefined> {
  const [user] = await db.select().from(users).where(eq(users.id, claims.userId));
  if (!user || user.deleted) return undefined;
  const { change, markUsed } = reportCompromise(db, user.id, claims.eventId);
  const event = claims.event in SECURITY_EVENTS ? SECURITY_EVENTS[claims.event as NoticeEvent].what : "a change to the account";
  const {
    results: [used],
    returned: [ended],
  } = await commitAccountChanges(c, db, [change], [markUsed] as const);
  if ((used as unknown[]).length === 0) return undefined;
  const keys = ended as Pick<ApiKeyRow, "id" | "loginType">[];
  const outcome = {
    revoked_sessions: keys.filter((key) => key.loginType !== "token").length,
    revoked_tokens: keys.filter((key) => key.loginType === "token").length,
  };
  // Written once the report has taken effect: a link used a second time changes nothing and is not an event.
  await db.batch([
    auditInsert(db, c, {
      userId: user.id,
      action: "report_not_me",
      resourceType: "user",
      resourceId: user.id,
      diff: { event: claims.event, event_id: claims.eventId, event_time: new Date(claims.at).toISOString(), ...outcome },
    }),
  ]);

  const origin = requestOrigin(c.req.raw);
  const labels = {
    account: user.username,
    event,
    event_time: formatWhen(claims.at),
    when: formatWhen(Date.now()),
    device: describeDevice(origin),
    place: describePlace(origin),
  };
  c.executionCtx.waitUntil(
    (async () => {
      // The passcode at once, through the same path as A5, within the same caps (it is an e-mail to the account).
      await requestPasscode(c.env, c.executionCtx, user.email);
      const owners = await liveUsersWithRoles(database(c.env.DB), ["owner"], [user.id]);
      await Promise.all(
        owners.map((owner) =>
          enqueueNotification(c.env, c.executionCtx, { userId: owner, templateId: TEMPLATE_IDS.compromiseReported, labels, createdBy: user.id }),
        ),
      );
    })().catch((error: unknown) => {
      console.error(`[herald] follow-up of a compromise report failed: ${error instanceof Error ? error.name : "error"}`);
    }),
  );
  return outcome;
}

/** A used link is remembered until it would have expired anyway; the cron drops it then. */
export async function purgeUsedNotMeLinks(db: Database, now = Date.now()): Promise<void> {
  await db.delete(notMeUses).where(lt(notMeUses.usedAt, nowIso(now - NOT_ME_LIFETIME_MS)));
}
