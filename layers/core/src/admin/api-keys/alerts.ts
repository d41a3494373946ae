/**
 * Key e-mails: upcoming and completed rotations, expiry warnings and expiries. Recipients are the
 * key's `alert_emails` and, for a user key, its user. Sending never fails the caller: a mailer
 * error is logged and the lifecycle worker tries again on its next run where it keeps state.
 */
import type { CoreDeps } from '../../deps.ts';
import type { ApiKeyRecord } from '../../store/entities.ts';
import { IdentityRepository } from '../../store/identity.ts';

export const KEY_MAIL_KINDS = {
  rotationUpcoming: 'api-key.rotation-upcoming',
  rotated: 'api-key.rotated',
  expiryWarning: 'api-key.expiry-warning',
  expired: 'api-key.expired',
} as const;

export async function keyRecipients(deps: CoreDeps, r: ApiKeyRecord): Promise<string[]> {
  const out = new Set((r.alert_emails ?? []).map((e) => e.toLowerCase()));
  if (r.type === 'workspace-user' && r.user_id) {
    const user = await new IdentityRepository(deps.repos.table).getUser(r.organisation_id, r.user_id);
    if (user) out.add(user.email);
  }
  return [...out];
}

const describe = (r: ApiKeyRecord) => `"${r.name}" (${r.id}${r.workspace_id ? `, workspace ${r.workspace_id}` : ''})`;

export interface KeyMail {
  kind: string;
  subject: string;
  text: string;
}

export function rotationUpcomingMail(r: ApiKeyRecord, at: string): KeyMail {
  return {
    kind: KEY_MAIL_KINDS.rotationUpcoming,
    subject: `Gantry API key "${r.name}" rotates on ${at}`,
    text: `The API key ${describe(r)} is rotated automatically at ${at}. The new key will be e-mailed to this address; the current key keeps working for ${Math.round((r.rotation_policy?.key_transition_period_ms ?? 0) / 60_000)} minutes after the rotation.`,
  };
}

/** `newKey` is set for automatic rotations only: nobody else has seen the new key. */
export function rotatedMail(r: ApiKeyRecord, transitionEnds: string, newKey?: string): KeyMail {
  const delivery = newKey
    ? `The new key is:\n\n  ${newKey}\n\nUpdate your applications before the old key stops working. This is the only time the new key is shown.`
    : 'The new key was returned to whoever rotated it.';
  return {
    kind: KEY_MAIL_KINDS.rotated,
    subject: `Gantry API key "${r.name}" was rotated`,
    text: `The API key ${describe(r)} was rotated. The previous key keeps working until ${transitionEnds}.\n\n${delivery}`,
  };
}

export function expiryWarningMail(r: ApiKeyRecord): KeyMail {
  return {
    kind: KEY_MAIL_KINDS.expiryWarning,
    subject: `Gantry API key "${r.name}" expires on ${r.expires_at}`,
    text: `The API key ${describe(r)} expires at ${r.expires_at}. Create a new key or extend its expires_at before then.`,
  };
}

export function expiredMail(r: ApiKeyRecord): KeyMail {
  return {
    kind: KEY_MAIL_KINDS.expired,
    subject: `Gantry API key "${r.name}" has expired`,
    text: `The API key ${describe(r)} expired at ${r.expires_at} and no longer works.`,
  };
}

/** Sends to the key's recipients; answers whether a message went out (false: nobody to tell, or failed). */
export async function sendKeyMail(deps: CoreDeps, r: ApiKeyRecord, mail: KeyMail): Promise<boolean> {
  try {
    const to = await keyRecipients(deps, r);
    if (to.length === 0) return false;
    await deps.mailer.send({ to, subject: mail.subject, text: mail.text, kind: mail.kind });
    return true;
  } catch (err) {
    deps.logger.error('key e-mail failed', { keyId: r.id, kind: mail.kind, error: err });
    return false;
  }
}
