import { and, eq, exists, lt, sql } from "drizzle-orm";
import { Hono } from "hono";
import * as z from "zod";
import { auditInsert } from "../audit/log";
import { getConfig } from "../config/config";
import { type Database, database } from "../db/client";
import { oneTimePasscodes, passcodeMails, type UserRow } from "../db/schema";
import { dbFor } from "../db/session";
import type { Env } from "../env";
import { badRequest } from "../http/errors";
import type { AppEnv } from "../http/types";
import { jsonBody } from "../http/validate";
import type { Background } from "../lib/background";
import { nowIso } from "../lib/crypto";
import { enqueueNotification } from "../notifications/enqueue";
import { TEMPLATE_IDS } from "../notifications/templates";
import { describeRoute, errors, NO_BODY, PASSWORD_CHECK_UNAVAILABLE, RATE } from "../openapi/describe";
import { named } from "../openapi/registry";
import { sendSecurityNotice } from "../security/notices";
import { assertPasswordPolicy, findLiveUserByEmail } from "../users/service";
import { commitAccountChanges, setPassword } from "./account-changes";
import { AuthMessages } from "./messages";
import { codeHmac, consumePasscode, issuePasscode, passcodeMatches, refundPasscodeTry } from "./otp";
import { hashPassword, verifyPassword } from "./passwords/hash";
import { limitPerAccount, limitPerIp } from "./rate-limit";
import { refuseCrossSite } from "./session";

const requestPasscodeBody = named("RequestOneTimePasscodeRequest", z.object({ email: z.email().max(320) }));
const changePasswordWithPasscodeBody = named(
  "ChangePasswordWithOneTimePasscodeRequest",
  z.object({
    email: z.email().max(320),
    one_time_passcode: z.string().min(1).max(128),
    password: z.string().max(1024),
  }),
);

/** Passcode mails one address may receive, over sliding windows (docs/security.md): enough for a person, not a flood. */
export const PASSCODE_MAILS = { perHour: 5, perDay: 10 } as const;

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/**
 * Claims one passcode mail for this user, or answers false when the sliding hourly or daily cap is reached. One
 * conditional INSERT counts and records together, so concurrent requests cannot all slip under the cap.
 */
export async function claimPasscodeMail(db: Database, userId: string, now: number): Promise<boolean> {
  const rows = await db.all<{ id: string }>(sql`
    INSERT INTO ${passcodeMails} (id, user_id, sent_at)
    SELECT ${crypto.randomUUID()}, ${userId}, ${nowIso(now)}
    WHERE (SELECT count(*) FROM ${passcodeMails} WHERE user_id = ${userId} AND sent_at > ${nowIso(now - HOUR_MS)}) < ${PASSCODE_MAILS.perHour}
      AND (SELECT count(*) FROM ${passcodeMails} WHERE user_id = ${userId} AND sent_at > ${nowIso(now - DAY_MS)}) < ${PASSCODE_MAILS.perDay}
    RETURNING id`);
  return rows.length > 0;
}

/** The caps look back a day; older records are dropped by the cron. */
export async function purgePasscodeMails(env: Env, now = Date.now()): Promise<void> {
  await database(env.DB)
    .delete(passcodeMails)
    .where(lt(passcodeMails.sentAt, nowIso(now - DAY_MS)));
}

/** What the passcode reset needs to look up, as functions, so its structure can be checked apart from D1. */
export interface ResetChecks {
  findAccount(email: string): Promise<UserRow | undefined>;
  verifyPassword(hash: string | null | undefined, password: string): Promise<{ valid: boolean }>;
  passcodeMatches(userId: string, code: string): Promise<boolean>;
}

export type ResetVerdict = { outcome: "incorrect" } | { outcome: "same-password" | "accepted"; user: UserRow };

/** Stands in for the user id of an e-mail that names no password account: no passcode row ever has it. */
const NO_ACCOUNT = "00000000-0000-0000-0000-000000000000";

/**
 * The passcode reset's checks, the same work whatever the e-mail names (docs/security.md): one account lookup, one password verify
 * (against the account's hash, or a dummy one), one passcode check (which finds no code for an unknown account) —
 * in that order, every time. Only then are the answers looked at, so neither timing nor the tries spent tell an
 * existing account from an unknown one.
 */
export async function checkResetAttempt(
  checks: ResetChecks,
  attempt: { email: string; one_time_passcode: string; password: string },
): Promise<ResetVerdict> {
  const found = await checks.findAccount(attempt.email);
  const account = found?.loginType === "password" ? found : undefined;
  const sameAsOld = await checks.verifyPassword(account?.hashedPassword, attempt.password);
  const codeMatches = await checks.passcodeMatches(account?.id ?? NO_ACCOUNT, attempt.one_time_passcode);
  if (!account || !codeMatches) return { outcome: "incorrect" };
  return { outcome: sameAsOld.valid ? "same-password" : "accepted", user: account };
}

/**
 * A passcode request, in the queue's consumer: a passcode mail for a live password account, within its caps; nothing
 * for any other e-mail. Returns whether a mail was enqueued.
 */
export async function requestPasscode(env: Env, background: Background, email: string): Promise<boolean> {
  const db = database(env.DB);
  const user = await findLiveUserByEmail(db, email);
  if (user?.loginType !== "password" || user.isSystem) return false;
  if (!(await claimPasscodeMail(db, user.id, Date.now()))) return false;
  const code = await issuePasscode(db, getConfig(env), user.id);
  await enqueueNotification(env, background, {
    userId: user.id,
    templateId: TEMPLATE_IDS.oneTimePasscode,
    secretLabels: { one_time_passcode: code },
    createdBy: "system",
  });
  return true;
}

/** Password reset by one-time passcode (docs/api.md): request a code, then set a new password with it. */
export const passwordResetRoutes = new Hono<AppEnv>()
  .post(
    "/users/otp/request",
    describeRoute({
      operationId: "requestOneTimePasscode",
      summary: "Request a one-time passcode by e-mail",
      description: "Always 204 for a valid body, with the same timing whether or not the e-mail exists.",
      tags: ["Sign-in"],
      responses: [{ status: 204, description: NO_BODY }],
      errors: RATE,
    }),
    jsonBody(requestPasscodeBody),
    async (c) => {
      const { email } = c.req.valid("json");
      await limitPerIp(c, "otp-request");
      // The same step for every e-mail: one message on the urgent lane. Whether the account exists is looked at only
      // by the queue's consumer, another invocation, so neither this answer nor the next request this isolate
      // serves can tell (docs/security.md, "Timing: existing account vs unknown e-mail").
      await c.env.NOTIFICATION_URGENT_QUEUE.send({ passcodeRequest: email });
      return c.body(null, 204);
    },
  )
  .post(
    "/users/otp/change-password",
    describeRoute({
      operationId: "changePasswordWithOneTimePasscode",
      summary: "Set a new password with a one-time passcode",
      description: "On success the code is consumed and every session and token of the user is revoked.",
      tags: ["Sign-in"],
      responses: [{ status: 204, description: NO_BODY }],
      errors: errors(
        { 400: `\`${AuthMessages.invalidPassword}\` (policy), \`${AuthMessages.incorrectPasscode}\`, or \`${AuthMessages.samePassword}\`` },
        RATE,
        PASSWORD_CHECK_UNAVAILABLE,
      ),
    }),
    refuseCrossSite,
    jsonBody(changePasswordWithPasscodeBody),
    async (c) => {
      const body = c.req.valid("json");
      await limitPerIp(c, "otp-change");
      // The policy sees only what the caller sent, so its verdict cannot reveal whether the account exists.
      await assertPasswordPolicy(c.env.ASSETS, body.password, { email: body.email });
      await limitPerAccount(c, "otp-change", body.email);
      const db = dbFor(c, "write");
      const config = c.get("config");
      const verdict = await checkResetAttempt(
        {
          findAccount: (email) => findLiveUserByEmail(db, email),
          verifyPassword,
          passcodeMatches: (userId, code) => passcodeMatches(db, config, userId, code),
        },
        body,
      );
      if (verdict.outcome === "incorrect") throw badRequest(AuthMessages.incorrectPasscode, { event: "authentication_failed" });
      const user = verdict.user;
      if (verdict.outcome === "same-password") {
        await refundPasscodeTry(db, user.id);
        throw badRequest(AuthMessages.samePassword);
      }
      const hashedPassword = await hashPassword(body.password);
      // One transaction, every write guarded by the code still existing: of two concurrent uses of one code, only the
      // first changes anything; the second finds the code gone and changes nothing.
      const hmac = await codeHmac(config, user.id, body.one_time_passcode);
      const stillValid = exists(
        db
          .select({ one: sql`1` })
          .from(oneTimePasscodes)
          .where(and(eq(oneTimePasscodes.userId, user.id), eq(oneTimePasscodes.codeHmac, hmac))),
      );
      const {
        results: [consumed],
      } = await commitAccountChanges(c, db, [setPassword(db, user.id, hashedPassword, { onlyIf: stillValid })], [
        consumePasscode(db, user.id, hmac),
      ] as const);
      if (consumed.length === 0) throw badRequest(AuthMessages.incorrectPasscode, { event: "authentication_failed" });
      await db.batch([auditInsert(db, c, { userId: user.id, action: "reset_password", resourceType: "user", resourceId: user.id })]);
      sendSecurityNotice(c, { userId: user.id, event: "password_changed", createdBy: "system" });
      return c.body(null, 204);
    },
  );
