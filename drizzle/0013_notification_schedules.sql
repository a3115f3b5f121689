CREATE TABLE `notification_schedules` (
	`user_id` text PRIMARY KEY NOT NULL,
	`timezone` text NOT NULL,
	`quiet_hours` text NOT NULL,
	`digest` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE no action
);
