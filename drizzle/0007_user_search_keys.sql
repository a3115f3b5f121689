ALTER TABLE `users` ADD `search_name` text;--> statement-breakpoint
ALTER TABLE `users` ADD `search_email` text;--> statement-breakpoint
CREATE INDEX `users_search_pending` ON `users` (`id`) WHERE "users"."search_name" IS NULL OR "users"."search_email" IS NULL;