/**
 * Usage limits on managed providers, end to end through the local server (directly and through the
 * real Lambda handlers): a provider's budget is reserved when a target resolves to it, an exhausted
 * one refuses that target with 402 `budget_exhausted` while a fallback goes on to the next target,
 * the reservation settles to the real usage (to nothing when another target answered), and raising
 * the credit limit makes the provider usable again at once; the exhausted alert is mailed once.
 */
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ALERTS_QUEUE } from '../../layers/core/src/policy/limits/alerts.ts';
import { startLocalLimitsWorkers } from '../../layers/core/src/policy/limits/workers.ts';
import type { OutboxMailer } from '../../layers/core/src/ports/local/outbox-mailer.ts';
import { providerBudgetCounter } from '../../layers/core/src/policy/limits/hook.ts';
import { User } from '../../layers/core/src/store/identity.ts';
import { ManualClock } from '../../layers/core/src/ports/clock.ts';
import { startGantry, type TestGantry } from '../support/gantry.ts';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.ts';

type Json = Record<string, unknown>;

describe.each(['direct', 'lambda'] as const)('usage limits on providers (%s mode)', (mode) => {
  let gw: TestGantry;
  let mock: MockOpenAI;
  let wsKey: string;
  const clock = new ManualClock(Date.UTC(2026, 2, 1, 0, 0, 5));

  const chat = async (headers: Record<string, string>, body: Json = {}) => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'x-gw-api-key': wsKey, 'content-type': 'application/json', ...headers },
      // "Hi" plus max_tokens 20: 21 tokens reserved; the mock reports 12 used.
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 20, ...body }),
    });
    return { status: res.status, json: (await res.json()) as Json, headers: res.headers };
  };

  const used = async (providerId: string): Promise<number | undefined> => {
    await gw.deps.limits.hook.flush();
    const key = providerBudgetCounter(providerId, 'ALL');
    const out = await gw.deps.repos.table.doc.send(new GetCommand({ TableName: gw.deps.repos.table.tableName, Key: key, ConsistentRead: true }));
    return out.Item?.used as number | undefined;
  };

  const provider = async (slug: string, extra: Json = {}) =>
    gw.admin('POST', '/v1/providers', { name: `Provider ${slug}`, slug, integration_id: 'budgeted', workspace_id: 'default', ...extra });

  let stopWorkers: () => void;
  beforeAll(async () => {
    [gw, mock] = await Promise.all([startGantry(mode, {}, { clock }), startMockOpenAI()]);
    stopWorkers = startLocalLimitsWorkers(gw.deps, { resetEveryMs: 3_600_000 });
    wsKey = await gw.workspaceKey(['completions.write']);
    // An organisation owner, who receives the provider's alerts.
    const at = new Date(clock.now()).toISOString();
    const owner = {
      id: `owner-${mode}`,
      organisation_id: gw.boot.organisationId,
      email: `owner-${mode}@example.com`,
      first_name: null,
      last_name: null,
      role: 'owner' as const,
      created_at: at,
      last_updated_at: at,
    };
    await gw.deps.repos.table.doc.send(new PutCommand({ TableName: gw.deps.repos.table.tableName, Item: User.toItem(owner) }));
    const r = await gw.admin('POST', '/v1/integrations', {
      name: 'Budgeted',
      slug: 'budgeted',
      ai_provider_id: 'openai',
      key: 'sk-budgeted-0123456789abcdefghijklmnopqrstuvwxyz',
      configurations: { custom_host: `${mock.url}/v1` },
    });
    expect(r.status, JSON.stringify(r.json)).toBe(200);
  });
  afterAll(async () => {
    stopWorkers?.();
    await Promise.all([gw?.close(), mock?.close()]);
  });
  beforeEach(() => {
    mock.received.length = 0;
    mock.queue.length = 0;
  });

  it('stores, shows and validates a provider’s usage_limits', async () => {
    const created = await provider('shown', { usage_limits: { type: 'tokens', credit_limit: 1000, alert_threshold: 800, periodic_reset: 'monthly' } });
    expect(created.status, JSON.stringify(created.json)).toBe(200);
    const got = await gw.admin('GET', '/v1/providers/shown?workspace_id=default');
    expect(got.json.usage_limits).toEqual({ type: 'tokens', credit_limit: 1000, alert_threshold: 800, periodic_reset: 'monthly', periodic_reset_days: null });
    expect((await gw.admin('PUT', '/v1/providers/shown?workspace_id=default', { usage_limits: null })).status).toBe(200);
    expect((await gw.admin('GET', '/v1/providers/shown?workspace_id=default')).json.usage_limits).toBeNull();

    const cases: [Json, string][] = [
      [{ type: 'tokens' }, 'usage_limits.credit_limit'],
      [{ credit_limit: 5, next_usage_reset_at: '2027-01-01T00:00:00Z' }, 'usage_limits.next_usage_reset_at'],
      [{ credit_limit: 5, type: 'bytes' }, 'usage_limits.type'],
      [{ credit_limit: 5, periodic_reset: 'weekly', periodic_reset_days: 3 }, 'usage_limits.periodic_reset_days'],
      [{ credit_limit: -1 }, 'usage_limits.credit_limit'],
    ];
    for (const [usage_limits, path] of cases) {
      for (const r of [await provider('bad', { usage_limits }), await gw.admin('PUT', '/v1/providers/shown?workspace_id=default', { usage_limits })]) {
        expect(r.status, JSON.stringify(r.json)).toBe(400);
        expect(r.json.errorCode).toBe('AB01');
        expect((r.json.errors as { path: string }[]).map((p) => p.path)).toContain(path);
      }
    }
  });

  it('refuses an exhausted provider with 402, falls back to the next target, and reactivates when raised', async () => {
    const capped = await provider('capped', { usage_limits: { type: 'tokens', credit_limit: 30 } });
    expect(capped.status, JSON.stringify(capped.json)).toBe(200);
    const cappedId = capped.json.id as string;
    expect((await provider('free')).status).toBe(200);

    // 21 reserved of 30, settled to the 12 used.
    expect((await chat({ 'x-gw-provider': '@capped' })).status).toBe(200);
    expect(await used(cappedId)).toBe(12);

    // 12 + 21 > 30: the provider refuses before any call.
    const refused = await chat({ 'x-gw-provider': '@capped' });
    expect(refused.status, JSON.stringify(refused.json)).toBe(402);
    expect(refused.json.error).toMatchObject({ type: 'budget_exhausted', code: 'budget_exhausted' });
    expect((refused.json.error as Json).message).toMatch(/provider:@capped \(the provider @capped’s usage limit\): 18 tokens of 30 tokens left/);
    expect(mock.received).toHaveLength(1);
    // The exhausted alert is queued once, naming the provider.
    await gw.deps.limits.hook.flush();
    const counter = await gw.deps.repos.table.doc.send(
      new GetCommand({ TableName: gw.deps.repos.table.tableName, Key: providerBudgetCounter(cappedId, 'ALL'), ConsistentRead: true }),
    );
    expect(counter.Item?.exhausted_alert_sent).toBe(true);
    await gw.deps.queues.get(ALERTS_QUEUE).drain?.();
    await gw.deps.queues.get(ALERTS_QUEUE).drain?.();
    const mails = (await (gw.deps.mailer as OutboxMailer).list()).filter((m) => m.text.includes('Provider: capped'));
    expect(mails.map((m) => [m.kind, m.to])).toEqual([['usage-limit.exhausted', [`owner-${mode}@example.com`]]]);
    expect(mails[0]?.subject).toContain('provider "@capped"');

    // In a fallback, the refusal moves on to the next target; the capped provider keeps its usage.
    const config = { strategy: { mode: 'fallback' }, targets: [{ provider: '@capped' }, { provider: '@free' }] };
    const fell = await chat({ 'x-gw-config': JSON.stringify(config) });
    expect(fell.status, JSON.stringify(fell.json)).toBe(200);
    expect(fell.headers.get('x-gw-last-used-option-index')).toBe('config.targets[1]');
    expect(mock.received).toHaveLength(2);
    expect(await used(cappedId)).toBe(12);

    // A fallback whose every target is exhausted answers the refusal.
    const both = await chat({
      'x-gw-config': JSON.stringify({
        strategy: { mode: 'fallback' },
        targets: [{ provider: '@capped' }, { provider: '@capped', override_params: { model: 'gpt-4o' } }],
      }),
    });
    expect(both.status).toBe(402);
    expect(mock.received).toHaveLength(2);

    // Raising the credit limit above the usage makes it usable again at once.
    expect((await gw.admin('PUT', '/v1/providers/capped?workspace_id=default', { usage_limits: { type: 'tokens', credit_limit: 100 } })).status).toBe(200);
    const again = await chat({ 'x-gw-config': JSON.stringify(config) });
    expect(again.status).toBe(200);
    expect(again.headers.get('x-gw-last-used-option-index')).toBe('config.targets[0]');
    expect(await used(cappedId)).toBe(24);
  });

  it('gives the reservation back when the provider fails and another target answers', async () => {
    const r = await provider('flaky', { usage_limits: { type: 'tokens', credit_limit: 1000 } });
    expect(r.status).toBe(200);
    mock.queue.push({ kind: 'error', status: 500, body: '{"error":{"message":"boom"}}', contentType: 'application/json' });
    const config = { strategy: { mode: 'fallback' }, targets: [{ provider: '@flaky' }, { provider: '@free' }] };
    const res = await chat({ 'x-gw-config': JSON.stringify(config) });
    expect(res.status, JSON.stringify(res.json)).toBe(200);
    expect(res.headers.get('x-gw-last-used-option-index')).toBe('config.targets[1]');
    expect(await used(r.json.id as string)).toBe(0);
  });
});
