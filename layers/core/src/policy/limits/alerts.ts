/**
 * Usage limit alerts. The gateway detects a crossing (threshold reached, budget exhausted) and wins
 * the right to report it with one conditional update of the counter's alert flag, so each crossing
 * is queued once however many instances see it; a worker fed by the `alerts` queue mails it.
 */
import type { Logger } from '../../ports/logger.ts';
import { MAX_RECIPIENTS, type Mailer } from '../../ports/mailer.ts';
import type { QueueConsumer } from '../../ports/queue.ts';
import type { UsageLimitType } from '../../store/limits.ts';

export const ALERTS_QUEUE = 'alerts';

export type AlertKind = 'threshold' | 'exhausted';
/** Where the budget is declared: a usage limits policy, an API key's or a workspace's `usage_limits`. */
export type AlertSource = 'policy' | 'api_key' | 'workspace' | 'provider';

export interface UsageAlert {
  kind: AlertKind;
  source: AlertSource;
  /** The policy's, key's or workspace's id; a provider's slug (in `workspace_id`). */
  source_id: string;
  organisation_id: string;
  workspace_id: string;
  entity_id: string;
  value_key: string;
  period: string;
  type: UsageLimitType;
  /** In the policy's units: dollars for cost, tokens for tokens. */
  usage: number;
  credit_limit: number;
  alert_threshold: number | null;
  /** ISO 8601: when the crossing was seen. */
  at: string;
}

/**
 * Who besides the policy's `alert_emails` hears of a workspace's alerts: the organisation's admins
 * and owners and the workspace's admins and managers, from the users directory.
 */
export interface AlertRecipients {
  forWorkspace(organisationId: string, workspaceId: string): Promise<readonly string[]>;
}

/** Until a users directory is wired in, only the policy's `alert_emails` are told. */
export const NO_DIRECTORY: AlertRecipients = { forWorkspace: () => Promise.resolve([]) };

const SOURCE_NAMES: Readonly<Record<AlertSource, string>> = { policy: 'Usage limits policy', api_key: 'API key', workspace: 'Workspace', provider: 'Provider' };

const formatAmount = (type: UsageLimitType, v: number): string =>
  type === 'cost' ? `$${v.toFixed(v < 1 ? 6 : 2)}` : `${Math.round(v).toLocaleString('en-US')} tokens`;

/** What an alert is about, as its recipients should read it, and who else must hear of it. */
export interface AlertSubject {
  /** `usage limits policy "Monthly"`, `API key "ci"`, `workspace "Default"`. */
  title: string;
  alert_emails: readonly string[];
}

export function alertMessage(alert: UsageAlert, about: AlertSubject): { subject: string; text: string } {
  const what = alert.kind === 'threshold' ? 'reached its alert threshold' : 'is exhausted';
  const subject = `Gantry: the usage limit of ${about.title} ${what} (${alert.value_key})`.replace(/[\r\n]+/g, ' ').slice(0, 250);
  const lines = [
    `The usage limit of ${about.title} ${what} for ${alert.value_key}.`,
    '',
    `Usage this period: ${formatAmount(alert.type, alert.usage)}`,
    `Credit limit: ${formatAmount(alert.type, alert.credit_limit)}`,
    ...(alert.alert_threshold !== null ? [`Alert threshold: ${formatAmount(alert.type, alert.alert_threshold)}`] : []),
    `${SOURCE_NAMES[alert.source]}: ${alert.source_id}`,
    `Organisation: ${alert.organisation_id}`,
    `Workspace: ${alert.workspace_id}`,
    `Seen at: ${alert.at}`,
    '',
    alert.kind === 'exhausted'
      ? 'Requests counted against this limit are refused (402) until the period resets, the usage is reset or the credit limit is raised.'
      : 'Requests are still served; they are refused once the credit limit is reached.',
  ];
  return { subject, text: lines.join('\n') };
}

/** Looks up what an alert is about; undefined when it is gone (deleted since), so nobody is told. */
export type AlertSubjectReader = (alert: UsageAlert) => Promise<AlertSubject | undefined>;

export interface AlertConsumerDeps {
  subject: AlertSubjectReader;
  mailer: Mailer;
  recipients: AlertRecipients;
  logger: Logger;
}

/** The alerts worker: mails each alert to its recipients; a failed message comes back for a retry. */
export function createAlertConsumer(deps: AlertConsumerDeps): QueueConsumer<UsageAlert> {
  return async (batch) => {
    const failed: string[] = [];
    for (const m of batch) {
      try {
        const a = m.body;
        const about = await deps.subject(a);
        if (!about) continue;
        const directory = await deps.recipients.forWorkspace(a.organisation_id, a.workspace_id);
        const to = [...new Set([...about.alert_emails, ...directory].map((e) => e.toLowerCase()))];
        if (to.length === 0) {
          deps.logger.warn('usage limit alert has no recipients', { source: a.source, sourceId: a.source_id, kind: a.kind });
          continue;
        }
        const { subject, text } = alertMessage(a, about);
        for (let i = 0; i < to.length; i += MAX_RECIPIENTS) {
          await deps.mailer.send({ to: to.slice(i, i + MAX_RECIPIENTS), subject, text, kind: `usage-limit.${a.kind}` });
        }
      } catch (err) {
        deps.logger.error('usage limit alert failed', { error: err, messageId: m.id });
        failed.push(m.id);
      }
    }
    return failed;
  };
}
