/**
 * The items per dimension value that grouped and filtered charts read: at most ADMITTED_PER_BUCKET
 * values of a dimension get an item of their own per bucket, the rest are summed in its
 * remainder, so a grouped read costs a bounded number of items however many API keys an
 * organisation has, and every figure still adds up. Counted on DynamoDB Local.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CoreDeps } from '../../../../layers/core/src/deps.ts';
import { Analytics } from '../../../../layers/core/src/observability/analytics.ts';
import { columnFigures, groupRows } from '../../../../layers/core/src/observability/analytics-views.ts';
import type { LogEvent } from '../../../../layers/core/src/observability/log-event.ts';
import { LogStore } from '../../../../layers/core/src/observability/log-store.ts';
import { ADMITTED_PER_BUCKET } from '../../../../layers/core/src/observability/rollup-admission.ts';
import { OTHER, RollupStore, TOTALS_SETTLE_MS } from '../../../../layers/core/src/observability/rollups.ts';
import { HOUR_MS, MINUTE_MS } from '../../../../layers/core/src/observability/time.ts';
import { ManualClock } from '../../../../layers/core/src/ports/clock.ts';
import { createTestDeps } from '../../../support/deps.ts';
import { syntheticEvents } from '../../../support/observability.ts';
import { counting, ingestRollups } from '../../../support/rollups.ts';

const T0 = Date.UTC(2026, 5, 8, 10, 0, 0);
const HOUR = T0 + 2 * HOUR_MS;
const CAP = ADMITTED_PER_BUCKET.h;

/** Events in the hour after HOUR, key `key-<i>` sending `weight(i)` of them, in its first three minutes. */
function perKey(ws: string, keys: number, weight: (i: number) => number, seed: number): LogEvent[] {
  const out: LogEvent[] = [];
  const base = syntheticEvents(8, { start: HOUR, spanMs: MINUTE_MS, workspaceId: ws, seed });
  for (let i = 0; i < keys; i++) {
    for (let k = 0; k < weight(i); k++) {
      const e = base[k % base.length] as LogEvent;
      out.push({ ...e, id: `${ws}-${i}-${k}`, api_key_id: `key-${i}`, started_ms: HOUR + (k % 3) * MINUTE_MS + i });
    }
  }
  return out;
}
/** Key i sends 30 - i requests (the busiest are keys 0, 1, 2 ...), keys from 30 on one each. */
const falling = (i: number) => Math.max(1, 30 - i);

const countBy = (events: readonly LogEvent[], f: (e: LogEvent) => string) => {
  const m = new Map<string, number>();
  for (const e of events) m.set(f(e), (m.get(f(e)) ?? 0) + 1);
  return m;
};

describe('rollup items per dimension value', () => {
  let deps: CoreDeps;
  const clock = new ManualClock(T0);
  beforeAll(async () => {
    deps = await createTestDeps({}, { clock });
  });
  afterAll(() => deps.upstream.close());

  const store = (doc = deps.repos.table.doc) => new RollupStore(doc, deps.repos.table.tableName, 365, () => clock.now());
  /** A workspace whose value items started before T0's hour (as a running deployment's have), then `events` ingested by `workers` processes. */
  async function ingested(ws: string, events: (ws: string) => LogEvent[], workers = 1): Promise<LogEvent[]> {
    clock.set(T0);
    await ingestRollups(store(), syntheticEvents(1, { start: T0, spanMs: MINUTE_MS, workspaceId: ws, seed: 1 }));
    const all = events(ws);
    clock.set(HOUR + 2 * HOUR_MS);
    // Each process with its own memory of the admitted sets, each a share of the keys.
    const share = (w: number) => all.filter((e) => Number(e.api_key_id?.slice(4)) % workers === w);
    await Promise.all(Array.from({ length: workers }, (_, w) => ingestRollups(store(), share(w))));
    return all;
  }

  it('a bucket gives the busiest values of a batch an item of its own, up to its bound, and sums the rest in one remainder', async () => {
    const ws = 'ws-dim-cap';
    // 60 keys in one hour, the busiest first: keys 0..CAP-1 have an item of their own.
    const events = await ingested(ws, (w) => perKey(w, 60, falling, 3));

    const { proxy, read } = counting(deps.repos.table.doc);
    const rows = await store(proxy).query(ws, 'api_key', { gran: 'h', start: HOUR, end: HOUR + HOUR_MS });
    expect(read.RC).toBe(0);
    expect(read.RD).toBe(CAP + 1);
    const byKey = new Map(rows.map((r) => [r.value, r.agg.sums.n]));
    const want = countBy(events, (e) => e.api_key_id ?? '-');
    for (let i = 0; i < CAP; i++) expect(byKey.get(`key-${i}`), `key-${i}`).toBe(want.get(`key-${i}`));
    let rest = 0;
    for (let i = CAP; i < 60; i++) rest += want.get(`key-${i}`) ?? 0;
    expect(byKey.get(OTHER)).toBe(rest);
    expect([...byKey.values()].reduce((a, b) => a + b, 0)).toBe(events.length);
  });

  it('workers admitting values to the same bucket at once never pass the bound, and lose no request', async () => {
    const ws = 'ws-dim-race';
    const events = await ingested(ws, (w) => perKey(w, 80, () => 2, 4), 4);

    const admitted = await deps.repos.table.doc.send(
      new GetCommand({ TableName: deps.repos.table.tableName, Key: { pk: `RV#${ws}#h`, sk: new Date(HOUR).toISOString().slice(0, 16) } }),
    );
    expect((admitted.Item?.v_api_key as Set<string>).size).toBe(CAP);
    const rows = await store().query(ws, 'api_key', { gran: 'h', start: HOUR, end: HOUR + HOUR_MS });
    expect(rows.filter((r) => r.value !== OTHER)).toHaveLength(CAP);
    expect(rows.reduce((n, r) => n + r.agg.sums.n, 0)).toBe(events.length);
  });

  it("a filter reads only its value's items (by key) and, where the value fell in the remainder, its series: exact, no combination", async () => {
    const ws = 'ws-dim-filter';
    const events = await ingested(ws, (w) => perKey(w, 40, falling, 5));
    const rare = 'key-39';
    const busy = 'key-0';
    for (const key of [busy, rare]) {
      const { proxy, read } = counting(deps.repos.table.doc);
      const rows = await store(proxy).query(ws, 'api_key', { gran: 'h', start: HOUR, end: HOUR + HOUR_MS }, { only: new Set([key]) });
      const mine = rows.filter((r) => r.value === key);
      expect(
        mine.reduce((n, r) => n + r.agg.sums.n, 0),
        key,
      ).toBe(events.filter((e) => e.api_key_id === key).length);
      // Not the other keys' items: the busy key's item is read by key; the rare one is in the remainder, its hour from its series (one item).
      expect(read.RC).toBe(0);
      expect(read.RD).toBe(0);
      expect(read.RS).toBe(key === busy ? 0 : 1);
    }
    // Minutes too: each minute the rare key was in the remainder reads its own series there.
    const { proxy, read } = counting(deps.repos.table.doc);
    const minutes = await store(proxy).query(ws, 'api_key', { gran: 'm', start: HOUR, end: HOUR + 5 * MINUTE_MS }, { only: new Set([rare]) });
    expect(minutes.filter((r) => r.value === rare).reduce((n, r) => n + r.agg.sums.n, 0)).toBe(events.filter((e) => e.api_key_id === rare).length);
    expect(read.RC).toBe(0);
  });

  it('groups answer with the remainder as one row named "other", last, and the same total as the ungrouped read', async () => {
    const ws = 'ws-dim-groups';
    const events = await ingested(ws, (w) => perKey(w, 40, falling, 6));
    const rollups = store();
    const analytics = new Analytics({
      rollups,
      logs: new LogStore({ ...deps.repos.table, clock, logRetentionDays: 30, rollups }),
      clock,
      logRetentionDays: 30,
    });
    const f = { from: HOUR, to: HOUR + HOUR_MS - 1 };
    const c = await analytics.collect({ organisationId: 'org-1', workspaces: [ws] }, f, { groupBy: 'api_key' });
    const rows = groupRows(c, 'api_key', ['error_count']);
    const last = rows[rows.length - 1];
    expect(last).toMatchObject({ api_key: 'other', other: true });
    expect(rows.filter((r) => r.other)).toHaveLength(1);
    expect(rows[0]).toMatchObject({ api_key: 'key-0', requests: 30 });
    expect(rows.reduce((n, r) => n + r.requests, 0)).toBe(events.length);
    expect(rows.reduce((n, r) => n + Number(r.error_count), 0)).toBe(events.filter((e) => e.status_code >= 400).length);
    // Reading only the figures the columns need answers the same rows.
    const columns = ['error_count', 'cost', 'avg_latency', 'last_seen'] as const;
    const lean = await analytics.collect({ organisationId: 'org-1', workspaces: [ws] }, f, { groupBy: 'api_key', figures: columnFigures(columns) });
    expect(groupRows(lean, 'api_key', columns)).toEqual(groupRows(c, 'api_key', columns));
    expect(columnFigures(['cost', 'p95_latency'])).toBeUndefined();
  });

  it('buckets from before the dimension items were written (an upgraded table) are read from the combinations', async () => {
    const ws = 'ws-dim-upgraded';
    clock.set(T0);
    const old = syntheticEvents(90, { start: T0 - 3 * HOUR_MS, spanMs: 3 * HOUR_MS, workspaceId: ws, seed: 8 });
    // The earlier release wrote combinations (and totals) only.
    await ingestRollups(store(), old, (key) => !key.dim);
    const fresh = syntheticEvents(60, { start: T0, spanMs: 3 * HOUR_MS, workspaceId: ws, seed: 9 });
    await ingestRollups(store(), fresh);
    clock.set(T0 + 4 * HOUR_MS);
    const { proxy, read } = counting(deps.repos.table.doc);
    const rows = await store(proxy).query(ws, 'model', { gran: 'h', start: T0 - 3 * HOUR_MS, end: T0 + 3 * HOUR_MS });
    const all = [...old, ...fresh];
    const want = countBy(all, (e) => `${Math.floor(e.started_ms / HOUR_MS) * HOUR_MS}|${e.model ?? '-'}`);
    expect(new Map(rows.map((r) => [`${r.bucket}|${r.value}`, r.agg.sums.n]))).toEqual(want);
    // Hours from the first full one after the marker plus TOTALS_SETTLE_MS come from the model items.
    const cut = Math.ceil((T0 + TOTALS_SETTLE_MS) / HOUR_MS) * HOUR_MS;
    expect(read.RD).toBe(new Set(fresh.filter((e) => e.started_ms >= cut).map((e) => `${Math.floor(e.started_ms / HOUR_MS)}|${e.model}`)).size);
  });
});
