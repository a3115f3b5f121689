CREATE TABLE `mfa_challenges` (
	`id` text PRIMARY KEY NOT NULL,
	`hashed_secret` text NOT NULL,
	`user_id` text NOT NULL,
	`login_type` text NOT NULL,
	`methods` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`expires_at` text NOT NULL,
	`created_at` text NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `mfa_challenges_user` ON `mfa_challenges` (`user_id`);--> statement-breakpoint
CREATE INDEX `mfa_challenges_expiry` ON `mfa_challenges` (`expires_at`);--> statement-breakpoint
CREATE TABLE `recovery_codes` (
	`user_id` text NOT NULL,
	`code_hash` text NOT NULL,
	`used_at` text,
	`created_at` text NOT NULL,
	PRIMARY KEY(`user_id`, `code_hash`),
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE TABLE `user_totp` (
	`user_id` text PRIMARY KEY NOT NULL,
	`secret_sealed` text NOT NULL,
	`confirmed_at` text,
	`last_step` integer,
	`created_at` text NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
ALTER TABLE `api_keys` ADD `auth_time` text;--> statement-breakpoint
ALTER TABLE `api_keys` ADD `auth_methods` text DEFAULT '[]' NOT NULL;--> statement-breakpoint
-- Sessions from before this migration authenticated when they were created, by their login type's one method.
UPDATE `api_keys` SET `auth_time` = `created_at`, `auth_methods` = CASE `login_type` WHEN 'password' THEN '["pwd"]' ELSE json_array(`login_type`) END WHERE `login_type` != 'token';
