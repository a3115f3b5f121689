import type { Context } from "hono";
import { database } from "../db/client";
import type { UserRow } from "../db/schema";
import type { AppEnv } from "../http/types";
import { enqueueNotification } from "../notifications/enqueue";
import { TEMPLATE_IDS } from "../notifications/templates";
import { liveUsersWithRoles } from "./service";

export type AccountEvent = "created" | "deleted" | "suspended" | "activated";

const TO_ADMINS: Record<AccountEvent, { template: string; label: string }> = {
  created: { template: TEMPLATE_IDS.userCreated, label: "created_account_name" },
  deleted: { template: TEMPLATE_IDS.userDeleted, label: "deleted_account_name" },
  suspended: { template: TEMPLATE_IDS.userSuspended, label: "suspended_account_name" },
  activated: { template: TEMPLATE_IDS.userActivated, label: "activated_account_name" },
};

const TO_USER: Partial<Record<AccountEvent, string>> = {
  suspended: TEMPLATE_IDS.yourAccountSuspended,
  activated: TEMPLATE_IDS.yourAccountActivated,
};

/**
 * docs/api.md (Notification delivery) account notices: owners and user-admins (except the actor) hear of every account change, and the
 * account itself hears of its suspension or activation. Runs after the response; a failure is logged, never
 * turned into a failed account change.
 */
export function notifyAccountEvent(c: Context<AppEnv>, event: AccountEvent, account: Pick<UserRow, "id" | "username" | "name">): void {
  const actor = c.get("auth").user;
  const { template, label } = TO_ADMINS[event];
  // Coder's label names: `<event>_account_name` is the username, `<event>_account_user_name` the display name.
  const labels = { [label]: account.username, [label.replace(/_name$/, "_user_name")]: account.name, initiator: actor.username };
  const work = (async () => {
    const db = database(c.env.DB);
    const admins = await liveUsersWithRoles(db, ["owner", "user-admin"], [actor.id, account.id]);
    const background = { waitUntil: (p: Promise<unknown>) => c.executionCtx.waitUntil(p) };
    await Promise.all(
      admins.map((admin) => enqueueNotification(c.env, background, { userId: admin, templateId: template, labels, createdBy: actor.id })),
    );
    const own = TO_USER[event];
    if (own) await enqueueNotification(c.env, background, { userId: account.id, templateId: own, labels, createdBy: actor.id });
  })().catch((error: unknown) => {
    console.error(`[herald] account ${event} notice failed: ${error instanceof Error ? error.name : "error"}`);
  });
  c.executionCtx.waitUntil(work);
}
