CREATE TABLE `passcode_mails` (
	`id` text PRIMARY KEY NOT NULL,
	`user_id` text NOT NULL,
	`sent_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `passcode_mails_user` ON `passcode_mails` (`user_id`,`sent_at`);