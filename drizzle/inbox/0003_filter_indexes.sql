CREATE TABLE `inbox_targets` (
	`target` text NOT NULL,
	`created_at` text NOT NULL,
	`notification_id` text NOT NULL,
	PRIMARY KEY(`target`, `created_at`, `notification_id`)
);
--> statement-breakpoint
CREATE INDEX `inbox_template` ON `inbox_notifications` (`template_id`,`created_at`,`id`);--> statement-breakpoint
-- Backfill (written by hand, docs/inbox.md "Indexes"): every notification stored before this migration gets its
-- inbox_targets rows from its JSON targets, as UserInbox.deliver writes them for a new one, so the targets filter
-- finds it after the upgrade. DISTINCT: a target listed twice in one notification is one row.
INSERT INTO `inbox_targets` (`target`, `created_at`, `notification_id`)
  SELECT DISTINCT `targets`.`value`, `n`.`created_at`, `n`.`id` FROM `inbox_notifications` AS `n`, json_each(`n`.`targets`) AS `targets`;
