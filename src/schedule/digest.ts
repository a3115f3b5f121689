import { eq, inArray } from "drizzle-orm";
import { type Database, database } from "../db/client";
import { type MessageRow, notificationMessages, type TemplateRow } from "../db/schema";
import { inSlices } from "../db/slices";
import type { Env } from "../env";
import type { ClosedWindow, DigestItem } from "../inbox/digests";
import { nowIso } from "../lib/crypto";
import { escapeHtml, markdownToHtml } from "../markdown/html";
import { safeHref } from "../markdown/links";
import { markdownToPlaintext } from "../markdown/plaintext";
import { enqueueExternal } from "../notifications/dispatch";
import { escapeMarkdown, type RenderedNotification } from "../notifications/render";
import { moveMessages } from "../notifications/status";
import { DIGEST_TEMPLATE_ID, DIGEST_TEMPLATE_NAME } from "../notifications/templates";
import { ScheduleMessages } from "./messages";

/** Items a digest names; the rest are counted ("and N more"). */
const DIGEST_ITEMS_SHOWN = 50;

/** The template the dispatcher hands the e-mail channel for a digest: never stored, never in a list. */
export const DIGEST_TEMPLATE: TemplateRow = {
  id: DIGEST_TEMPLATE_ID,
  name: DIGEST_TEMPLATE_NAME,
  titleTemplate: "",
  bodyTemplate: "",
  actions: "[]",
  group: "Notification Events",
  method: "smtp",
  kind: "system",
  enabledByDefault: true,
  mandatory: false,
  externalOnly: true,
  emailWhenUnreadAfterMs: 0,
};

/** What a digest's row carries: the items it names, how many more it counts, and every copy it stands for. */
interface DigestPayload {
  items: { title: string; url: string | null }[];
  more: number;
  /** The message-log ids of every e-mail copy the digest stands for (named or counted). */
  listed: string[];
}

function digestPayloadOf(message: Pick<MessageRow, "payload">): DigestPayload {
  const digest = message.payload.digest as Partial<DigestPayload> | undefined;
  return { items: digest?.items ?? [], more: digest?.more ?? 0, listed: digest?.listed ?? [] };
}

/** The digest's message-log row: `pending`, due now, its id the window's, so a second hand-off finds it. */
function digestRow(window: ClosedWindow, now: number): MessageRow {
  const listed: DigestItem[] = window.decision.listed;
  const at = nowIso(now);
  return {
    id: window.id,
    notificationId: window.id,
    templateId: DIGEST_TEMPLATE_ID,
    userId: window.recipient.user_id ?? "",
    method: "smtp",
    destination: null,
    status: "pending",
    statusReason: null,
    payload: {
      _version: "1.2",
      notification_name: DIGEST_TEMPLATE.name,
      notification_template_id: DIGEST_TEMPLATE_ID,
      ...window.recipient,
      actions: [],
      labels: {},
      data: {},
      targets: [],
      digest: {
        items: listed.slice(0, DIGEST_ITEMS_SHOWN).map((i) => ({ title: i.title, url: i.url })),
        more: Math.max(0, listed.length - DIGEST_ITEMS_SHOWN),
        listed: listed.map((i) => i.messageId),
      } satisfies DigestPayload,
    },
    targets: [],
    createdBy: "system",
    attempts: 0,
    nextRetryAfter: null,
    leasedUntil: null,
    createdAt: at,
    updatedAt: at,
    sentAt: null,
    sendIfUnread: false,
  };
}

/**
 * Hands a closed window's decision to the message log (docs/schedule.md, "Exactly once"): the digest's row (when
 * anything is listed), the left-out copies `skipped`, the copies with no inbox item released to go out on their own —
 * one D1 batch, every statement of which finds its work done when repeated — then the digest and the released copies
 * onto the queue, where the lease lets each be sent once. Returns the ids put on the queue.
 */
export async function handOffDigest(env: Env, window: ClosedWindow, now: number): Promise<string[]> {
  const db = database(env.DB);
  const { decision } = window;
  const at = nowIso(now);
  const statements: Parameters<Database["batch"]>[0][number][] = [];
  if (decision.listed.length > 0) statements.push(db.insert(notificationMessages).values(digestRow(window, now)).onConflictDoNothing());
  for (const ids of inSlices(decision.leftOut)) {
    statements.push(
      moveMessages(
        db,
        inArray(notificationMessages.id, ids),
        "skipped",
        { statusReason: ScheduleMessages.leftOutOfDigest, nextRetryAfter: null, updatedAt: at },
        ["pending"],
      ),
    );
  }
  for (const ids of inSlices(decision.alone)) {
    statements.push(
      db
        .update(notificationMessages)
        .set({ statusReason: ScheduleMessages.notInInbox, nextRetryAfter: at, updatedAt: at })
        .where(inArray(notificationMessages.id, ids)),
    );
  }
  const [first, ...rest] = statements;
  if (first) await db.batch([first, ...rest]);
  const queued = [...(decision.listed.length > 0 ? [window.id] : []), ...decision.alone];
  if (queued.length > 0) {
    await enqueueExternal(
      env,
      queued.map((id) => ({ id, nextRetryAfter: null })),
      now,
    );
  }
  return queued;
}

/** The copies a digest stood for follow its outcome: `sent` naming it, or failed with it. */
export async function settleListed(db: Database, message: MessageRow, outcome: { status: "sent" | "permanent_failure"; reason: string | null }) {
  const { listed } = digestPayloadOf(message);
  const at = nowIso();
  for (const ids of inSlices(listed)) {
    const where = inArray(notificationMessages.id, ids);
    if (outcome.status === "sent")
      await moveMessages(db, where, "sent", { statusReason: ScheduleMessages.inDigest(message.id), sentAt: at, nextRetryAfter: null }, ["pending"]);
    else
      await moveMessages(
        db,
        where,
        "permanent_failure",
        { statusReason: ScheduleMessages.digestFailed(message.id, outcome.reason ?? ""), nextRetryAfter: null },
        ["pending"],
      );
  }
}

/** One held copy's row, moved as its digest decided (a re-driven send of it: src/notifications/dispatch.ts). */
export function settleHeld(db: Database, id: string, fate: "listed" | "left_out", digestId: string) {
  const where = eq(notificationMessages.id, id);
  return fate === "listed"
    ? moveMessages(
        db,
        where,
        "sent",
        { statusReason: ScheduleMessages.inDigest(digestId), sentAt: nowIso(), leasedUntil: null, nextRetryAfter: null },
        ["leased"],
      )
    : moveMessages(db, where, "skipped", { statusReason: ScheduleMessages.leftOutOfDigest, leasedUntil: null, nextRetryAfter: null }, ["leased"]);
}

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

/**
 * The digest e-mail (docs/schedule.md, "Digests"): a title counting the unread notifications, one line per item with
 * its link (its first action, else the inbox), "and N more", and the inbox's link. Item titles are the inbox's Markdown
 * reduced to their words and escaped, so nothing in a title can add a link or markup of its own.
 */
export function renderDigest(message: Pick<MessageRow, "payload">, baseUrl: string): RenderedNotification {
  const { items, more } = digestPayloadOf(message);
  const inbox = `${baseUrl.replace(/\/$/, "")}/#/inbox`;
  const total = items.length + more;
  const lines = items.map((item) => {
    const words = markdownToPlaintext(item.title, { targets: false }).replace(/\s+/g, " ").trim() || "Notification";
    return `- [${escapeMarkdown(words)}](<${safeHref(item.url ?? "") ?? inbox}>)`;
  });
  const bodyMarkdown = [
    `${plural(total, "notification is", "notifications are")} waiting for you in Herald:`,
    lines.join("\n"),
    ...(more > 0 ? [`…and ${more} more.`] : []),
  ].join("\n\n");
  const actions = [{ label: "Open your inbox", url: inbox }];
  const titleMarkdown = `Your digest: ${plural(total, "unread notification", "unread notifications")}`;
  return {
    titleMarkdown,
    bodyMarkdown,
    title: titleMarkdown,
    body: markdownToPlaintext(bodyMarkdown),
    html: `${markdownToHtml(bodyMarkdown)}<p><a href="${escapeHtml(inbox)}">Open your inbox</a></p>`,
    actions,
  };
}
