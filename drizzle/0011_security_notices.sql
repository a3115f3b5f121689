CREATE TABLE `not_me_uses` (
	`event_id` text PRIMARY KEY NOT NULL,
	`user_id` text NOT NULL,
	`used_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `not_me_uses_time` ON `not_me_uses` (`used_at`);--> statement-breakpoint
CREATE TABLE `user_devices` (
	`user_id` text NOT NULL,
	`device_key` text NOT NULL,
	`last_seen_at` text NOT NULL,
	`last_notice_at` text,
	PRIMARY KEY(`user_id`, `device_key`),
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
ALTER TABLE `api_keys` ADD `user_agent` text;--> statement-breakpoint
ALTER TABLE `api_keys` ADD `device` text;--> statement-breakpoint
ALTER TABLE `api_keys` ADD `ip_prefix` text;--> statement-breakpoint
ALTER TABLE `api_keys` ADD `country` text;--> statement-breakpoint
ALTER TABLE `api_keys` ADD `city` text;--> statement-breakpoint
ALTER TABLE `audit_logs` ADD `user_agent` text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE `audit_logs` ADD `status_code` integer DEFAULT 200 NOT NULL;--> statement-breakpoint
CREATE INDEX `audit_logs_user` ON `audit_logs` (`user_id`,`time`);--> statement-breakpoint
CREATE INDEX `audit_logs_action` ON `audit_logs` (`action`,`time`);--> statement-breakpoint
ALTER TABLE `users` ADD `password_reset_required` integer DEFAULT false NOT NULL;--> statement-breakpoint
INSERT INTO notification_templates (id, name, title_template, body_template, actions, "group", method, kind, enabled_by_default, mandatory, external_only) VALUES ('ec4cc453-1ecf-435a-aca8-ee07b61086fe', 'New sign-in', 'New sign-in to your account', 'Hi {{.UserName}},

Your account **{{.UserUsername}}** was signed in to from a device it has not used in the last 90 days.

- **When:** {{.Labels.when}}
- **Device:** {{.Labels.device}}
- **Place:** {{.Labels.place}}

If this was you, there is nothing to do. If it was not, choose **This wasn''t me**: every session and token of your account ends at once, and you set a new password with a passcode sent to this address.', '[{"label":"This wasn''t me","url":"{{base_url}}/not-me#{{.Labels.not_me_token}}"}]', 'Security Events', '', 'system', 1, 1, 0);--> statement-breakpoint
INSERT INTO notification_templates (id, name, title_template, body_template, actions, "group", method, kind, enabled_by_default, mandatory, external_only) VALUES ('702cdb7d-f645-4ffb-b80e-80ee935cfcec', 'Sign-in method added', 'A sign-in method was added to your account', 'Hi {{.UserName}},

**{{.Labels.factor}}** was added to your account **{{.UserUsername}}**.

- **When:** {{.Labels.when}}
- **Device:** {{.Labels.device}}
- **Place:** {{.Labels.place}}

If this was you, there is nothing to do. If it was not, choose **This wasn''t me**: every session and token of your account ends at once, and you set a new password with a passcode sent to this address.', '[{"label":"This wasn''t me","url":"{{base_url}}/not-me#{{.Labels.not_me_token}}"}]', 'Security Events', '', 'system', 1, 1, 0);--> statement-breakpoint
INSERT INTO notification_templates (id, name, title_template, body_template, actions, "group", method, kind, enabled_by_default, mandatory, external_only) VALUES ('d365c7e7-92a6-467f-9bc4-e80f1a071a0f', 'Sign-in method removed', 'A sign-in method was removed from your account', 'Hi {{.UserName}},

**{{.Labels.factor}}** was removed from your account **{{.UserUsername}}**.

- **When:** {{.Labels.when}}
- **Device:** {{.Labels.device}}
- **Place:** {{.Labels.place}}

If this was you, there is nothing to do. If it was not, choose **This wasn''t me**: every session and token of your account ends at once, and you set a new password with a passcode sent to this address.', '[{"label":"This wasn''t me","url":"{{base_url}}/not-me#{{.Labels.not_me_token}}"}]', 'Security Events', '', 'system', 1, 1, 0);--> statement-breakpoint
INSERT INTO notification_templates (id, name, title_template, body_template, actions, "group", method, kind, enabled_by_default, mandatory, external_only) VALUES ('77538dde-1d71-4c6c-9625-572cbda0e24b', 'Recovery codes regenerated', 'New recovery codes were made for your account', 'Hi {{.UserName}},

A new set of recovery codes was made for your account **{{.UserUsername}}**, and the earlier codes no longer work.

- **When:** {{.Labels.when}}
- **Device:** {{.Labels.device}}
- **Place:** {{.Labels.place}}

If this was you, there is nothing to do. If it was not, choose **This wasn''t me**: every session and token of your account ends at once, and you set a new password with a passcode sent to this address.', '[{"label":"This wasn''t me","url":"{{base_url}}/not-me#{{.Labels.not_me_token}}"}]', 'Security Events', '', 'system', 1, 1, 0);--> statement-breakpoint
INSERT INTO notification_templates (id, name, title_template, body_template, actions, "group", method, kind, enabled_by_default, mandatory, external_only) VALUES ('301ab727-1bf2-42b5-bb6c-ead0c19be4ae', 'Recovery codes running low', 'Only {{.Labels.remaining}} recovery codes are left', 'Hi {{.UserName}},

A recovery code of your account **{{.UserUsername}}** was used, and only {{.Labels.remaining}} are left. Make a new set in Account, Security before you run out.

- **When:** {{.Labels.when}}
- **Device:** {{.Labels.device}}
- **Place:** {{.Labels.place}}

If this was you, there is nothing to do. If it was not, choose **This wasn''t me**: every session and token of your account ends at once, and you set a new password with a passcode sent to this address.', '[{"label":"This wasn''t me","url":"{{base_url}}/not-me#{{.Labels.not_me_token}}"}]', 'Security Events', '', 'system', 1, 1, 0);--> statement-breakpoint
INSERT INTO notification_templates (id, name, title_template, body_template, actions, "group", method, kind, enabled_by_default, mandatory, external_only) VALUES ('bb7dfcb1-91a1-4df2-8ade-264739e7bcf1', 'API token created', 'An API token was created for your account', 'Hi {{.UserName}},

An API token named **{{.Labels.token_name}}** was created for your account **{{.UserUsername}}**, with the scopes {{.Labels.scopes}}.

- **When:** {{.Labels.when}}
- **Device:** {{.Labels.device}}
- **Place:** {{.Labels.place}}

If this was you, there is nothing to do. If it was not, choose **This wasn''t me**: every session and token of your account ends at once, and you set a new password with a passcode sent to this address.', '[{"label":"This wasn''t me","url":"{{base_url}}/not-me#{{.Labels.not_me_token}}"}]', 'Security Events', '', 'system', 1, 1, 0);--> statement-breakpoint
INSERT INTO notification_templates (id, name, title_template, body_template, actions, "group", method, kind, enabled_by_default, mandatory, external_only) VALUES ('17044c55-0743-41f6-8d72-7a30e1da5ec5', 'Sessions ended by someone else', 'Your sessions were ended by someone else', 'Hi {{.UserName}},

**{{.Labels.initiator}}** ended {{.Labels.count}} of the sessions of your account **{{.UserUsername}}**.

- **When:** {{.Labels.when}}
- **Device:** {{.Labels.device}}
- **Place:** {{.Labels.place}}

If this was you, there is nothing to do. If it was not, choose **This wasn''t me**: every session and token of your account ends at once, and you set a new password with a passcode sent to this address.', '[{"label":"This wasn''t me","url":"{{base_url}}/not-me#{{.Labels.not_me_token}}"}]', 'Security Events', '', 'system', 1, 1, 0);--> statement-breakpoint
INSERT INTO notification_templates (id, name, title_template, body_template, actions, "group", method, kind, enabled_by_default, mandatory, external_only) VALUES ('9731e3af-8f93-4af1-ae30-ad5366160076', 'Site roles changed', 'Your site roles were changed', 'Hi {{.UserName}},

**{{.Labels.initiator}}** changed the site roles of your account **{{.UserUsername}}** from {{.Labels.old_roles}} to {{.Labels.new_roles}}.

- **When:** {{.Labels.when}}
- **Device:** {{.Labels.device}}
- **Place:** {{.Labels.place}}

If this was you, there is nothing to do. If it was not, choose **This wasn''t me**: every session and token of your account ends at once, and you set a new password with a passcode sent to this address.', '[{"label":"This wasn''t me","url":"{{base_url}}/not-me#{{.Labels.not_me_token}}"}]', 'Security Events', '', 'system', 1, 1, 0);--> statement-breakpoint
INSERT INTO notification_templates (id, name, title_template, body_template, actions, "group", method, kind, enabled_by_default, mandatory, external_only) VALUES ('b569231e-7a16-4deb-8ea5-f822e0cb2dd7', 'Account compromise reported', 'Account compromise reported by {{.Labels.account}}', 'Hi {{.UserName}},

**{{.Labels.account}}** reported that this was not them: {{.Labels.event}}, on {{.Labels.event_time}}. Every session and API token of that account has ended, and it cannot sign in with its password until a passcode reset completes.

What the account did before the report stands: look through the audit log for it.

- **Reported:** {{.Labels.when}}
- **Device:** {{.Labels.device}}
- **Place:** {{.Labels.place}}', '[{"label":"Open the audit log","url":"{{base_url}}/#/audit?q=username%3A{{.Labels.account}}"}]', 'Security Events', '', 'system', 1, 1, 0);--> statement-breakpoint
UPDATE notification_templates SET body_template = 'Hi {{.UserName}},

The password of your account **{{.UserUsername}}** was changed, and its other sessions were signed out.

- **When:** {{.Labels.when}}
- **Device:** {{.Labels.device}}
- **Place:** {{.Labels.place}}

If this was you, there is nothing to do. If it was not, choose **This wasn''t me**: every session and token of your account ends at once, and you set a new password with a passcode sent to this address.', actions = '[{"label":"This wasn''t me","url":"{{base_url}}/not-me#{{.Labels.not_me_token}}"}]' WHERE id = '3c5f6a1e-8b2d-4f7a-9e0c-1d2b3a4c5e6f';--> statement-breakpoint
UPDATE notification_templates SET body_template = 'Hi {{.UserName}},

Your account **{{.UserUsername}}** now signs in with **{{.Labels.new_login_type}}** instead of **{{.Labels.old_login_type}}**, and every earlier session was signed out.

- **When:** {{.Labels.when}}
- **Device:** {{.Labels.device}}
- **Place:** {{.Labels.place}}

If this was you, there is nothing to do. If it was not, choose **This wasn''t me**: every session and token of your account ends at once, and you set a new password with a passcode sent to this address.', actions = '[{"label":"This wasn''t me","url":"{{base_url}}/not-me#{{.Labels.not_me_token}}"}]' WHERE id = '7e9d1b3a-5c2f-4e8d-a6b0-9f1e2d3c4b5a';
