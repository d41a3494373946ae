/** Outbound e-mail (alerts, invites, rotation notices). SES in AWS; an outbox on disk locally. */

export interface MailMessage {
  to: readonly string[];
  subject: string;
  text: string;
  /** Groups messages of one kind (e.g. `usage-limit.threshold`), for filtering and tests. */
  kind: string;
}

export interface Mailer {
  send(message: MailMessage): Promise<void>;
}
