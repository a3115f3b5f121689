/** Types of scripts/mail-catcher.mjs, for the TypeScript end-to-end suite. */
export interface CaughtMessage {
  id: string;
  received_at: string;
  envelope: { mail_from: string; rcpt_to: string[] };
  from: string;
  to: string;
  subject: string;
  text: string;
  html: string;
  headers: { name: string; value: string }[];
}

export interface MailCatcher {
  smtpPort: number;
  url: string;
  messages(): CaughtMessage[];
  stop(): Promise<void>;
}

export function startMailCatcher(options?: { smtpPort?: number; webPort?: number; limit?: number }): Promise<MailCatcher>;
