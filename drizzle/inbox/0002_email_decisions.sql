CREATE TABLE `email_decisions` (
	`notification_id` text PRIMARY KEY NOT NULL,
	`send` integer NOT NULL,
	`decided_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `email_decisions_decided` ON `email_decisions` (`decided_at`);