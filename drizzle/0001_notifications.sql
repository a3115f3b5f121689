CREATE TABLE `notification_messages` (
	`id` text PRIMARY KEY NOT NULL,
	`notification_id` text NOT NULL,
	`template_id` text NOT NULL,
	`user_id` text NOT NULL,
	`method` text NOT NULL,
	`status` text NOT NULL,
	`status_reason` text,
	`payload` text NOT NULL,
	`targets` text DEFAULT '[]' NOT NULL,
	`created_by` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`next_retry_after` text,
	`leased_until` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`sent_at` text
);
--> statement-breakpoint
CREATE INDEX `messages_status_created` ON `notification_messages` (`status`,`created_at`);--> statement-breakpoint
CREATE INDEX `messages_user` ON `notification_messages` (`user_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `notification_preferences` (
	`user_id` text NOT NULL,
	`template_id` text NOT NULL,
	`disabled` integer NOT NULL,
	`updated_at` text NOT NULL,
	PRIMARY KEY(`user_id`, `template_id`),
	FOREIGN KEY (`template_id`) REFERENCES `notification_templates`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE TABLE `notification_templates` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`title_template` text NOT NULL,
	`body_template` text NOT NULL,
	`actions` text DEFAULT '[]' NOT NULL,
	`group` text NOT NULL,
	`method` text DEFAULT '' NOT NULL,
	`kind` text DEFAULT 'system' NOT NULL,
	`enabled_by_default` integer DEFAULT true NOT NULL,
	`mandatory` integer DEFAULT false NOT NULL,
	`external_only` integer DEFAULT false NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `notification_templates_name_unique` ON `notification_templates` (`name`);--> statement-breakpoint
CREATE TABLE `one_time_passcodes` (
	`user_id` text PRIMARY KEY NOT NULL,
	`code_hmac` text NOT NULL,
	`expires_at` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`created_at` text NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE TABLE `site_config` (
	`key` text PRIMARY KEY NOT NULL,
	`value` text NOT NULL,
	`updated_at` text NOT NULL
);
