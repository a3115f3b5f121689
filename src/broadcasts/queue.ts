import type { BroadcastQueueMessage, Env } from "../env";
import { limiter } from "../lib/limit";
import { BROADCAST_DEAD_LETTER_QUEUE, deadLetterSteps, deliverStep, NotifierPaused, RPCS_IN_FLIGHT, resolveStep } from "./fanout";

/** While the notifier is paused, a delivery step waits on the queue this long before it looks again. */
const PAUSED_RECHECK_S = 30;

/**
 * The broadcasts queue's consumer (docs/broadcasts.md). Every step of a batch runs at once, sharing one limit of
 * inbox RPCs in flight. A step that fails is retried by the queue (every write it made is idempotent); what fails on
 * every retry reaches the dead-letter queue, whose consumer records the undelivered recipients as failed.
 */
export async function handleBroadcastQueue(batch: MessageBatch<BroadcastQueueMessage>, env: Env): Promise<void> {
  if (batch.queue === BROADCAST_DEAD_LETTER_QUEUE) {
    await deadLetterSteps(
      env,
      batch.messages.map((m) => m.body),
    );
    batch.ackAll();
    return;
  }
  const run = limiter(RPCS_IN_FLIGHT);
  await Promise.all(
    batch.messages.map(async (message) => {
      const step = message.body;
      try {
        if ("resolve" in step) await resolveStep(env, step);
        else await deliverStep(env, step, run);
        message.ack();
      } catch (error) {
        if (error instanceof NotifierPaused) {
          // Not a failure: put back for later, so a long pause never exhausts the queue's retries.
          try {
            await env.BROADCAST_QUEUE.send(step, { delaySeconds: PAUSED_RECHECK_S });
            message.ack();
          } catch {
            message.retry({ delaySeconds: PAUSED_RECHECK_S });
          }
          return;
        }
        console.error(`[herald] broadcast queue consumer failed on message ${message.id}: ${error instanceof Error ? error.message : "error"}`);
        message.retry();
      }
    }),
  );
}
