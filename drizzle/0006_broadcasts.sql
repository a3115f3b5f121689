CREATE TABLE `broadcast_batches` (
	`broadcast_id` text NOT NULL,
	`batch` text NOT NULL,
	`recipients` integer NOT NULL,
	`delivered` integer NOT NULL,
	`failed` integer NOT NULL,
	`updated_at` text NOT NULL,
	PRIMARY KEY(`broadcast_id`, `batch`)
);
--> statement-breakpoint
CREATE TABLE `broadcast_idempotency_keys` (
	`created_by` text NOT NULL,
	`key` text NOT NULL,
	`broadcast_id` text NOT NULL,
	`recipients` integer NOT NULL,
	`created_at` text NOT NULL,
	PRIMARY KEY(`created_by`, `key`)
);
--> statement-breakpoint
CREATE TABLE `broadcast_shards` (
	`broadcast_id` text NOT NULL,
	`shard` integer NOT NULL,
	`cursor` text NOT NULL,
	`planned` integer DEFAULT 0 NOT NULL,
	`done` integer DEFAULT false NOT NULL,
	`updated_at` text NOT NULL,
	PRIMARY KEY(`broadcast_id`, `shard`)
);
--> statement-breakpoint
CREATE INDEX `broadcast_shards_open` ON `broadcast_shards` (`updated_at`) WHERE "broadcast_shards"."done" = 0;--> statement-breakpoint
CREATE TABLE `broadcasts` (
	`id` text PRIMARY KEY NOT NULL,
	`created_by` text NOT NULL,
	`created_at` text NOT NULL,
	`audience` text NOT NULL,
	`title` text NOT NULL,
	`message` text NOT NULL,
	`targets` text DEFAULT '[]' NOT NULL,
	`email_when_unread_after_ms` integer DEFAULT 0 NOT NULL,
	`recipients` integer NOT NULL,
	`completed_at` text
);
--> statement-breakpoint
ALTER TABLE `notification_messages` ADD `send_if_unread` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `notification_templates` ADD `email_when_unread_after_ms` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
-- Broadcasts are sent with their own template (docs/broadcasts.md), so a user can turn broadcast e-mails off without
-- turning off custom notifications. Its content comes from the broadcast, as N1's does.
INSERT INTO notification_templates (id, name, title_template, body_template, actions, "group", method, kind, enabled_by_default, mandatory, external_only) VALUES ('e9b4efe4-cf44-4038-8d36-187f0011cb5f', 'Broadcast', '{{.Labels.custom_title}}', '{{.Labels.custom_message}}', '[]', 'Custom Events', '', 'custom', 1, 0, 0);
