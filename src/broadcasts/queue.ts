import type { BroadcastQueueMessage, Env } from "../env";
import { limiter } from "../lib/limit";
import {
  BROADCAST_DEAD_LETTER_QUEUE,
  type DeliveryStep,
  deadLetterSteps,
  deliverSteps,
  NotifierPaused,
  type ResolveStep,
  RPCS_IN_FLIGHT,
  resolveStep,
} from "./fanout";

/** While the notifier is paused, a delivery step waits on the queue this long before it looks again. */
const PAUSED_RECHECK_S = 30;

/**
 * The broadcasts queue's consumer (docs/broadcasts.md). Resolution steps run one by one; the batch's delivery
 * messages run together, with one limit of inbox RPCs in flight and one D1 read and one D1 write between them. A
 * message that fails is retried by the queue (every write it made is idempotent); what fails on every retry reaches
 * the dead-letter queue, whose consumer records the undelivered recipients as failed.
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
  const deliveries: Message<DeliveryStep>[] = [];
  const resolutions: Message<ResolveStep>[] = [];
  for (const message of batch.messages) {
    if (isDelivery(message)) deliveries.push(message);
    else if (isResolution(message)) resolutions.push(message);
  }
  await Promise.all([...resolutions.map((m) => resolve(env, m)), deliver(env, deliveries)]);
}

function isDelivery(message: Message<BroadcastQueueMessage>): message is Message<DeliveryStep> {
  return "deliver" in message.body;
}

function isResolution(message: Message<BroadcastQueueMessage>): message is Message<ResolveStep> {
  return "resolve" in message.body;
}

async function resolve(env: Env, message: Message<ResolveStep>): Promise<void> {
  try {
    await resolveStep(env, message.body);
    message.ack();
  } catch (error) {
    console.error(`[herald] broadcast resolution step ${message.id} failed: ${error instanceof Error ? error.message : "error"}`);
    message.retry();
  }
}

async function deliver(env: Env, messages: Message<DeliveryStep>[]): Promise<void> {
  if (messages.length === 0) return;
  try {
    const failed = new Set(
      (
        await deliverSteps(
          env,
          messages.map((m) => m.body),
          limiter(RPCS_IN_FLIGHT),
        )
      ).map((f) => f.step),
    );
    for (const message of messages) {
      if (failed.has(message.body)) message.retry();
      else message.ack();
    }
  } catch (error) {
    if (error instanceof NotifierPaused) {
      // Not a failure: put back for later, so a long pause never exhausts the queue's retries.
      await Promise.all(messages.map((m) => putBack(env, m)));
      return;
    }
    // A D1 failure: nothing was acked, and every write is idempotent, so the whole batch is tried again.
    console.error(`[herald] broadcast delivery of ${messages.length} messages failed: ${error instanceof Error ? error.message : "error"}`);
    for (const message of messages) message.retry();
  }
}

async function putBack(env: Env, message: Message<DeliveryStep>): Promise<void> {
  try {
    await env.BROADCAST_QUEUE.send(message.body, { delaySeconds: PAUSED_RECHECK_S });
    message.ack();
  } catch {
    message.retry({ delaySeconds: PAUSED_RECHECK_S });
  }
}
