CREATE TABLE `inbox_removed` (
	`id` text PRIMARY KEY NOT NULL,
	`created_at` text NOT NULL,
	`removed_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `inbox_removed_at` ON `inbox_removed` (`removed_at`);--> statement-breakpoint
CREATE TABLE `inbox_retention` (
	`id` integer PRIMARY KEY NOT NULL,
	`max_items` integer NOT NULL,
	`retention_ms` integer NOT NULL,
	`last_sweep` integer
);
--> statement-breakpoint
CREATE INDEX `inbox_removable` ON `inbox_notifications` (`created_at`,`id`) WHERE "inbox_notifications"."read_at" IS NOT NULL AND "inbox_notifications"."snoozed_until" IS NULL;