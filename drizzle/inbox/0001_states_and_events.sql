CREATE TABLE `inbox_events` (
	`seq` integer PRIMARY KEY NOT NULL,
	`at` integer NOT NULL,
	`event` text NOT NULL,
	`unread` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `inbox_template_counts` (
	`template_id` text PRIMARY KEY NOT NULL,
	`unread` integer NOT NULL,
	`total` integer NOT NULL
);
--> statement-breakpoint
ALTER TABLE `inbox_notifications` ADD `archived_at` text;--> statement-breakpoint
ALTER TABLE `inbox_notifications` ADD `snoozed_until` text;--> statement-breakpoint
CREATE INDEX `inbox_visible` ON `inbox_notifications` (`created_at`,`id`) WHERE "inbox_notifications"."archived_at" IS NULL AND "inbox_notifications"."snoozed_until" IS NULL;--> statement-breakpoint
CREATE INDEX `inbox_snoozed` ON `inbox_notifications` (`snoozed_until`) WHERE "inbox_notifications"."snoozed_until" IS NOT NULL;--> statement-breakpoint
-- Backfill (written by hand, docs/inbox.md): an inbox created before this migration gets its total and per-template
-- counts from its rows (nothing is archived or snoozed yet), and its sequence starts at 0.
INSERT INTO `inbox_counters` (`name`, `value`) SELECT 'total', count(*) FROM `inbox_notifications` WHERE true
  ON CONFLICT (`name`) DO UPDATE SET `value` = excluded.`value`;--> statement-breakpoint
INSERT INTO `inbox_template_counts` (`template_id`, `unread`, `total`)
  SELECT `template_id`, sum(`read_at` IS NULL), count(*) FROM `inbox_notifications` GROUP BY `template_id`;
