import { isPersonal } from "../channels/model";
import type { DispatchMethod, MessageRow, TemplateRow, UserRow } from "../db/schema";
import type { Env } from "../env";
import { userInbox } from "../inbox/address";
import { nowIso } from "../lib/crypto";
import { ScheduleMessages } from "./messages";
import { digestWindowEnd, quietUntil, type Schedule } from "./model";

/**
 * Which copies quiet hours hold (docs/schedule.md, "Quiet hours"): external copies meant for the person — e-mail,
 * push, their own targets — of templates that are not mandatory. The inbox copy (and so every watch frame) is never
 * held, nor is the deployment's webhook, which feeds machines; passcodes and security notices go out at once.
 */
function isHeldByQuietHours(method: DispatchMethod, mandatory: boolean, schedule: Schedule): boolean {
  return isPersonal(method) && !mandatory && schedule.quietHours.length > 0;
}

/**
 * Holds the copies among `rows` (pending, not yet stored) that fall due inside a quiet range until it ends
 * (docs/schedule.md, "Quiet hours"): each keeps `pending` with the reason `quiet hours` and `next_retry_after` at the
 * range's end, when the recipient's inbox object says whether the item is still unread (unless the template has no
 * inbox copy, which nothing can read).
 */
export function holdForQuietHours(
  rows: MessageRow[],
  template: Pick<TemplateRow, "mandatory" | "externalOnly">,
  schedule: Schedule,
  at: number,
): void {
  for (const row of rows) {
    if (row.status !== "pending" || !isHeldByQuietHours(row.method, template.mandatory, schedule)) continue;
    const dueAt = row.nextRetryAfter === null ? at : Date.parse(row.nextRetryAfter);
    const end = quietUntil(schedule, dueAt);
    if (end === undefined) continue;
    row.statusReason = ScheduleMessages.heldQuiet;
    row.nextRetryAfter = nowIso(end);
    row.sendIfUnread = !template.externalOnly;
  }
}

/**
 * How long past its window's end a held copy waits before the cron may re-drive it on its own: only if the window was
 * never handed off (the object unreachable all that time) does it come to that (docs/schedule.md, "Exactly once").
 */
const HELD_GRACE_MS = 24 * 60 * 60 * 1000;

/**
 * Holds the e-mail copies among `rows` (pending, not yet stored) for the user's digest (docs/schedule.md, "Digests"):
 * the user's inbox object puts each into its open window, or opens one, before the rows are written, so a copy is
 * never in the log as held without a window to end it. If the object cannot be reached the copy is not held and goes
 * out on its own, as without a digest. Webhooks are never digested; the caller leaves mandatory templates out.
 */
export async function holdForDigest(
  env: Env,
  rows: MessageRow[],
  schedule: Schedule,
  user: Pick<UserRow, "id" | "email" | "name" | "username">,
  at: number,
): Promise<void> {
  const endsAt = digestWindowEnd(schedule, at);
  if (endsAt === undefined) return;
  const recipient = { user_id: user.id, user_email: user.email, user_name: user.name, user_username: user.username };
  for (const row of rows) {
    if (row.method !== "smtp" || row.status !== "pending") continue;
    try {
      const held = await userInbox(env, user.id).holdForDigest({ notificationId: row.notificationId, messageId: row.id }, endsAt, recipient);
      row.statusReason = ScheduleMessages.heldDigest;
      row.nextRetryAfter = nowIso(held.endsAt + HELD_GRACE_MS);
      row.sendIfUnread = false;
    } catch (error) {
      console.error(`[herald] holding ${row.id} for a digest failed: ${error instanceof Error ? error.name : "error"}`);
    }
  }
}
