import { getTableColumns, type SQL, sql } from "drizzle-orm";
import type { SQLiteTable } from "drizzle-orm/sqlite-core";
import type { Database } from "./client";

/**
 * `INSERT … SELECT <row> WHERE <condition>`: the row is written only if the condition holds when the statement runs.
 * Put in one `db.batch()` with the statements it depends on, it makes a check and a write one atomic step (a cap
 * counted and kept, an audit entry written only with the change it records). Values are bound through each column's
 * own mapping, as `insert().values()` binds them (JSON and booleans included); every column must be given.
 */
export function insertWhere<T extends SQLiteTable>(db: Database, table: T, row: Required<T["$inferInsert"]>, condition: SQL) {
  const values = Object.entries(getTableColumns(table)).map(([key, column]) => sql.param((row as Record<string, unknown>)[key], column));
  return db.insert(table).select(sql`SELECT ${sql.join(values, sql`, `)} WHERE ${condition}`);
}
