/**
 * The logs list's `total` on the first page comes from the analytics rollups, read alongside the
 * page. A busy workspace has thousands of rollup combinations an hour; past a fixed number of rollup
 * items the total is not worth its cost, so the page answers at once with `total: null`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
import { adminModule } from '../../../../../layers/core/src/admin/routes.ts';
import { LOGS_TOTAL_MAX_ROLLUP_ITEMS } from '../../../../../layers/core/src/admin/logs/routes.ts';
import { ensureBootstrap, type BootstrapResult } from '../../../../../layers/core/src/bootstrap.ts';
import type { CoreDeps } from '../../../../../layers/core/src/deps.ts';
import { createApp } from '../../../../../layers/core/src/app.ts';
import { addEvent, emptyAggregate, GROUP_DIMENSIONS, type GroupDimension } from '../../../../../layers/core/src/observability/aggregate.ts';
import { ingestConsumer, observability } from '../../../../../layers/core/src/observability/install.ts';
import { DAY_MS, HOUR_MS } from '../../../../../layers/core/src/observability/time.ts';
import { ManualClock } from '../../../../../layers/core/src/ports/clock.ts';
import { createTestDeps } from '../../../../support/deps.ts';
import { ADMIN_KEY } from '../../../../support/gantry.ts';
import { syntheticEvents } from '../../../../support/observability.ts';

const NOW = Date.UTC(2026, 4, 20, 12, 30, 0);
type Json = Record<string, unknown>;

describe('the logs total', () => {
  const clock = new ManualClock(NOW);
  let deps: CoreDeps;
  let boot: BootstrapResult;
  let app: ReturnType<typeof createApp>;

  const list = async (query: string): Promise<Json> => {
    const res = await app.request(`/v1/logs?workspace_id=default&page_size=5${query}`, { headers: { 'x-gw-api-key': ADMIN_KEY } });
    expect(res.status).toBe(200);
    return (await res.json()) as Json;
  };

  beforeAll(async () => {
    deps = await createTestDeps({}, { clock });
    boot = await ensureBootstrap(deps, ADMIN_KEY);
    const events = syntheticEvents(20, {
      start: NOW - 2 * HOUR_MS,
      spanMs: HOUR_MS,
      workspaceId: boot.workspaceId,
      organisationId: boot.organisationId,
      seed: 3,
    });
    expect(await ingestConsumer(deps)([{ id: 'm', attempts: 0, body: { kind: 'logs', events } }])).toEqual([]);
    app = createApp(deps, [adminModule]);
  });
  afterAll(() => deps.upstream.close());

  it('is counted while the rollups are few', async () => {
    const first = await list('');
    expect(first.total).toBe(20);
    expect(first.data).toHaveLength(5);
  });

  it('is null past the read budget, and the page still answers', async () => {
    // Yesterday's day rollups of as many API keys as the budget allows, and one more.
    const { rollups } = observability(deps);
    const [template] = syntheticEvents(1, { start: NOW - DAY_MS, spanMs: 1, workspaceId: boot.workspaceId, organisationId: boot.organisationId, seed: 4 });
    if (!template) throw new Error('no synthetic event');
    const bucket = Math.floor((NOW - DAY_MS) / DAY_MS) * DAY_MS;
    const items = Array.from({ length: LOGS_TOTAL_MAX_ROLLUP_ITEMS + 1 }, (_, i) => {
      const values = Object.fromEntries(GROUP_DIMENSIONS.map((d) => [d, d === 'api_key' ? `key-${i}` : '-'])) as Record<GroupDimension, string>;
      const agg = emptyAggregate();
      addEvent(agg, { ...template, api_key_id: `key-${i}` }, { start: bucket, gran: 'd' });
      return rollups.itemOf({ ws: boot.workspaceId, gran: 'd', bucket, values }, agg);
    });
    const { doc, tableName } = deps.repos.table;
    for (let i = 0; i < items.length; i += 25) {
      await doc.send(new BatchWriteCommand({ RequestItems: { [tableName]: items.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } })) } }));
    }
    const first = await list('');
    expect(first.total).toBeNull();
    expect(first.data).toHaveLength(5);
    expect(first.has_more).toBe(true);
    // A range without those rollups is counted again.
    const recent = await list(`&time_of_generation_min=${new Date(NOW - 3 * HOUR_MS).toISOString()}`);
    expect(recent.total).toBe(20);
  });
});
