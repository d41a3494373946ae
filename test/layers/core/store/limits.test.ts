/** The counter operations the limits rest on, against DynamoDB Local. */
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import type { CoreDeps } from '../../../../layers/core/src/deps.ts';
import { ManualClock } from '../../../../layers/core/src/ports/clock.ts';
import { PolicyCache } from '../../../../layers/core/src/policy/limits/policy-cache.ts';
import type { LimitsRepository, RateLimitPolicyRecord } from '../../../../layers/core/src/store/limits.ts';
import { createTestDeps } from '../../../support/deps.ts';
import { until } from '../../../support/until.ts';

describe('limit counters', () => {
  let deps: CoreDeps;
  let repo: LimitsRepository;
  const key = () => ({ pk: `test#${randomUUID()}`, sk: 'C' });

  beforeAll(async () => {
    deps = await createTestDeps();
    repo = deps.limits.repo;
  });

  it('reserves while the result stays within the limit, and says how much is used when it does not', async () => {
    const k = key();
    expect(await repo.reserve(k, 6, 10, { ttl: 123 })).toMatchObject({ ok: true, used: 6, item: { used: 6, ttl: 123 } });
    expect(await repo.reserve(k, 4, 10)).toMatchObject({ ok: true, used: 10 });
    expect(await repo.reserve(k, 1, 10)).toMatchObject({ ok: false, used: 10, item: { used: 10 } });
    // A request larger than the whole limit never fits, not even into an empty counter.
    const empty = key();
    expect(await repo.reserve(empty, 11, 10)).toMatchObject({ ok: false, used: 0 });
    expect(await repo.reserve(empty, 10, 10)).toMatchObject({ ok: true, used: 10 });
  });

  it('settles up and down, never below zero, and leaves a vanished counter alone', async () => {
    const k = key();
    await repo.reserve(k, 5, 100);
    expect((await repo.adjust(k, 7))?.used).toBe(12);
    expect((await repo.adjust(k, -2))?.used).toBe(10);
    // A reset took it to zero meanwhile: giving back more than is there clamps to zero.
    expect((await repo.adjust(k, -25))?.used).toBe(0);
    expect(await repo.adjust(k, 0)).toBeUndefined();
    expect(await repo.adjust(key(), 5)).toBeUndefined();
  });

  it('lets exactly one caller set an alert flag', async () => {
    const k = key();
    await repo.reserve(k, 1, 10);
    const wins = await Promise.all(Array.from({ length: 20 }, () => repo.markAlert(k, 'threshold_alert_sent')));
    expect(wins.filter(Boolean)).toHaveLength(1);
    expect(await repo.markAlert(key(), 'exhausted_alert_sent')).toBe(false);
    await repo.unmarkAlert(k, 'threshold_alert_sent');
    expect(await repo.markAlert(k, 'threshold_alert_sent')).toBe(true);
    await repo.markAlert(k, 'exhausted_alert_sent');
    await repo.clearCounterAlerts(k, ['threshold_alert_sent', 'exhausted_alert_sent']);
    expect(await repo.markAlert(k, 'threshold_alert_sent')).toBe(true);
    expect(await repo.markAlert(k, 'exhausted_alert_sent')).toBe(true);
    expect(await repo.counterUsed(k)).toBe(1);
    expect(await repo.counterUsed(key())).toBe(0);
    await repo.clearCounterAlerts(key(), ['threshold_alert_sent']);
  });
});

describe('policy cache', () => {
  it('serves from memory, refreshes after the TTL in the background, and drops on invalidate', async () => {
    const deps = await createTestDeps();
    const clock = new ManualClock();
    let reads = 0;
    const cache = new PolicyCache(deps.limits.repo, clock, 10_000, async () => {
      reads++;
      return { usage: [], rate: [] };
    });
    const ws = randomUUID();
    const now = new Date(clock.now()).toISOString();
    const policy: RateLimitPolicyRecord = {
      id: randomUUID(),
      name: null,
      organisation_id: 'org',
      workspace_id: ws,
      conditions: [{ key: 'api_key', value: '*' }],
      group_by: [{ key: 'api_key' }],
      type: 'requests',
      unit: 'rpm',
      value: 5,
      status: 'active',
      created_at: now,
      last_updated_at: now,
      created_by: null,
      last_updated_by: null,
    };
    // A burst on a cold workspace reads once.
    const cold = await Promise.all([cache.forWorkspace('org', ws), cache.forWorkspace('org', ws), cache.forWorkspace('org', ws)]);
    expect(cold.every((p) => p.rate.length === 0)).toBe(true);
    expect(reads).toBe(1);
    await deps.limits.repo.createRate(policy);
    expect((await cache.forWorkspace('org', ws)).rate).toHaveLength(0);
    clock.advance(10_000);
    // Stale: served once more while one read refreshes it.
    expect((await cache.forWorkspace('org', ws)).rate).toHaveLength(0);
    await until(async () => ((await cache.forWorkspace('org', ws)).rate.length > 0 ? true : undefined), 'the refreshed policies');
    expect((await cache.forWorkspace('org', ws)).rate).toHaveLength(1);
    expect(reads).toBe(2);
    await deps.limits.repo.putRate({ ...policy, status: 'archived' });
    cache.invalidate(ws);
    expect((await cache.forWorkspace('org', ws)).rate).toHaveLength(0);
    deps.upstream.close();
  });
});
