/** Outbound e-mail (alerts, invites, rotation notices). SES in AWS; an outbox on disk locally. */
import * as z from 'zod/mini';
import { ServiceUnavailableError, ValidationError, type FieldProblem } from '../http/errors.ts';

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

/**
 * A mailer for a deployment without a sender: every send fails naming the setting, so invites and
 * alerts are refused loudly rather than written where nobody reads them.
 */
export function unconfiguredMailer(reason: string): Mailer {
  return { send: () => Promise.reject(new ServiceUnavailableError(reason)) };
}

/** SES's limit on recipients of one message; the outbox keeps it too, so local matches AWS. */
export const MAX_RECIPIENTS = 50;

const addressSchema = z.email();

/** Whether an address is a plausible plain e-mail address (no display name, no line breaks). */
export const isMailAddress = (v: string): boolean => addressSchema.safeParse(v).success;

/**
 * Checks a message once for every adapter: at least one plausible recipient, no line break in the
 * subject (header injection). Throws a ValidationError naming every bad field.
 */
export function checkMailMessage(m: MailMessage): void {
  const problems: FieldProblem[] = [];
  if (m.to.length === 0) problems.push({ path: 'to', message: 'needs at least one recipient' });
  if (m.to.length > MAX_RECIPIENTS) problems.push({ path: 'to', message: `has more than ${MAX_RECIPIENTS} recipients` });
  m.to.forEach((a, i) => {
    if (typeof a !== 'string' || !isMailAddress(a)) problems.push({ path: `to[${i}]`, message: 'is not an e-mail address' });
  });
  if (typeof m.subject !== 'string' || m.subject.trim() === '') problems.push({ path: 'subject', message: 'is empty' });
  else if (/[\r\n]/.test(m.subject)) problems.push({ path: 'subject', message: 'contains a line break' });
  if (typeof m.text !== 'string') problems.push({ path: 'text', message: 'is not text' });
  if (typeof m.kind !== 'string' || m.kind === '') problems.push({ path: 'kind', message: 'is empty' });
  if (problems.length > 0) throw new ValidationError(problems);
}
