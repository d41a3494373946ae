/**
 * Analytics and groups answered from rollups, checked against the same figures computed here from
 * the raw events: counts and sums exact, percentiles within one histogram bucket of the exact
 * nearest-rank value, first and last seen within the resolution of the rollups read. The logs
 * path (filters finer than one dimension) gives the same figures. Retention clips what is shown.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminModule } from '../../../../layers/core/src/admin/routes.ts';
import { ensureBootstrap, type BootstrapResult } from '../../../../layers/core/src/bootstrap.ts';
import type { CoreDeps } from '../../../../layers/core/src/deps.ts';
import { createApp } from '../../../../layers/core/src/app.ts';
import { Analytics } from '../../../../layers/core/src/observability/analytics.ts';
import { GROUP_COLUMNS } from '../../../../layers/core/src/observability/analytics-views.ts';
import { bucketBounds, bucketOf } from '../../../../layers/core/src/observability/histogram.ts';
import { ingestConsumer, observability } from '../../../../layers/core/src/observability/install.ts';
import type { LogEvent } from '../../../../layers/core/src/observability/log-event.ts';
import { RollupStore } from '../../../../layers/core/src/observability/rollups.ts';
import { estimateUsers, userBucket } from '../../../../layers/core/src/observability/sketch.ts';
import { DAY_MS, HOUR_MS, MINUTE_MS } from '../../../../layers/core/src/observability/time.ts';
import { ManualClock } from '../../../../layers/core/src/ports/clock.ts';
import { createTestDeps } from '../../../support/deps.ts';
import { ADMIN_KEY } from '../../../support/gantry.ts';
import { syntheticEvents } from '../../../support/observability.ts';
import { counting, ingestRollups } from '../../../support/rollups.ts';

const NOW = Date.UTC(2026, 2, 10, 2, 0, 0);
const FROM = NOW - 50 * HOUR_MS;
const RANGE = `time_of_generation_min=${new Date(FROM).toISOString()}&time_of_generation_max=${new Date(NOW - 1).toISOString()}`;

type Row = Record<string, unknown> & { requests: number };
type Json = Record<string, unknown>;

const GROUP_KEYS: Record<string, (e: LogEvent) => string | number | null> = {
  model: (e) => e.model,
  provider: (e) => e.provider,
  ai_service: (e) => e.ai_service,
  status_code: (e) => e.status_code,
  api_key: (e) => e.api_key_id,
  config: (e) => e.config_id,
  prompt: (e) => e.prompt_slug,
};

const nearestRank = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(1, Math.ceil(p * sorted.length)) - 1] as number;
};

/** The figures of one group, from the raw events, by straightforward arithmetic. */
function reference(events: readonly LogEvent[]) {
  const n = events.length;
  const sum = (f: (e: LogEvent) => number) => events.reduce((s, e) => s + f(e), 0);
  const errors = events.filter((e) => e.status_code >= 400).length;
  const hits = events.filter((e) => e.cache_status === 'HIT' || e.cache_status === 'SEMANTIC HIT').length;
  const times = events.map((e) => e.started_ms);
  return {
    requests: n,
    cost: sum((e) => e.cost_micros) / 10_000,
    total_tokens: sum((e) => e.total_tokens),
    avg_tokens: sum((e) => e.total_tokens) / n,
    avg_input_tokens: sum((e) => e.prompt_tokens) / n,
    avg_output_tokens: sum((e) => e.completion_tokens) / n,
    avg_latency: sum((e) => e.total_ms) / n,
    p95_latency: nearestRank(
      events.map((e) => e.total_ms),
      0.95,
    ),
    p99_latency: nearestRank(
      events.map((e) => e.total_ms),
      0.99,
    ),
    success_rate: (100 * (n - errors)) / n,
    error_count: errors,
    cache_hit_rate: (100 * hits) / n,
    first_seen: Math.min(...times),
    last_seen: Math.max(...times),
  };
}

/** Within one latency bucket of the exact value. */
function expectWithinBucket(estimate: unknown, exact: number) {
  const [lo, hi] = bucketBounds(bucketOf(exact));
  expect(Math.abs(Number(estimate) - exact)).toBeLessThanOrEqual(hi - lo + 0.05);
}

function expectRow(row: Row, ref: ReturnType<typeof reference>, seen: 'exact' | 'rollups') {
  expect(row.requests).toBe(ref.requests);
  expect(row.cost).toBeCloseTo(ref.cost, 4);
  expect(row.total_tokens).toBe(ref.total_tokens);
  expect(row.error_count).toBe(ref.error_count);
  for (const k of ['avg_tokens', 'avg_input_tokens', 'avg_output_tokens', 'avg_latency', 'success_rate', 'cache_hit_rate'] as const) {
    expect(Math.abs(Number(row[k]) - ref[k])).toBeLessThanOrEqual(0.0051);
  }
  expectWithinBucket(row.p95_latency, ref.p95_latency);
  expectWithinBucket(row.p99_latency, ref.p99_latency);
  const first = Date.parse(String(row.first_seen));
  const last = Date.parse(String(row.last_seen));
  if (seen === 'exact') {
    expect(first).toBe(ref.first_seen);
    expect(last).toBe(ref.last_seen);
  } else {
    // Rollups remember when requests came to the second (minute items), minute (hour) or hour (day).
    expect(first).toBeLessThanOrEqual(ref.first_seen);
    expect(ref.first_seen - first).toBeLessThan(HOUR_MS);
    expect(last).toBeLessThanOrEqual(ref.last_seen);
    expect(ref.last_seen - last).toBeLessThan(HOUR_MS);
  }
}

describe('analytics from rollups against the raw logs', () => {
  const clock = new ManualClock(NOW);
  let deps: CoreDeps;
  let boot: BootstrapResult;
  let other: string;
  let events: LogEvent[];
  let otherEvents: LogEvent[];
  let old: LogEvent[];
  let app: ReturnType<typeof createApp>;

  const get = async (path: string): Promise<{ status: number; json: Json }> => {
    const res = await app.request(path, { headers: { 'x-gw-api-key': ADMIN_KEY } });
    return { status: res.status, json: (await res.json()) as Json };
  };
  const inRange = (e: LogEvent) => e.started_ms >= FROM && e.started_ms < NOW;

  beforeAll(async () => {
    deps = await createTestDeps({ METRICS_RETENTION_DISPLAY: '30', LOG_RETENTION_DISPLAY: '30' }, { clock });
    boot = await ensureBootstrap(deps, ADMIN_KEY);
    const created = await deps.repos.workspaces.list(boot.organisationId);
    other = `ws-other-${created.length}`;
    const org = boot.organisationId;
    events = syntheticEvents(360, {
      start: FROM - 2 * HOUR_MS,
      spanMs: 54 * HOUR_MS,
      workspaceId: boot.workspaceId,
      organisationId: org,
      seed: 21,
      busyMinutes: 30,
    });
    otherEvents = syntheticEvents(40, { start: FROM, spanMs: 10 * HOUR_MS, workspaceId: other, organisationId: org, seed: 22, busyMinutes: 5 });
    // Past the 30-day retention: stored, never shown.
    old = syntheticEvents(20, { start: NOW - 35 * DAY_MS, spanMs: HOUR_MS, workspaceId: boot.workspaceId, organisationId: org, seed: 23, busyMinutes: 2 });
    const consumer = ingestConsumer(deps);
    const all = [...events, ...otherEvents, ...old];
    // One batch: the rollup updates of events that share items are added together.
    expect(await consumer([{ id: 'm', attempts: 0, body: { kind: 'logs', events: all } }])).toEqual([]);
    // The second workspace exists for the organisation-wide groups.
    const ws = created[0]!;
    await deps.repos.workspaces.create({ ...ws, id: other, slug: other, name: 'Other' });
    app = createApp(deps, [adminModule]);
  });
  afterAll(() => deps.upstream.close());

  it.each(Object.keys(GROUP_KEYS))('groups by %s with every column, as the raw events say', async (groupBy) => {
    const key = GROUP_KEYS[groupBy]!;
    const { status, json } = await get(`/v1/analytics/groups/${groupBy}?workspace_id=default&${RANGE}&columns=${GROUP_COLUMNS.join(',')}&page_size=100`);
    expect(status).toBe(200);
    const rows = json.data as Row[];
    const selected = events.filter(inRange);
    const groups = new Map<string | number | null, LogEvent[]>();
    for (const e of selected) groups.set(key(e), [...(groups.get(key(e)) ?? []), e]);
    expect(json.total).toBe(groups.size);
    expect(rows.reduce((s, r) => s + r.requests, 0)).toBe(selected.length);
    for (const row of rows) {
      expect(row.object).toBe('analytics-group');
      expectRow(row, reference(groups.get(row[groupBy] as string | number | null) ?? []), 'rollups');
    }
    // Most requests first.
    expect(rows.map((r) => r.requests)).toEqual([...rows.map((r) => r.requests)].sort((a, b) => b - a));
  });

  it('answers filters finer than one dimension from the logs, with the same figures', async () => {
    const { json } = await get(
      `/v1/analytics/groups/model?workspace_id=default&${RANGE}&columns=${GROUP_COLUMNS.join(',')}&metadata=${encodeURIComponent('{"team":"search"}')}`,
    );
    const selected = events.filter((e) => inRange(e) && e.metadata.team === 'search');
    for (const row of json.data as Row[]) expectRow(row, reference(selected.filter((e) => e.model === row.model)), 'exact');
    expect((json.data as Row[]).reduce((s, r) => s + r.requests, 0)).toBe(selected.length);
  });

  it('serves the logs groups with the same contract', async () => {
    const a = await get(`/v1/logs/groups/provider?workspace_id=default&${RANGE}&columns=cost,error_count`);
    const b = await get(`/v1/analytics/groups/provider?workspace_id=default&${RANGE}&columns=cost,error_count`);
    expect(a.status).toBe(200);
    expect(a.json).toEqual(b.json);
  });

  it('counts requests only when no columns are asked for', async () => {
    const { json } = await get(`/v1/analytics/groups/status_code?workspace_id=default&${RANGE}`);
    for (const row of json.data as Row[]) expect(Object.keys(row).sort()).toEqual(['object', 'requests', 'status_code']);
  });

  it('groups by workspace across the organisation', async () => {
    const { json } = await get(`/v1/analytics/groups/workspace?${RANGE}&columns=cost`);
    const rows = json.data as Row[];
    const mine = rows.find((r) => r.workspace === boot.workspaceId);
    const theirs = rows.find((r) => r.workspace === other);
    expect(mine?.requests).toBe(events.filter(inRange).length);
    expect(theirs?.requests).toBe(otherEvents.filter(inRange).length);
    expect(theirs?.cost).toBeCloseTo(otherEvents.filter(inRange).reduce((s, e) => s + e.cost_micros, 0) / 10_000, 4);
  });

  it('filters on one dimension from its rollups', async () => {
    const { json } = await get(`/v1/analytics/summary?workspace_id=default&${RANGE}&status_code=500,502`);
    expect((json.summary as Json).requests).toBe(events.filter((e) => inRange(e) && [500, 502].includes(e.status_code)).length);
    expect(json.source).toBe('rollups');
  });

  it('refuses an unknown groupBy or column, naming it', async () => {
    const bad = await get(`/v1/analytics/groups/colour?${RANGE}`);
    expect(bad.status).toBe(400);
    expect(bad.json).toMatchObject({ errorCode: 'AB01', errors: [{ path: 'groupBy', message: expect.stringContaining('colour') }] });
    const col = await get(`/v1/logs/groups/model?${RANGE}&columns=cost,vibes`);
    expect(col.status).toBe(400);
    expect(col.json).toMatchObject({ errorCode: 'AB01', errors: [{ path: 'columns', message: expect.stringContaining('vibes') }] });
    const time = await get(`/v1/analytics/summary?time_of_generation_min=yesterday`);
    expect(time.json).toMatchObject({ errorCode: 'AB01', errors: [{ path: 'time_of_generation_min' }] });
  });

  it('draws hourly graphs whose points add up to the raw events', async () => {
    const selected = events.filter(inRange);
    const hour = (t: number) => Math.floor(t / HOUR_MS) * HOUR_MS;
    const perHour = new Map<number, LogEvent[]>();
    for (const e of selected) perHour.set(hour(e.started_ms), [...(perHour.get(hour(e.started_ms)) ?? []), e]);
    const graph = async (name: string) => (await get(`/v1/analytics/graphs/${name}?workspace_id=default&${RANGE}&granularity=hour`)).json;

    const requests = await graph('requests');
    expect(requests.object).toBe('analytics-graph');
    const points = requests.data_points as { timestamp: string; total: number }[];
    expect(points).toHaveLength(50);
    for (const p of points) expect(p.total).toBe(perHour.get(Date.parse(p.timestamp))?.length ?? 0);
    expect((requests.summary as Json).total).toBe(selected.length);

    const latency = await graph('latency');
    for (const p of latency.data_points as Json[]) {
      const inHour = perHour.get(Date.parse(String(p.timestamp)));
      if (!inHour) continue;
      expectWithinBucket(
        p.p99,
        nearestRank(
          inHour.map((e) => e.total_ms),
          0.99,
        ),
      );
      expectWithinBucket(
        p.p50,
        nearestRank(
          inHour.map((e) => e.total_ms),
          0.5,
        ),
      );
    }
    expectWithinBucket(
      (latency.summary as Json).p90,
      nearestRank(
        selected.map((e) => e.total_ms),
        0.9,
      ),
    );

    const cost = await graph('cost');
    expect((cost.summary as Json).total).toBeCloseTo(selected.reduce((s, e) => s + e.cost_micros, 0) / 10_000, 4);
    const tokens = await graph('tokens');
    expect((tokens.summary as Json).total).toBe(selected.reduce((s, e) => s + e.total_tokens, 0));

    const errors = selected.filter((e) => e.status_code >= 400);
    expect(((await graph('errors')).summary as Json).total).toBe(errors.length);
    const rate = (await graph('errors/rate')).summary as Json;
    expect(Math.abs(Number(rate.rate) - (100 * errors.length) / selected.length)).toBeLessThanOrEqual(0.0051);
    const codes = await graph('errors/status-codes');
    const byCode = new Map<number, number>();
    for (const e of errors) byCode.set(e.status_code, (byCode.get(e.status_code) ?? 0) + 1);
    expect(codes.data_points).toEqual([...byCode].sort((a, b) => a[0] - b[0]).map(([status_code, count]) => ({ status_code, count })));
    expect(codes.summary).toEqual({ total_errors: errors.length, unique_error_codes: byCode.size });
    const stacks = await graph('errors/stacks');
    const stacked = (stacks.data_points as { stats: { count: number }[] }[]).flatMap((p) => p.stats).reduce((s, x) => s + x.count, 0);
    expect(stacked).toBe(errors.length);

    const rescued = await graph('requests/rescued');
    const ok = selected.filter((e) => e.is_success);
    expect(rescued.summary).toEqual({ retry: ok.filter((e) => e.retries > 0).length, fallback: ok.filter((e) => e.fallback).length });

    const hits = selected.filter((e) => e.cache_status === 'HIT' || e.cache_status === 'SEMANTIC HIT');
    const hitRate = await graph('cache/hit-rate');
    expect((hitRate.summary as Json).total).toBe(hits.length);
    const last = (hitRate.data_points as Json[]).at(-1)!;
    expect(Number(last.cumulative_simple_cache_savings) + Number(last.cumulative_semantic_cache_savings)).toBeCloseTo(
      hits.reduce((s, e) => s + e.cache_savings_micros, 0) / 10_000,
      4,
    );
    const cacheLatency = await graph('cache/latency');
    expect(Math.abs(Number((cacheLatency.summary as Json).avg) - hits.reduce((s, e) => s + e.total_ms, 0) / hits.length)).toBeLessThanOrEqual(0.0051);

    const users = new Set(selected.map((e) => e.user).filter((u): u is string => u !== null));
    const usersGraph = await graph('users');
    expect((usersGraph.summary as Json).total).toBe(estimateUsers(new Set([...users].map(userBucket))));
    expect(Math.abs(Number((usersGraph.summary as Json).total) - users.size)).toBeLessThanOrEqual(Math.max(1, users.size * 0.06));
  });

  it('picks minute points for short ranges and refuses granularities that do not fit', async () => {
    const short = await get(
      `/v1/analytics/graphs/requests?workspace_id=default&time_of_generation_min=${new Date(NOW - 30 * MINUTE_MS).toISOString()}&time_of_generation_max=${new Date(NOW - 1).toISOString()}`,
    );
    expect(short.json.data_points as unknown[]).toHaveLength(30);
    expect((short.json.summary as Json).total).toBe(events.filter((e) => e.started_ms >= NOW - 30 * MINUTE_MS && e.started_ms < NOW).length);
    const bad = await get(`/v1/analytics/graphs/requests?${RANGE}&granularity=minute`);
    expect(bad.json).toMatchObject({ errorCode: 'AB01', errors: [{ path: 'granularity' }] });
  });

  it('summarises the range, and the cache', async () => {
    const selected = events.filter(inRange);
    const { json } = await get(`/v1/analytics/summary?workspace_id=default&${RANGE}`);
    const s = json.summary as Json;
    expect(s.requests).toBe(selected.length);
    expect(s.errors).toBe(selected.filter((e) => e.status_code >= 400).length);
    expect(s.rescued_requests).toBe(selected.filter((e) => e.is_success && (e.retries > 0 || e.fallback)).length);
    expectWithinBucket(
      s.p95_latency,
      nearestRank(
        selected.map((e) => e.total_ms),
        0.95,
      ),
    );
    const cache = await get(`/v1/analytics/summary/cache?workspace_id=default&${RANGE}`);
    expect(cache.json).toMatchObject({ object: 'analytics-summary', summary: { total_requests: selected.length } });
  });

  it('shows nothing older than the retention: a longer range is clipped, not refused', async () => {
    const since = NOW - 40 * DAY_MS;
    const { status, json } = await get(
      `/v1/analytics/summary?workspace_id=default&time_of_generation_min=${new Date(since).toISOString()}&time_of_generation_max=${new Date(NOW - 1).toISOString()}`,
    );
    expect(status).toBe(200);
    const shown = [...events].filter((e) => e.started_ms >= NOW - 30 * DAY_MS && e.started_ms < NOW);
    expect((json.summary as Json).requests).toBe(shown.length);
    expect(Date.parse(String(json.time_of_generation_min))).toBeGreaterThanOrEqual(NOW - 30 * DAY_MS - HOUR_MS);
    const beyond = await get(
      `/v1/analytics/summary?workspace_id=default&time_of_generation_min=${new Date(NOW - 40 * DAY_MS).toISOString()}&time_of_generation_max=${new Date(NOW - 31 * DAY_MS).toISOString()}`,
    );
    expect((beyond.json.summary as Json).requests).toBe(0);
    // Old logs are not listed nor found by id.
    const list = await get(`/v1/logs?workspace_id=default&trace_id=${old[0]!.trace_id}&page_size=100`);
    expect((list.json.data as { id: string }[]).some((r) => r.id.startsWith('evt-23-'))).toBe(false);
    expect((await get(`/v1/logs/${old[0]!.id}`)).status).toBe(404);
  });
});

describe('a range that reaches now', () => {
  const NOW_OPEN = Date.UTC(2026, 4, 6, 13, 37, 17);
  const WS = 'ws-open-end';
  let deps: CoreDeps;
  const clock = new ManualClock(NOW_OPEN - 2 * DAY_MS);
  let events: LogEvent[];

  beforeAll(async () => {
    deps = await createTestDeps({}, { clock });
    const { doc, tableName } = deps.repos.table;
    const writer = new RollupStore(doc, tableName, 365, () => clock.now());
    // The first batch marks when the workspace's totals and value items start.
    await ingestRollups(writer, syntheticEvents(3, { start: clock.now(), spanMs: MINUTE_MS, workspaceId: WS, seed: 3 }));
    events = [
      ...syntheticEvents(240, { start: NOW_OPEN - 30 * HOUR_MS, spanMs: 30 * HOUR_MS - 1000, workspaceId: WS, seed: 9, busyMinutes: 20 }),
      // Some in the minutes before now, in the hour that holds it.
      ...syntheticEvents(12, { start: NOW_OPEN - 20 * MINUTE_MS, spanMs: 20 * MINUTE_MS - 1000, workspaceId: WS, seed: 10 }),
    ];
    clock.set(NOW_OPEN);
    await ingestRollups(writer, events);
  });
  afterAll(() => deps.upstream.close());

  /** The (partition, last bucket) of every rollup Query, beside the items counted by kind. */
  const watched = () => {
    const { proxy, read } = counting(deps.repos.table.doc);
    const queries: Array<{ pk: string; hi: string }> = [];
    const doc = new Proxy(proxy, {
      get: (target, prop) =>
        prop === 'send'
          ? (c: { input?: { ExpressionAttributeValues?: Record<string, unknown> } }) => {
              const v = c.input?.ExpressionAttributeValues ?? {};
              if (typeof v[':pk'] === 'string') queries.push({ pk: v[':pk'], hi: String(v[':hi']) });
              return target.send(c as never);
            }
          : Reflect.get(target, prop),
    });
    return { doc, read, queries };
  };
  /** Minute buckets read at or after `since`. */
  const minutesFrom = (queries: Array<{ pk: string; hi: string }>, since: number) =>
    queries.filter((q) => q.pk.endsWith('#m') && q.hi >= new Date(since).toISOString().slice(0, 16));

  const analyticsOn = (doc: CoreDeps['repos']['table']['doc']) =>
    new Analytics({
      rollups: new RollupStore(doc, deps.repos.table.tableName, 365, () => clock.now()),
      logs: observability(deps).logs,
      clock,
      logRetentionDays: 30,
    });

  it('reads the day that holds now as one bucket, not its hours and minutes, and answers the same figures for the range asked', async () => {
    const from = NOW_OPEN - DAY_MS;
    const inRange = events.filter((e) => e.started_ms >= Math.floor(from / MINUTE_MS) * MINUTE_MS);
    const { doc, read, queries } = watched();
    const scope = { organisationId: 'org', workspaces: [WS] };
    const c = await analyticsOn(doc).collect(scope, { from, to: NOW_OPEN });
    // 13:37 yesterday to now: 23 minutes and 10 hours of yesterday, and today in one item (it was
    // 13 hours and 38 minutes more).
    expect(queries.map((q) => q.pk).sort()).toEqual([`RT#${WS}#d`, `RT#${WS}#h`, `RT#${WS}#m`]);
    expect(minutesFrom(queries, NOW_OPEN - (NOW_OPEN % DAY_MS))).toEqual([]);
    expect(read.RT).toBeLessThanOrEqual(23 + 10 + 1);
    expect(read.RC).toBe(0);
    expect(c.total.sums.n).toBe(inRange.length);
    expect(c.total.sums.cost).toBeCloseTo(
      inRange.reduce((s, e) => s + e.cost_micros, 0),
      6,
    );
    // The answer names the range asked, not the end of today.
    expect(c.to).toBe(Math.floor(NOW_OPEN / MINUTE_MS) * MINUTE_MS + MINUTE_MS);

    const grouped = await analyticsOn(doc).collect(scope, { from, to: NOW_OPEN }, { groupBy: 'model' });
    const byModel = new Map<string, number>();
    for (const cell of grouped.cells.values()) byModel.set(String(cell.group), (byModel.get(String(cell.group)) ?? 0) + cell.agg.sums.n);
    const want = new Map<string, number>();
    // A request without a model is in the group without one ('-').
    for (const e of inRange) want.set(e.model ?? '-', (want.get(e.model ?? '-') ?? 0) + 1);
    expect(Object.fromEntries(byModel)).toEqual(Object.fromEntries(want));
  });

  it('keeps hourly points hourly: the hour that holds now is one bucket, and no point past now is drawn', async () => {
    const from = NOW_OPEN - 6 * HOUR_MS;
    const { doc, read, queries } = watched();
    const c = await analyticsOn(doc).collect({ organisationId: 'org', workspaces: [WS] }, { from, to: NOW_OPEN }, { point: 'h' });
    // 23 minutes, then 5 whole hours and the hour of now: no minute of this hour is read.
    expect(minutesFrom(queries, NOW_OPEN - (NOW_OPEN % HOUR_MS))).toEqual([]);
    expect(read.RT).toBeLessThanOrEqual(23 + 6);
    const points = new Set([...c.cells.values()].map((cell) => cell.point));
    expect(Math.max(...[...points].map(Number))).toBe(Math.floor(NOW_OPEN / HOUR_MS) * HOUR_MS);
    expect(c.total.sums.n).toBe(events.filter((e) => e.started_ms >= Math.floor(from / MINUTE_MS) * MINUTE_MS).length);
  });
});
