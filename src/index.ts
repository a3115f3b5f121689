import { app } from "./app";
import type { Env, NotificationQueueMessage } from "./env";
import { handleQueue, handleScheduled } from "./notifications/background";

export { UserInbox } from "./inbox/user-inbox";

export default {
  fetch: app.fetch,
  queue: (batch, env) => handleQueue(batch, env),
  scheduled: (_controller, env, ctx) => ctx.waitUntil(handleScheduled(env)),
} satisfies ExportedHandler<Env, NotificationQueueMessage>;
