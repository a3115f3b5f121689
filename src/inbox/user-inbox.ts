import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env";

/**
 * One object per user (`idFromName(userId)`), holding that user's inbox and live watch sockets. The binding and its
 * SQLite migration tag exist from the start so the class never has to be migrated from KV storage; the inbox itself
 * (storage, delivery RPC, watch) is built by the inbox issue.
 */
export class UserInbox extends DurableObject<Env> {}
