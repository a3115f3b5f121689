CREATE TABLE `api_keys` (
	`id` text PRIMARY KEY NOT NULL,
	`hashed_secret` text NOT NULL,
	`user_id` text NOT NULL,
	`login_type` text NOT NULL,
	`token_name` text,
	`scopes` text DEFAULT '["all"]' NOT NULL,
	`lifetime_seconds` integer NOT NULL,
	`expires_at` text NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`last_used` text NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `api_keys_user` ON `api_keys` (`user_id`);--> statement-breakpoint
CREATE UNIQUE INDEX `api_keys_user_token_name` ON `api_keys` (`user_id`,`token_name`) WHERE "api_keys"."token_name" IS NOT NULL;--> statement-breakpoint
CREATE TABLE `audit_logs` (
	`id` text PRIMARY KEY NOT NULL,
	`time` text NOT NULL,
	`user_id` text,
	`action` text NOT NULL,
	`resource_type` text NOT NULL,
	`resource_id` text NOT NULL,
	`diff` text DEFAULT '{}' NOT NULL,
	`ip` text DEFAULT '' NOT NULL,
	`request_id` text DEFAULT '' NOT NULL
);
--> statement-breakpoint
CREATE INDEX `audit_logs_time` ON `audit_logs` (`time`);--> statement-breakpoint
CREATE INDEX `audit_logs_resource` ON `audit_logs` (`resource_type`,`resource_id`);--> statement-breakpoint
CREATE TABLE `organization_members` (
	`user_id` text NOT NULL,
	`organization_id` text NOT NULL,
	`roles` text DEFAULT '[]' NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	PRIMARY KEY(`user_id`, `organization_id`),
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`organization_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `org_members_org` ON `organization_members` (`organization_id`);--> statement-breakpoint
CREATE TABLE `organizations` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`display_name` text NOT NULL,
	`is_default` integer DEFAULT false NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `organizations_name_unique` ON `organizations` (`name`);--> statement-breakpoint
CREATE TABLE `users` (
	`id` text PRIMARY KEY NOT NULL,
	`email` text NOT NULL,
	`username` text NOT NULL,
	`name` text DEFAULT '' NOT NULL,
	`hashed_password` text,
	`login_type` text NOT NULL,
	`status` text DEFAULT 'active' NOT NULL,
	`roles` text DEFAULT '[]' NOT NULL,
	`is_system` integer DEFAULT false NOT NULL,
	`deleted` integer DEFAULT false NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`last_seen_at` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `users_email_live` ON `users` (lower("email")) WHERE "users"."deleted" = 0 AND "users"."email" <> '';--> statement-breakpoint
CREATE UNIQUE INDEX `users_username_live` ON `users` (lower("username")) WHERE "users"."deleted" = 0;