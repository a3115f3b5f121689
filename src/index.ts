import { app } from "./app";
import { BROADCAST_DEAD_LETTER_QUEUE, BROADCAST_QUEUE, broadcastHousekeeping } from "./broadcasts/fanout";
import { handleBroadcastQueue } from "./broadcasts/queue";
import type { BroadcastQueueMessage, Env, NotificationQueueMessage } from "./env";
import { handleQueue, handleScheduled } from "./notifications/background";

export { UserInbox } from "./inbox/user-inbox";

/** Which consumer a batch is for: the queue names of wrangler.toml decide what its messages carry. */
function isBroadcastBatch(batch: MessageBatch<NotificationQueueMessage | BroadcastQueueMessage>): batch is MessageBatch<BroadcastQueueMessage> {
  return batch.queue === BROADCAST_QUEUE || batch.queue === BROADCAST_DEAD_LETTER_QUEUE;
}

export default {
  fetch: app.fetch,
  queue: (batch, env) =>
    isBroadcastBatch(batch) ? handleBroadcastQueue(batch, env) : handleQueue(batch as MessageBatch<NotificationQueueMessage>, env),
  scheduled: (_controller, env, ctx) => ctx.waitUntil(Promise.all([handleScheduled(env), broadcastHousekeeping(env)])),
} satisfies ExportedHandler<Env, NotificationQueueMessage | BroadcastQueueMessage>;
