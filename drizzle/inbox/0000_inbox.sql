CREATE TABLE `inbox_counters` (
	`name` text PRIMARY KEY NOT NULL,
	`value` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `inbox_notifications` (
	`id` text PRIMARY KEY NOT NULL,
	`user_id` text NOT NULL,
	`template_id` text NOT NULL,
	`targets` text DEFAULT '[]' NOT NULL,
	`title` text NOT NULL,
	`content` text NOT NULL,
	`icon` text NOT NULL,
	`actions` text DEFAULT '[]' NOT NULL,
	`read_at` text,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `inbox_created_id` ON `inbox_notifications` (`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `inbox_unread` ON `inbox_notifications` (`read_at`,`created_at`,`id`);