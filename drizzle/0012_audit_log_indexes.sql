CREATE INDEX `audit_logs_ip` ON `audit_logs` (`ip`,`time`);--> statement-breakpoint
CREATE INDEX `audit_logs_status` ON `audit_logs` (`status_code`);