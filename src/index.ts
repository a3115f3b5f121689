import { app } from "./app";
import { purgeExpiredMfaChallenges } from "./auth/mfa/challenge";
import { BROADCAST_DEAD_LETTER_QUEUE, BROADCAST_QUEUE, broadcastHousekeeping } from "./broadcasts/fanout";
import { handleBroadcastQueue } from "./broadcasts/queue";
import { database } from "./db/client";
import type { BroadcastQueueMessage, Env, NotificationQueueMessage } from "./env";
import { handleQueue, handleScheduled } from "./notifications/background";
import { purgeExpiredPasskeyChallenges } from "./passkeys/challenges";
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
  queue: async (batch, env, ctx) => {
    if (isBroadcastBatch(batch)) await handleBroadcastQueue(batch, env);
    else if (isNotificationBatch(batch)) await handleQueue(batch, env, ctx);
  },
  scheduled: (_controller, env, ctx) =>
    ctx.waitUntil(
      Promise.all([
        handleScheduled(env),
        broadcastHousekeeping(env),
        backfillSearchKeys(database(env.DB)),
        purgeExpiredMfaChallenges(database(env.DB)),
        purgeExpiredPasskeyChallenges(database(env.DB)),
        purgeUsedNotMeLinks(database(env.DB)),
      ]),
    ),
} satisfies ExportedHandler<Env, NotificationQueueMessage | BroadcastQueueMessage>;
