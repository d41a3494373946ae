/**
 * The workspace totals (one item per bucket) that unfiltered charts read, beside the combinations:
 * written by the ingest with the combinations, read only for buckets they are complete for, and
 * always agreeing with the combinations. Counted on DynamoDB Local.
 */
import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CoreDeps } from '../../../../layers/core/src/deps.ts';
import { RollupStore, rollupsOf, TOTALS_SETTLE_MS } from '../../../../layers/core/src/observability/rollups.ts';
import { DAY_MS, HOUR_MS, MINUTE_MS } from '../../../../layers/core/src/observability/time.ts';
import { ManualClock } from '../../../../layers/core/src/ports/clock.ts';
import { createTestDeps } from '../../../support/deps.ts';
import { syntheticEvents } from '../../../support/observability.ts';
import { counting, ingestRollups, sumOf } from '../../../support/rollups.ts';

const T0 = Date.UTC(2026, 4, 4, 9, 20, 0);

describe('rollup totals', () => {
  let deps: CoreDeps;
  beforeAll(async () => {
    deps = await createTestDeps();
  });
  afterAll(() => deps.upstream.close());

  it('an unfiltered range reads one total per bucket, whatever the combinations, with the same figures', async () => {
    const clock = new ManualClock(T0);
    const { doc, tableName } = deps.repos.table;
    const writer = new RollupStore(doc, tableName, 365, () => clock.now());
    // The first batch marks when the workspace's totals start.
    await ingestRollups(writer, syntheticEvents(5, { start: T0 - MINUTE_MS, spanMs: MINUTE_MS, workspaceId: 'ws-totals', seed: 2 }));
    // A day later: 3 hours of traffic over many models, keys and statuses.
    const start = T0 - (T0 % DAY_MS) + 2 * DAY_MS;
    const events = syntheticEvents(150, { start, spanMs: 3 * HOUR_MS, workspaceId: 'ws-totals', seed: 7 });
    clock.set(start + 4 * HOUR_MS);
    await ingestRollups(writer, events);

    const { proxy, read } = counting(doc);
    const reader = new RollupStore(proxy, tableName, 365, () => clock.now());
    const rows = await reader.query('ws-totals', 'all', { gran: 'h', start, end: start + 3 * HOUR_MS });
    expect(read).toEqual({ RC: 0, RT: 3, RD: 0, RS: 0 });
    expect(rows.map((r) => r.bucket).sort()).toEqual([start, start + HOUR_MS, start + 2 * HOUR_MS]);
    const byHour = (h: number) => events.filter((e) => e.started_ms >= start + h * HOUR_MS && e.started_ms < start + (h + 1) * HOUR_MS);
    for (const r of rows) {
      const want = sumOf(byHour((r.bucket - start) / HOUR_MS));
      expect(r.agg.sums).toEqual(want.sums);
      expect(r.agg.counters).toEqual(want.counters);
      expect(r.agg.users).toEqual(want.users);
    }
    // The same range grouped by model reads the model items (one per model and hour), and adds up to the totals.
    const byModel = await reader.query('ws-totals', 'model', { gran: 'h', start, end: start + 3 * HOUR_MS });
    expect(read.RC).toBe(0);
    expect(read.RD).toBe(byModel.length);
    expect(read.RD).toBe(new Set(events.map((e) => `${Math.floor(e.started_ms / HOUR_MS)}|${e.model}`)).size);
    expect(byModel.reduce((n, r) => n + r.agg.sums.n, 0)).toBe(150);
    expect(byModel.reduce((c, r) => c + r.agg.sums.cost, 0)).toBeCloseTo(
      rows.reduce((c, r) => c + r.agg.sums.cost, 0),
      6,
    );
  });

  it('buckets from before the totals were written (an upgraded table) are read from the combinations', async () => {
    const clock = new ManualClock(T0);
    const { doc, tableName } = deps.repos.table;
    const writer = new RollupStore(doc, tableName, 365, () => clock.now());
    // Written by the earlier release: combinations only, no totals, no marker.
    const old = syntheticEvents(120, { start: T0 - 3 * HOUR_MS, spanMs: 3 * HOUR_MS, workspaceId: 'ws-upgraded', seed: 3 });
    await ingestRollups(writer, old, (key) => !key.total && !key.dim);
    // The new release ingests from T0 on (its first batch at T0 writes the marker).
    const fresh = syntheticEvents(80, { start: T0, spanMs: 4 * HOUR_MS, workspaceId: 'ws-upgraded', seed: 4 });
    await ingestRollups(writer, fresh);
    clock.set(T0 + 5 * HOUR_MS);

    const { proxy, read } = counting(doc);
    const reader = new RollupStore(proxy, tableName, 365, () => clock.now());
    const from = T0 - 3 * HOUR_MS - (T0 % HOUR_MS);
    const rows = await reader.query('ws-upgraded', 'all', { gran: 'h', start: from, end: from + 8 * HOUR_MS });
    expect(rows.reduce((n, r) => n + r.agg.sums.n, 0)).toBe(200);
    // Hours that start at least TOTALS_SETTLE_MS after the marker come from the totals (10:00 to 13:00), the earlier ones from the combinations.
    const cut = Math.ceil((T0 + TOTALS_SETTLE_MS) / HOUR_MS) * HOUR_MS;
    expect(cut).toBe(T0 - (T0 % HOUR_MS) + HOUR_MS);
    expect(read.RT).toBe(new Set(fresh.filter((e) => e.started_ms >= cut).map((e) => Math.floor(e.started_ms / HOUR_MS))).size);
    expect(read.RT).toBe(4);
    for (const r of rows) {
      const want = [...old, ...fresh].filter((e) => Math.floor(e.started_ms / HOUR_MS) * HOUR_MS === r.bucket).length;
      expect(r.agg.sums.n, new Date(r.bucket).toISOString()).toBe(want);
    }
  });

  it('concurrent first adds of a workspace write its marker once, and the earliest time is kept', async () => {
    const clock = new ManualClock(T0);
    const { doc, tableName } = deps.repos.table;
    const updates: string[] = [];
    const spy = new Proxy(doc, {
      get: (target, prop) =>
        prop === 'send'
          ? (c: { input?: { Key?: { pk?: string } } }) => (updates.push(String(c.input?.Key?.pk ?? '')), target.send(c as never))
          : Reflect.get(target, prop),
    }) as DynamoDBDocumentClient;
    const a = new RollupStore(spy, tableName, 365, () => clock.now());
    const events = syntheticEvents(30, { start: T0, spanMs: MINUTE_MS, workspaceId: 'ws-marker', seed: 9 });
    const pending = [...rollupsOf(events.map((event) => ({ messageId: event.id, event }))).values()].filter((p) => p.key.total);
    await Promise.all(pending.map((p) => a.add(p.key, p.agg)));
    expect(updates.filter((pk) => pk === 'RTFROM#ws-marker')).toHaveLength(1);
    // Another process, later, keeps the first time.
    clock.set(T0 + DAY_MS);
    const b = new RollupStore(doc, tableName, 365, () => clock.now());
    await Promise.all(pending.map((p) => b.add(p.key, p.agg)));
    const marker = await doc.send(new GetCommand({ TableName: tableName, Key: { pk: 'RTFROM#ws-marker', sk: 'RTFROM' } }));
    expect(marker.Item?.from).toBe(T0);
  });
});

describe('rollup totals, segments as callers give them', () => {
  let deps: CoreDeps;
  beforeAll(async () => {
    deps = await createTestDeps();
  });
  afterAll(() => deps.upstream.close());

  it('a day segment whose end is past midnight but not aligned still reads each day once, totals or not', async () => {
    const clock = new ManualClock(T0);
    const { doc, tableName } = deps.repos.table;
    const store = new RollupStore(doc, tableName, 365, () => clock.now());
    const day = T0 - (T0 % DAY_MS);
    // Marked at T0; events on the next two days, whose day buckets are complete in the totals.
    await ingestRollups(store, syntheticEvents(3, { start: T0, spanMs: MINUTE_MS, workspaceId: 'ws-unaligned', seed: 1 }));
    const later = syntheticEvents(20, { start: day + DAY_MS, spanMs: 2 * DAY_MS, workspaceId: 'ws-unaligned', seed: 5 });
    await ingestRollups(store, later);
    clock.set(day + 3 * DAY_MS);
    for (const end of [day + 3 * DAY_MS, day + 2 * DAY_MS + 16 * HOUR_MS + 6 * MINUTE_MS, day + DAY_MS + 5 * MINUTE_MS]) {
      const rows = await store.query('ws-unaligned', 'all', { gran: 'd', start: day, end });
      const lastStart = end - DAY_MS;
      const want = [...later, ...syntheticEvents(3, { start: T0, spanMs: MINUTE_MS, workspaceId: 'ws-unaligned', seed: 1 })].filter(
        (e) => Math.floor(e.started_ms / DAY_MS) * DAY_MS <= lastStart,
      ).length;
      expect(
        rows.reduce((n, r) => n + r.agg.sums.n, 0),
        new Date(end).toISOString(),
      ).toBe(want);
    }
  });
});
