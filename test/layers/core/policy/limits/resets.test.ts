/**
 * Budget resets with an injected clock: usage starts afresh the moment a period begins, the reset
 * job records each reset once (however often or from however many places it runs), catches up
 * after downtime, and manual resets zero one group.
 */
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { PolicyService } from '../../../../../layers/core/src/admin/policies/service.ts';
import { ensureBootstrap } from '../../../../../layers/core/src/bootstrap.ts';
import type { CoreDeps } from '../../../../../layers/core/src/deps.ts';
import type { GatewayRecord } from '../../../../../layers/core/src/kernel/lifecycle.ts';
import { UsageExhaustedError } from '../../../../../layers/core/src/http/errors.ts';
import { toPrincipal } from '../../../../../layers/core/src/policy/key-auth.ts';
import { runResets } from '../../../../../layers/core/src/policy/limits/workers.ts';
import type { Principal } from '../../../../../layers/core/src/kernel/principal.ts';
import { ManualClock } from '../../../../../layers/core/src/ports/clock.ts';
import { createUsageResetHandler } from '../../../../../lambdas/workers/usage-reset/handler.ts';
import { createTestDeps, createTestDepsOn } from '../../../../support/deps.ts';
import { keyRecord } from '../../../../support/records.ts';

const ADMIN = 'gw_resets-test-owner-key-0123456789abcdefgh';
/** A Wednesday. */
const WED = Date.parse('2026-01-07T15:00:00Z');

describe('periodic usage resets', () => {
  const clock = new ManualClock(WED);
  let deps: CoreDeps;
  let owner: Principal;
  let workspaceId: string;
  let organisationId: string;

  const newPrincipal = async (): Promise<Principal> => {
    const key = keyRecord({ organisation_id: organisationId, workspace_id: workspaceId }, clock.now());
    await deps.repos.apiKeys.create(key.record);
    return toPrincipal(key.record);
  };

  /** A request of 10 tokens through the limits hook, settled. */
  const request = async (principal: Principal): Promise<'ok' | 'refused'> => {
    const record: GatewayRecord = {
      id: randomUUID(),
      traceId: randomUUID(),
      endpoint: 'chatComplete',
      method: 'POST',
      path: '/v1/chat/completions',
      startedAt: clock.now(),
      principal,
      metadata: {},
      stream: false,
      request: { model: 'm', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 9 },
    };
    try {
      await deps.limits.hook.admit(record);
    } catch (err) {
      if (err instanceof UsageExhaustedError) return 'refused';
      throw err;
    }
    Object.assign(record, { upstreamHeadersAt: clock.now(), status: 200, usage: { prompt_tokens: 1, completion_tokens: 9, total_tokens: 10 } });
    deps.limits.hook.complete(record);
    await deps.limits.hook.flush();
    return 'ok';
  };

  const budget = async (principal: Principal, patch: Record<string, unknown>) => {
    const { id } = await new PolicyService(deps).createUsage(owner, {
      conditions: [{ key: 'api_key', value: principal.keyId }],
      group_by: [{ key: 'api_key' }],
      type: 'tokens',
      credit_limit: 15,
      workspace_id: workspaceId,
      ...patch,
    });
    return id;
  };

  const policy = (id: string) => new PolicyService(deps).getUsage(owner, id);
  const usage = async (id: string) => (await new PolicyService(deps).entities(owner, id, {})).map((e) => e.current_usage);

  beforeAll(async () => {
    deps = await createTestDeps({}, { clock });
    const boot = await ensureBootstrap(deps, ADMIN);
    organisationId = boot.organisationId;
    workspaceId = boot.workspaceId;
    owner = await deps.keyAuth.authenticate(ADMIN);
  });

  it('starts a weekly budget afresh on Monday and records the reset once', async () => {
    clock.set(WED);
    const p = await newPrincipal();
    const id = await budget(p, { periodic_reset: 'weekly' });
    expect((await policy(id)).next_usage_reset_at).toBe('2026-01-12T00:00:00.000Z');
    expect(await request(p)).toBe('ok');
    expect(await request(p)).toBe('refused');
    expect(await usage(id)).toEqual([10]);
    expect((await runResets(deps)).reset).not.toContain(id);

    // Monday: the new period's counter starts at zero, before the job has run.
    clock.set(Date.parse('2026-01-12T00:00:01Z'));
    expect(await usage(id)).toEqual([]);
    expect(await request(p)).toBe('ok');
    expect((await runResets(deps)).reset).toContain(id);
    expect(await policy(id)).toMatchObject({ last_reset_at: '2026-01-12T00:00:00.000Z', next_usage_reset_at: '2026-01-19T00:00:00.000Z' });
    // Again, and from another instance at once: nothing more is recorded.
    const other = createTestDepsOn(deps.config.tableName, {}, { clock });
    const again = await Promise.all([runResets(deps), runResets(other), runResets(deps)]);
    expect(again.flatMap((r) => r.reset)).not.toContain(id);
    expect(await policy(id)).toMatchObject({ last_reset_at: '2026-01-12T00:00:00.000Z', next_usage_reset_at: '2026-01-19T00:00:00.000Z' });
    other.upstream.close();
  });

  it('catches up after missed runs, recording the latest reset only', async () => {
    clock.set(WED);
    const p = await newPrincipal();
    const id = await budget(p, { periodic_reset_days: 3 });
    expect((await policy(id)).next_usage_reset_at).toBe('2026-01-10T15:00:00.000Z');
    clock.set(Date.parse('2026-01-20T00:00:00Z'));
    const runs = await Promise.all([runResets(deps), runResets(deps)]);
    expect(runs.flatMap((r) => r.reset).filter((x) => x === id)).toHaveLength(1);
    // Lattice: Jan 10 15:00 + 3 days each: Jan 19 15:00 is the latest, Jan 22 15:00 the next.
    expect(await policy(id)).toMatchObject({ last_reset_at: '2026-01-19T15:00:00.000Z', next_usage_reset_at: '2026-01-22T15:00:00.000Z' });
  });

  it('resets monthly from a given date, keeping its day', async () => {
    clock.set(WED);
    const p = await newPrincipal();
    const id = await budget(p, { periodic_reset: 'monthly', next_usage_reset_at: '2026-01-31T08:00:00Z' });
    expect(await request(p)).toBe('ok');
    clock.set(Date.parse('2026-02-01T00:00:00Z'));
    expect(await usage(id)).toEqual([]);
    expect((await runResets(deps)).reset).toContain(id);
    expect(await policy(id)).toMatchObject({ last_reset_at: '2026-01-31T08:00:00.000Z', next_usage_reset_at: '2026-02-28T08:00:00.000Z' });
    clock.set(Date.parse('2026-03-01T00:00:00Z'));
    await runResets(deps);
    expect(await policy(id)).toMatchObject({ last_reset_at: '2026-02-28T08:00:00.000Z', next_usage_reset_at: '2026-03-31T08:00:00.000Z' });
  });

  it('resets one group by hand, and by value key on update', async () => {
    clock.set(WED);
    const p = await newPrincipal();
    const id = await budget(p, { credit_limit: 25 });
    await request(p);
    await request(p);
    expect(await request(p)).toBe('refused');
    const [entity] = await new PolicyService(deps).entities(owner, id, {});
    expect(entity).toMatchObject({ value_key: `api_key:${p.keyId}`, current_usage: 20, status: 'active' });
    await new PolicyService(deps).resetEntity(owner, id, entity!.id);
    expect(await usage(id)).toEqual([0]);
    expect((await new PolicyService(deps).entities(owner, id, {}))[0]?.last_reset_at).toBe(new Date(clock.now()).toISOString());
    await request(p);
    await request(p);
    await new PolicyService(deps).updateUsage(owner, id, { reset_usage_for_value: `api_key:${p.keyId}` });
    expect(await usage(id)).toEqual([0]);
    expect(await request(p)).toBe('ok');
  });

  it('a policy without resets and an archived one are not scheduled', async () => {
    clock.set(WED);
    const p = await newPrincipal();
    const plain = await budget(p, {});
    const weekly = await budget(p, { periodic_reset: 'weekly' });
    await new PolicyService(deps).deleteUsage(owner, weekly);
    const entries = (await deps.limits.repo.resetEntries()).map((e) => e.policy_id);
    expect(entries).not.toContain(plain);
    expect(entries).not.toContain(weekly);
  });

  it('runs as the usage-reset Lambda', async () => {
    clock.set(WED);
    const p = await newPrincipal();
    const id = await budget(p, { periodic_reset: 'weekly' });
    clock.set(Date.parse('2026-01-13T00:00:00Z'));
    const handler = createUsageResetHandler(() => Promise.resolve(deps));
    const result = await handler({ source: 'aws.scheduler' }, {} as never);
    expect(result.reset).toContain(id);
  });
});
