CREATE TABLE `email_decisions` (
	`notification_id` text PRIMARY KEY NOT NULL,
	`send` integer NOT NULL,
	`decided_at` text NOT NULL
);
