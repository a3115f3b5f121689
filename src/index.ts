import { app } from "./app";
import { purgeExpiredMfaChallenges } from "./auth/mfa/challenge";
import { BROADCAST_DEAD_LETTER_QUEUE, BROADCAST_QUEUE, broadcastHousekeeping } from "./broadcasts/fanout";
import { handleBroadcastQueue } from "./broadcasts/queue";
import { database } from "./db/client";
import type { BroadcastQueueMessage, Env, NotificationQueueMessage } from "./env";
import { assertInboxJurisdiction } from "./inbox/jurisdiction";
import { handleQueue, handleScheduled } from "./notifications/background";
import { purgeExpiredPasskeyChallenges } from "./passkeys/challenges";
import { finishErasures } from "./privacy/erasure";
import { purgeUsedNotMeLinks } from "./security/not-me";
import { backfillSearchKeys } from "./users/search";

export { UserInbox } from "./inbox/user-inbox";

type AnyBatch = MessageBatch<NotificationQueueMessage | BroadcastQueueMessage>;

/** Which consumer a batch is for: the queue names of wrangler.toml decide what its messages carry. */
function isBroadcastBatch(batch: AnyBatch): batch is MessageBatch<BroadcastQueueMessage> {
  return batch.queue === BROADCAST_QUEUE || batch.queue === BROADCAST_DEAD_LETTER_QUEUE;
}

function isNotificationBatch(batch: AnyBatch): batch is MessageBatch<NotificationQueueMessage> {
  return !isBroadcastBatch(batch);
}

export default {
  fetch: app.fetch,
  // The consumers and the cron reach inbox objects too: they refuse to run, as requests do, while DATA_JURISDICTION is
  // not where the inboxes live (src/inbox/jurisdiction.ts); the queue then retries the batch.
  queue: async (batch, env, ctx) => {
    await assertInboxJurisdiction(env);
    if (isBroadcastBatch(batch)) await handleBroadcastQueue(batch, env);
    else if (isNotificationBatch(batch)) await handleQueue(batch, env, ctx);
  },
  scheduled: (_controller, env, ctx) =>
    ctx.waitUntil(
      (async () => {
        await assertInboxJurisdiction(env);
        await Promise.all([
          handleScheduled(env),
          broadcastHousekeeping(env),
          backfillSearchKeys(database(env.DB)),
          purgeExpiredMfaChallenges(database(env.DB)),
          purgeExpiredPasskeyChallenges(database(env.DB)),
          purgeUsedNotMeLinks(database(env.DB)),
          finishErasures(env),
        ]);
      })(),
    ),
} satisfies ExportedHandler<Env, NotificationQueueMessage | BroadcastQueueMessage>;
