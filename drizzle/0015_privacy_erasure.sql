CREATE TABLE `user_erasures` (
	`user_id` text PRIMARY KEY NOT NULL,
	`step` text NOT NULL,
	`requested_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`failures` integer DEFAULT 0 NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `user_erasures_updated` ON `user_erasures` (`updated_at`);--> statement-breakpoint
INSERT INTO `user_erasures` (`user_id`, `step`, `requested_at`, `updated_at`) SELECT `id`, 'inbox', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), '1970-01-01T00:00:00.000Z' FROM `users` WHERE `deleted` = 1;--> statement-breakpoint
INSERT INTO `site_config` (`key`, `value`, `updated_at`) VALUES ('inbox_jurisdiction', '', strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) ON CONFLICT DO NOTHING;