import { app } from "./app";
import type { Env } from "./env";

export { UserInbox } from "./inbox/user-inbox";

export default {
  fetch: app.fetch,
} satisfies ExportedHandler<Env>;
