import type { DrizzleSqliteDODatabase } from "drizzle-orm/durable-sqlite";
import type * as schema from "./schema";

/**
 * An inbox object's SQLite storage, as its parts use it: drizzle for writes and simple reads, plain SQL text for the
 * hot reads (src/inbox/list-sql.ts), and the storage itself for transactions and the alarm.
 */
export interface InboxStorage {
  db: DrizzleSqliteDODatabase<typeof schema>;
  sql: SqlStorage;
  storage: DurableObjectStorage;
}
