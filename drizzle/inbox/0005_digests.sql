CREATE TABLE `digest_entries` (
	`notification_id` text PRIMARY KEY NOT NULL,
	`message_id` text NOT NULL,
	`window_id` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `digest_entries_window` ON `digest_entries` (`window_id`);--> statement-breakpoint
CREATE TABLE `digest_windows` (
	`id` text PRIMARY KEY NOT NULL,
	`ends_at` integer NOT NULL,
	`recipient` text NOT NULL,
	`decision` text,
	`hand_off_at` integer
);
--> statement-breakpoint
CREATE INDEX `digest_windows_due` ON `digest_windows` (`hand_off_at`) WHERE "digest_windows"."hand_off_at" IS NOT NULL;--> statement-breakpoint
CREATE INDEX `digest_windows_ends` ON `digest_windows` (`ends_at`);