-- The notification template catalogue (docs/api.md, "Templates"). Ids are stable: the first nine are Coder's, so users'
-- preferences carry over; the two security notices have fixed ids of their own.

INSERT INTO notification_templates (id, name, title_template, body_template, actions, "group", method, kind, enabled_by_default, mandatory, external_only) VALUES ('c425f63e-716a-4bf4-ae24-78348f706c3f', 'Test Notification', 'A test notification', 'Hi {{.UserName}},

This is a test notification: your notification settings work.', '[{"label":"View notification settings","url":"{{base_url}}/deployment/notifications?tab=settings"}]', 'Notification Events', '', 'system', 1, 0, 0);--> statement-breakpoint
INSERT INTO notification_templates (id, name, title_template, body_template, actions, "group", method, kind, enabled_by_default, mandatory, external_only) VALUES ('39b1e189-c857-4b0c-877a-511144c18516', 'Custom Notification', '{{.Labels.custom_title}}', '{{.Labels.custom_message}}', '[]', 'Custom Events', '', 'custom', 1, 0, 0);--> statement-breakpoint
INSERT INTO notification_templates (id, name, title_template, body_template, actions, "group", method, kind, enabled_by_default, mandatory, external_only) VALUES ('62f86a30-2330-4b61-a26d-311ff3b608cf', 'One-Time Passcode', 'Reset your password', 'Hi {{.UserName}},

Use the link below to reset your password. It works once and expires soon.

If you did not ask for this, you can ignore this message.', '[{"label":"Reset password","url":"{{base_url}}/reset-password/change?otp={{.Labels.one_time_passcode}}&email={{.UserEmail}}"}]', 'User Events', '', 'system', 1, 1, 1);--> statement-breakpoint
INSERT INTO notification_templates (id, name, title_template, body_template, actions, "group", method, kind, enabled_by_default, mandatory, external_only) VALUES ('4e19c0ac-94e1-4532-9515-d1801aa283b2', 'User account created', 'User account "{{.Labels.created_account_name}}" created', 'Hi {{.UserName}},

New user account **{{.Labels.created_account_name}}** has been created by **{{.Labels.initiator}}**.', '[{"label":"View accounts","url":"{{base_url}}/deployment/users?filter=status%3Aactive"}]', 'User Events', '', 'system', 1, 0, 0);--> statement-breakpoint
INSERT INTO notification_templates (id, name, title_template, body_template, actions, "group", method, kind, enabled_by_default, mandatory, external_only) VALUES ('f44d9314-ad03-4bc8-95d0-5cad491da6b6', 'User account deleted', 'User account "{{.Labels.deleted_account_name}}" deleted', 'Hi {{.UserName}},

User account **{{.Labels.deleted_account_name}}** has been deleted by **{{.Labels.initiator}}**.', '[{"label":"View accounts","url":"{{base_url}}/deployment/users?filter=status%3Aactive"}]', 'User Events', '', 'system', 1, 0, 0);--> statement-breakpoint
INSERT INTO notification_templates (id, name, title_template, body_template, actions, "group", method, kind, enabled_by_default, mandatory, external_only) VALUES ('b02ddd82-4733-4d02-a2d7-c36f3598997d', 'User account suspended', 'User account "{{.Labels.suspended_account_name}}" suspended', 'Hi {{.UserName}},

User account **{{.Labels.suspended_account_name}}** has been suspended by **{{.Labels.initiator}}**.', '[{"label":"View suspended accounts","url":"{{base_url}}/deployment/users?filter=status%3Asuspended"}]', 'User Events', '', 'system', 1, 0, 0);--> statement-breakpoint
INSERT INTO notification_templates (id, name, title_template, body_template, actions, "group", method, kind, enabled_by_default, mandatory, external_only) VALUES ('9f5af851-8408-4e73-a7a1-c6502ba46689', 'User account activated', 'User account "{{.Labels.activated_account_name}}" activated', 'Hi {{.UserName}},

User account **{{.Labels.activated_account_name}}** has been activated by **{{.Labels.initiator}}**.', '[{"label":"View accounts","url":"{{base_url}}/deployment/users?filter=status%3Aactive"}]', 'User Events', '', 'system', 1, 0, 0);--> statement-breakpoint
INSERT INTO notification_templates (id, name, title_template, body_template, actions, "group", method, kind, enabled_by_default, mandatory, external_only) VALUES ('6a2f0609-9b69-4d36-a989-9f5925b6cbff', 'Your account has been suspended', 'Your account "{{.Labels.suspended_account_name}}" has been suspended', 'Hi {{.UserName}},

Your account **{{.Labels.suspended_account_name}}** has been suspended by **{{.Labels.initiator}}**.', '[]', 'User Events', '', 'system', 1, 0, 0);--> statement-breakpoint
INSERT INTO notification_templates (id, name, title_template, body_template, actions, "group", method, kind, enabled_by_default, mandatory, external_only) VALUES ('1a6a6bea-ee0a-43e2-9e7c-eabdb53730e4', 'Your account has been activated', 'Your account "{{.Labels.activated_account_name}}" has been activated', 'Hi {{.UserName}},

Your account **{{.Labels.activated_account_name}}** has been activated by **{{.Labels.initiator}}**.', '[{"label":"Open Herald","url":"{{base_url}}"}]', 'User Events', '', 'system', 1, 0, 0);--> statement-breakpoint
INSERT INTO notification_templates (id, name, title_template, body_template, actions, "group", method, kind, enabled_by_default, mandatory, external_only) VALUES ('3c5f6a1e-8b2d-4f7a-9e0c-1d2b3a4c5e6f', 'Password changed', 'Your password was changed', 'Hi {{.UserName}},

The password of your account **{{.UserUsername}}** was changed and every session was signed out.

If this was not you, reset your password now and contact an administrator.', '[{"label":"Reset password","url":"{{base_url}}/reset-password"}]', 'Security Events', '', 'system', 1, 1, 0);--> statement-breakpoint
INSERT INTO notification_templates (id, name, title_template, body_template, actions, "group", method, kind, enabled_by_default, mandatory, external_only) VALUES ('7e9d1b3a-5c2f-4e8d-a6b0-9f1e2d3c4b5a', 'Login method changed', 'Your login method was changed', 'Hi {{.UserName}},

Your account **{{.UserUsername}}** now signs in with **{{.Labels.new_login_type}}** instead of **{{.Labels.old_login_type}}**, and every earlier session was signed out.

If this was not you, contact an administrator immediately.', '[]', 'Security Events', '', 'system', 1, 1, 0);
