/** The limits alerts worker as Lambda runs it: an SQS event in, mail out, failures reported per message. */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Context, SQSEvent, SQSRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { PolicyService } from '../../../layers/core/src/admin/policies/service.ts';
import { ensureBootstrap } from '../../../layers/core/src/bootstrap.ts';
import type { UsageAlert } from '../../../layers/core/src/policy/limits/alerts.ts';
import { OutboxMailer } from '../../../layers/core/src/ports/local/outbox-mailer.ts';
import { createLimitsAlertsHandler } from '../../../lambdas/workers/limits-alerts/handler.ts';
import { createTestDeps } from '../../support/deps.ts';
import { sqsRecord as queueRecord } from '../../support/sqs-event.ts';

const ADMIN = 'gw_alerts-worker-owner-key-0123456789abcdef';

const sqsRecord = (body: string): SQSRecord => queueRecord(body, 'alerts');

describe('limits alerts worker', () => {
  it('mails each alert and reports the unreadable message as failed', async () => {
    const outbox = mkdtempSync(path.join(os.tmpdir(), 'gantry-alerts-worker-'));
    const deps = await createTestDeps({ GW_OUTBOX_DIR: outbox });
    const boot = await ensureBootstrap(deps, ADMIN);
    const owner = await deps.keyAuth.authenticate(ADMIN);
    const { id } = await new PolicyService(deps).createUsage(owner, {
      name: 'Team budget',
      conditions: [{ key: 'workspace_id', value: '*' }],
      group_by: [{ key: 'metadata._user' }],
      type: 'cost',
      credit_limit: 100,
      alert_threshold: 80,
      alert_emails: ['lead@example.com'],
      workspace_id: boot.workspaceId,
    });
    const alert: UsageAlert = {
      kind: 'exhausted',
      source: 'policy',
      source_id: id,
      organisation_id: boot.organisationId,
      workspace_id: boot.workspaceId,
      entity_id: 'e1',
      value_key: 'metadata._user:alice',
      period: 'ALL',
      type: 'cost',
      usage: 100.5,
      credit_limit: 100,
      alert_threshold: 80,
      at: '2026-01-01T00:00:00.000Z',
    };
    const good = sqsRecord(JSON.stringify(alert));
    const bad = sqsRecord('{not json');
    const handler = createLimitsAlertsHandler(() => Promise.resolve(deps));
    const out = await handler({ Records: [good, bad] } satisfies SQSEvent, {} as Context);
    expect(out).toEqual({ batchItemFailures: [{ itemIdentifier: bad.messageId }] });
    const mails = await new OutboxMailer(outbox).list();
    expect(mails).toHaveLength(1);
    expect(mails[0]).toMatchObject({
      kind: 'usage-limit.exhausted',
      to: ['lead@example.com'],
      subject: 'Gantry: the usage limit of usage limits policy "Team budget" is exhausted (metadata._user:alice)',
    });
    expect(mails[0]?.text).toContain('Usage this period: $100.50');
    deps.upstream.close();
  });
});
