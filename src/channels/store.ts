import { and, eq, isNotNull, sql } from "drizzle-orm";
import type { Database } from "../db/client";
import { channelPreferences, notificationTargets, pushSubscriptions } from "../db/schema";
import type { ChannelSwitches, Destinations } from "./model";

/** The reads enqueue adds to its one batch: the user's subscriptions, verified targets, and switches for the template. */
export function destinationQueries(db: Database, userId: string, templateId: string) {
  return [
    db.select({ userId: pushSubscriptions.userId, id: pushSubscriptions.id }).from(pushSubscriptions).where(eq(pushSubscriptions.userId, userId)),
    db
      .select({ userId: notificationTargets.userId, id: notificationTargets.id })
      .from(notificationTargets)
      .where(and(eq(notificationTargets.userId, userId), isNotNull(notificationTargets.verifiedAt))),
    db
      .select({ userId: channelPreferences.userId, channel: channelPreferences.channel, enabled: channelPreferences.enabled })
      .from(channelPreferences)
      .where(and(eq(channelPreferences.userId, userId), eq(channelPreferences.templateId, templateId))),
  ] as const;
}

/** The same reads for many users at once (a broadcast batch): the ids travel as one JSON parameter. */
export function destinationQueriesForMany(db: Database, userIdsJson: string, templateId: string) {
  return [
    db
      .select({ userId: pushSubscriptions.userId, id: pushSubscriptions.id })
      .from(pushSubscriptions)
      .where(sql`${pushSubscriptions.userId} IN (SELECT value FROM json_each(${userIdsJson}))`),
    db
      .select({ userId: notificationTargets.userId, id: notificationTargets.id })
      .from(notificationTargets)
      .where(and(sql`${notificationTargets.userId} IN (SELECT value FROM json_each(${userIdsJson}))`, isNotNull(notificationTargets.verifiedAt))),
    db
      .select({ userId: channelPreferences.userId, channel: channelPreferences.channel, enabled: channelPreferences.enabled })
      .from(channelPreferences)
      .where(and(sql`${channelPreferences.userId} IN (SELECT value FROM json_each(${userIdsJson}))`, eq(channelPreferences.templateId, templateId))),
  ] as const;
}

type Owned = { userId: string };

/** Groups the three reads' rows by user. */
export function destinationsByUser(
  push: (Owned & { id: string })[],
  targets: (Owned & { id: string })[],
  switches: (Owned & { channel: string; enabled: boolean })[],
): (userId: string) => { destinations: Destinations; switches: ChannelSwitches } {
  const byUser = new Map<string, { destinations: Destinations; switches: Map<string, boolean> }>();
  const entry = (userId: string) => {
    let found = byUser.get(userId);
    if (!found) {
      found = { destinations: { push: [], targets: [] }, switches: new Map() };
      byUser.set(userId, found);
    }
    return found;
  };
  for (const row of push) entry(row.userId).destinations.push.push(row.id);
  for (const row of targets) entry(row.userId).destinations.targets.push(row.id);
  for (const row of switches) entry(row.userId).switches.set(row.channel, row.enabled);
  return (userId) => byUser.get(userId) ?? { destinations: { push: [], targets: [] }, switches: new Map() };
}
