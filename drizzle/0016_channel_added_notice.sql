INSERT INTO notification_templates (id, name, title_template, body_template, actions, "group", method, kind, enabled_by_default, mandatory, external_only) VALUES ('285b4739-a14f-4d28-918d-d3abda6ad6e0', 'Notification channel added', 'A notification channel was added to your account', 'Hi {{.UserName}},

**{{.Labels.channel}}**, at {{.Labels.channel_origin}}, was added to your account **{{.UserUsername}}**: copies of your notifications go there from now on.

- **When:** {{.Labels.when}}
- **Device:** {{.Labels.device}}
- **Place:** {{.Labels.place}}

If this was you, there is nothing to do. If it was not, choose **This wasn''t me**: every session and token of your account ends at once, and you set a new password with a passcode sent to this address. Then remove the channel in Account, Devices (a browser) or Account, Channels: ending the sessions does not remove it.', '[{"label":"This wasn''t me","url":"{{base_url}}/not-me#{{.Labels.not_me_token}}"}]', 'Security Events', '', 'system', 1, 1, 0);
