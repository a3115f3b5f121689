import { drizzle } from "drizzle-orm/d1";

/**
 * A Drizzle handle on D1. No `schema` is passed: nothing uses the relational query API, and with a schema drizzle
 * walks every table to build its relations on each call — tens of µs on every request (docs/benchmarks.md, "Where
 * the time goes").
 */
export function database(d1: D1Database) {
  return drizzle(d1);
}

export type Database = ReturnType<typeof database>;
