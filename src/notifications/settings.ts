import { eq } from "drizzle-orm";
import type { Database } from "../db/client";
import { siteConfig } from "../db/schema";
import { nowIso } from "../lib/crypto";

const PAUSED = "notifier_paused";

export function pausedQuery(db: Database) {
  return db.select({ value: siteConfig.value }).from(siteConfig).where(eq(siteConfig.key, PAUSED));
}

export function isPaused(rows: { value: string }[]): boolean {
  return rows[0]?.value === "true";
}

export async function readPaused(db: Database): Promise<boolean> {
  return isPaused(await pausedQuery(db));
}

export function writePaused(db: Database, paused: boolean) {
  const value = paused ? "true" : "false";
  const updatedAt = nowIso();
  return db.insert(siteConfig).values({ key: PAUSED, value, updatedAt }).onConflictDoUpdate({ target: siteConfig.key, set: { value, updatedAt } });
}
