/**
 * Usage limit alerts: each crossing is reported exactly once, however many requests on however many
 * instances see it; raising the limit or the threshold re-arms them; the worker mails the policy's
 * `alert_emails` and the organisation's admins and the workspace's managers, and retries failures.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBootstrap } from '../../../../../layers/core/src/bootstrap.ts';
import { PolicyService } from '../../../../../layers/core/src/admin/policies/service.ts';
import type { CoreDeps } from '../../../../../layers/core/src/deps.ts';
import type { GatewayRecord } from '../../../../../layers/core/src/kernel/lifecycle.ts';
import { UsageExhaustedError } from '../../../../../layers/core/src/http/errors.ts';
import { toPrincipal } from '../../../../../layers/core/src/policy/key-auth.ts';
import { ALERTS_QUEUE, createAlertConsumer, type UsageAlert } from '../../../../../layers/core/src/policy/limits/alerts.ts';
import { alertsConsumer } from '../../../../../layers/core/src/policy/limits/workers.ts';
import type { Principal } from '../../../../../layers/core/src/kernel/principal.ts';
import { OutboxMailer } from '../../../../../layers/core/src/ports/local/outbox-mailer.ts';
import type { Mailer } from '../../../../../layers/core/src/ports/mailer.ts';
import { IdentityRepository } from '../../../../../layers/core/src/store/identity.ts';
import { createTestDeps, createTestDepsOn } from '../../../../support/deps.ts';
import { keyRecord } from '../../../../support/records.ts';

const ADMIN = 'gw_alerts-test-owner-key-0123456789abcdefgh';

describe('usage limit alerts', () => {
  const outboxDir = mkdtempSync(path.join(os.tmpdir(), 'gantry-alerts-'));
  const instances: CoreDeps[] = [];
  let owner: Principal;
  let principal: Principal;
  let workspaceId: string;
  let organisationId: string;

  /** One gateway request through an instance's limits hook: admitted, answered with `used` tokens, settled. */
  const request = async (deps: CoreDeps, used = 10): Promise<'ok' | 'refused'> => {
    const record: GatewayRecord = {
      id: randomUUID(),
      traceId: randomUUID(),
      endpoint: 'chatComplete',
      method: 'POST',
      path: '/v1/chat/completions',
      startedAt: deps.clock.now(),
      principal,
      metadata: {},
      stream: false,
      // "Hi" (1 token) + 9: each request reserves 10.
      request: { model: 'm', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 9 },
    };
    try {
      await deps.limits.hook.admit(record);
    } catch (err) {
      if (err instanceof UsageExhaustedError) return 'refused';
      throw err;
    }
    Object.assign(record, { upstreamHeadersAt: deps.clock.now(), status: 200, usage: { prompt_tokens: 1, completion_tokens: used - 1, total_tokens: used } });
    deps.limits.hook.complete(record);
    return 'ok';
  };

  const settleAndMail = async () => {
    for (const deps of instances) await deps.limits.hook.flush();
    for (const deps of instances) await deps.queues.get(ALERTS_QUEUE).drain?.();
  };

  const mails = async (policyId: string) => (await new OutboxMailer(outboxDir).list()).filter((m) => m.text.includes(policyId));

  beforeAll(async () => {
    const first = await createTestDeps({ GW_OUTBOX_DIR: outboxDir });
    const boot = await ensureBootstrap(first, ADMIN);
    organisationId = boot.organisationId;
    workspaceId = boot.workspaceId;
    instances.push(
      first,
      createTestDepsOn(first.config.tableName, { GW_OUTBOX_DIR: outboxDir }),
      createTestDepsOn(first.config.tableName, { GW_OUTBOX_DIR: outboxDir }),
    );
    for (const deps of instances) deps.queues.get<UsageAlert>(ALERTS_QUEUE).setConsumer?.(alertsConsumer(deps));
    owner = await first.keyAuth.authenticate(ADMIN);
  });
  afterAll(() => {
    for (const deps of instances) deps.upstream.close();
  });

  const createBudget = async (patch: Record<string, unknown> = {}) => {
    // Each budget counts a key of its own.
    const key = keyRecord({ organisation_id: organisationId, workspace_id: workspaceId }, instances[0]!.clock.now());
    await instances[0]!.repos.apiKeys.create(key.record);
    principal = toPrincipal(key.record);
    return (
      await new PolicyService(instances[0]!).createUsage(owner, {
        name: `alerts ${randomUUID()}`,
        conditions: [{ key: 'api_key', value: principal.keyId }],
        group_by: [{ key: 'api_key' }],
        type: 'tokens',
        credit_limit: 1000,
        alert_threshold: 500,
        alert_emails: ['finance@example.com'],
        workspace_id: workspaceId,
        ...patch,
      })
    ).id;
  };

  const update = (id: string, body: Record<string, unknown>) => new PolicyService(instances[0]!).updateUsage(owner, id, body);

  /** Every instance sees policy changes at once (as after their cache TTL). */
  const refreshCaches = () => {
    for (const deps of instances) deps.limits.policies.invalidate();
  };

  it('reports each crossing once across instances under concurrency, and re-arms on a raised limit or threshold', async () => {
    const id = await createBudget();
    refreshCaches();
    // 120 requests of 10 tokens at once over three instances: 100 fit in 1000.
    const outcomes = await Promise.all(Array.from({ length: 120 }, (_, n) => request(instances[n % 3]!)));
    expect(outcomes.filter((o) => o === 'ok')).toHaveLength(100);
    await settleAndMail();
    // Each crossing once; under concurrency the two crossings race, so their order is not fixed.
    const sent = await mails(id);
    expect(sent.map((m) => m.kind).sort()).toEqual(['usage-limit.exhausted', 'usage-limit.threshold']);
    expect(sent.find((m) => m.kind === 'usage-limit.threshold')).toMatchObject({
      to: ['finance@example.com'],
      subject: expect.stringContaining('reached its alert threshold'),
    });
    expect(sent.find((m) => m.kind === 'usage-limit.exhausted')?.text).toContain('Usage this period: 1,000 tokens');

    // A raised limit re-arms both: the usage is already past the threshold, so the next request reports it.
    await update(id, { credit_limit: 2000 });
    refreshCaches();
    expect(await request(instances[1]!)).toBe('ok');
    await settleAndMail();
    const rearmed = (await mails(id)).map((m) => m.kind);
    expect(rearmed).toHaveLength(3);
    expect(rearmed[2]).toBe('usage-limit.threshold');

    // A raised threshold re-arms the threshold alert only; it fires when usage reaches it.
    await update(id, { alert_threshold: 1200 });
    refreshCaches();
    await Promise.all(Array.from({ length: 18 }, (_, n) => request(instances[n % 3]!)));
    await settleAndMail();
    expect(await mails(id)).toHaveLength(3);
    await Promise.all(Array.from({ length: 10 }, (_, n) => request(instances[n % 3]!)));
    await settleAndMail();
    expect((await mails(id)).map((m) => m.kind).slice(3)).toEqual(['usage-limit.threshold']);

    // No threshold: no threshold alerts; exhaustion still reports once.
    await update(id, { alert_threshold: null });
    refreshCaches();
    const rest = await Promise.all(Array.from({ length: 100 }, (_, n) => request(instances[n % 3]!)));
    expect(rest.filter((o) => o === 'ok')).toHaveLength(71);
    await settleAndMail();
    expect((await mails(id)).map((m) => m.kind).slice(4)).toEqual(['usage-limit.exhausted']);
  });

  it('reports exhaustion on the first refusal when usage stops short of the limit', async () => {
    const id = await createBudget({ credit_limit: 25, alert_threshold: null });
    refreshCaches();
    expect(await request(instances[0]!, 10)).toBe('ok');
    expect(await request(instances[1]!, 10)).toBe('ok');
    await settleAndMail();
    // 20 used, 10 more would be 30 > 25.
    expect(await Promise.all([request(instances[0]!), request(instances[1]!), request(instances[2]!)])).toEqual(['refused', 'refused', 'refused']);
    await settleAndMail();
    expect((await mails(id)).map((m) => m.kind)).toEqual(['usage-limit.exhausted']);
  });

  it('mails the organisation admins and the workspace managers, and retries what fails', async () => {
    const deps = instances[0]!;
    const identity = new IdentityRepository(deps.repos.table);
    const now = new Date(deps.clock.now()).toISOString();
    const user = (email: string, role: 'owner' | 'admin' | 'member') => ({
      id: randomUUID(),
      organisation_id: organisationId,
      email,
      first_name: null,
      last_name: null,
      role,
      created_at: now,
      last_updated_at: now,
    });
    const users = [
      user('owner@example.com', 'owner'),
      user('admin@example.com', 'admin'),
      user('manager@example.com', 'member'),
      user('member@example.com', 'member'),
    ];
    for (const u of users) await deps.repos.table.transact(identity.userPuts(u));
    await identity.addMembers([
      { organisation_id: organisationId, workspace_id: workspaceId, user_id: users[2]!.id, role: 'manager', created_at: now, last_updated_at: now },
      { organisation_id: organisationId, workspace_id: workspaceId, user_id: users[3]!.id, role: 'member', created_at: now, last_updated_at: now },
    ]);
    const id = await createBudget();
    const alert: UsageAlert = {
      kind: 'threshold',
      source: 'policy',
      source_id: id,
      organisation_id: organisationId,
      workspace_id: workspaceId,
      entity_id: 'e',
      value_key: 'api_key:k',
      period: 'ALL',
      type: 'tokens',
      usage: 600,
      credit_limit: 1000,
      alert_threshold: 500,
      at: now,
    };
    const sent: { to: readonly string[]; kind: string }[] = [];
    let failNext = true;
    const mailer: Mailer = {
      send: async (m) => {
        if (failNext) {
          failNext = false;
          throw new Error('SES is down');
        }
        sent.push({ to: m.to, kind: m.kind });
      },
    };
    const consumer = createAlertConsumer({ subject: deps.limits.subjects, mailer, recipients: deps.limits.recipients, logger: deps.logger });
    const batch = [
      { id: 'm1', attempts: 0, body: alert },
      { id: 'm2', attempts: 0, body: { ...alert, source_id: randomUUID() } },
      { id: 'm3', attempts: 0, body: { ...alert, source: 'api_key' as const, source_id: principal.keyId } },
    ];
    // m1 fails (the mailer throws once), m2's policy does not exist, m3 has no alert_emails of its own.
    expect(await consumer(batch)).toEqual(['m1']);
    const sorted = (list: readonly string[] | undefined) => [...(list ?? [])].sort();
    expect(sent).toHaveLength(1);
    expect(sent[0]?.kind).toBe('usage-limit.threshold');
    expect(sorted(sent[0]?.to)).toEqual(['admin@example.com', 'manager@example.com', 'owner@example.com']);
    expect(await consumer([batch[0]!])).toEqual([]);
    expect(sorted(sent[1]?.to)).toEqual(['admin@example.com', 'finance@example.com', 'manager@example.com', 'owner@example.com']);
  });
});
