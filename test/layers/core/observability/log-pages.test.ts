/**
 * The work behind one logs page, on DynamoDB Local: a page reads about as many logs as it shows
 * (not every shard's full page), a rare filter stops at the page's read budget with a short page
 * that says how far it searched and a cursor instead of reading the whole range, and following the
 * cursors still lists every match exactly once, newest first, also when the budget ends as a page
 * crosses into the previous day. An organisation-wide page shares one budget across workspaces.
 * The days to read come from one rollup item each, not from every combination a day's rollups hold.
 */
import { BatchWriteCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CoreDeps } from '../../../../layers/core/src/deps.ts';
import { parseFilters } from '../../../../layers/core/src/observability/filters.ts';
import { observability } from '../../../../layers/core/src/observability/install.ts';
import type { LogEvent } from '../../../../layers/core/src/observability/log-event.ts';
import { LIST_MAX_EXAMINED, type LogStore } from '../../../../layers/core/src/observability/log-store.ts';
import { rollupPk, rollupsOf } from '../../../../layers/core/src/observability/rollups.ts';
import { HOUR_MS } from '../../../../layers/core/src/observability/time.ts';
import { ManualClock } from '../../../../layers/core/src/ports/clock.ts';
import { createTestDeps } from '../../../support/deps.ts';
import { syntheticEvents } from '../../../support/observability.ts';

const NOW = Date.UTC(2026, 6, 14, 20, 0, 0);
const WS = 'ws-pages';
const OTHERS = ['ws-pages-b', 'ws-pages-c'];
const LOGS = 3_000;

describe('logs pages read a bounded number of items', () => {
  const clock = new ManualClock(NOW);
  let deps: CoreDeps;
  let store: LogStore;
  let events: LogEvent[];
  const filters = (q: Record<string, string> = {}) => parseFilters(q, { now: NOW, retentionDays: deps.config.logRetentionDays });
  const newestFirst = (xs: LogEvent[]) => [...xs].sort((a, b) => b.started_ms - a.started_ms || (b.id > a.id ? 1 : -1)).map((e) => e.id);

  /** Rollup items returned by DynamoDB since the last reset. */
  const rollupReads = { items: 0 };

  /** The logs, their pointers and the rollups the ingest would have built from them. */
  async function write(list: readonly LogEvent[]): Promise<void> {
    const rollups = [...rollupsOf(list.map((event) => ({ messageId: event.id, event }))).values()].map((p) => observability(deps).rollups.itemOf(p.key, p.agg));
    const items = [...list.flatMap((e) => [store.itemOf(e), store.pointerOf(e)]), ...rollups];
    const batches = [];
    for (let i = 0; i < items.length; i += 25) batches.push(items.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } })));
    for (let i = 0; i < batches.length; i += 8) {
      await Promise.all(batches.slice(i, i + 8).map((b) => deps.repos.table.doc.send(new BatchWriteCommand({ RequestItems: { [deps.config.tableName]: b } }))));
    }
  }

  beforeAll(async () => {
    deps = await createTestDeps({}, { clock });
    store = observability(deps).logs;
    // Within today (UTC), so the list needs no rollups to find the day.
    events = syntheticEvents(LOGS, { start: NOW - 19 * HOUR_MS, spanMs: 19 * HOUR_MS, workspaceId: WS, organisationId: 'org-pages', seed: 7 });
    const others = OTHERS.flatMap((ws, n) =>
      syntheticEvents(LOGS, { start: NOW - 19 * HOUR_MS, spanMs: 19 * HOUR_MS, workspaceId: ws, organisationId: 'org-pages', seed: 8 + n }),
    );
    await write([...events, ...others]);
    deps.repos.table.doc.middlewareStack.add(
      (next) => async (args) => {
        const out = await next(args);
        const items = (out.output as { Items?: Record<string, unknown>[] }).Items ?? [];
        rollupReads.items += items.filter((i) => String(i.pk ?? '').startsWith('RC#') || i.b !== undefined).length;
        return out;
      },
      { step: 'initialize', name: 'countRollupReads' },
    );
  });
  afterAll(() => deps.upstream.close());

  it('shows the 50 newest logs after reading fewer than twice as many', async () => {
    const page = await store.page(WS, filters(), { limit: 50 });
    expect(page.events.map((e) => e.id)).toEqual(newestFirst(events).slice(0, 50));
    expect(page.cursor).toBeDefined();
    expect(page.examined).toBeLessThan(100);
  });

  it('reads about as many logs as a common filter needs, not a full page per shard', async () => {
    const page = await store.page(WS, filters({ model: 'gpt-4o-mini' }), { limit: 50 });
    expect(page.events.map((e) => e.id)).toEqual(newestFirst(events.filter((e) => e.model === 'gpt-4o-mini')).slice(0, 50));
    // About one log in four matches: some 200 items, where four shards of 50 matches each read 800.
    expect(page.examined).toBeLessThan(400);
  });

  it('stops a rare filter at the read budget with a short page saying how far it searched, and the cursor still lists every match once', async () => {
    const rare = (e: LogEvent) => e.trace_id === 'trace-7' && e.status_code >= 400;
    const expected = newestFirst(events.filter(rare));
    expect(expected.length).toBeGreaterThan(3);
    const budget = 1_000;
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await store.page(WS, filters({ trace_id: 'trace-7', status_code: '400,401,429,500,502' }), { limit: 50, cursor, maxExamined: budget });
      expect(page.examined).toBeLessThanOrEqual(budget);
      // A short page with a cursor was cut by the budget, and holds every match down to where it searched.
      expect(page.scannedUntil !== undefined).toBe(page.cursor !== undefined && page.events.length < 50);
      if (page.scannedUntil) {
        const until = Date.parse(page.scannedUntil);
        expect(page.events.map((e) => e.id)).toEqual(expected.filter((id) => !seen.includes(id) && (events.find((e) => e.id === id)?.started_ms ?? 0) > until));
      }
      seen.push(...page.events.map((e) => e.id));
      cursor = page.cursor;
      pages++;
    } while (cursor);
    expect(seen).toEqual(expected);
    expect(pages).toBeGreaterThanOrEqual(Math.ceil(LOGS / budget));
  });

  it('lets DynamoDB apply the equality filters first: a rare filter brings back only the logs that may match, its budget still counts every log read', async () => {
    const back = { items: 0 };
    deps.repos.table.doc.middlewareStack.add(
      (next) => async (args) => {
        const out = await next(args);
        back.items += ((out.output as { Items?: Record<string, unknown>[] }).Items ?? []).filter((i) => i.e !== undefined).length;
        return out;
      },
      { step: 'initialize', name: 'countLogsBack' },
    );
    try {
      const rare = (e: LogEvent) => e.trace_id === 'trace-7' && [500, 502].includes(e.status_code);
      const page = await store.page(WS, filters({ trace_id: 'trace-7', status_code: '500,502' }), { limit: 50, maxExamined: LOGS });
      expect(page.events.map((e) => e.id)).toEqual(newestFirst(events.filter(rare)));
      // Every log of the workspace was read and counted; only the matches came back.
      expect(page.examined).toBe(LOGS);
      expect(back.items).toBe(events.filter(rare).length);
    } finally {
      deps.repos.table.doc.middlewareStack.remove('countLogsBack');
    }
    // A log item written by an earlier version (the event's fields as attributes, no event text) always
    // comes back, and is matched here: an export (bodies: whole items) still finds it.
    const [old] = syntheticEvents(1, { start: NOW - HOUR_MS, spanMs: 1000, workspaceId: 'ws-pages-old', organisationId: 'org-pages', seed: 31 });
    const { e: _text, ...place } = store.itemOf(old!);
    await deps.repos.table.doc.send(new BatchWriteCommand({ RequestItems: { [deps.config.tableName]: [{ PutRequest: { Item: { ...place, ...old } } }] } }));
    const found = await store.page('ws-pages-old', filters({ trace_id: old!.trace_id }), { limit: 50, bodies: true });
    expect(found.events.map((e) => e.id)).toEqual([old!.id]);
  });

  it('lists every match once when the budget ends as a page crosses into the previous day', async () => {
    // 998 logs today and 300 yesterday: a page of 1,000 reads today's and has two reads left for yesterday.
    const ws = 'ws-pages-edge';
    const today = syntheticEvents(998, { start: NOW - 19 * HOUR_MS, spanMs: 19 * HOUR_MS, workspaceId: ws, organisationId: 'org-pages', seed: 21 });
    const yesterday = syntheticEvents(300, { start: NOW - 30 * HOUR_MS, spanMs: 4 * HOUR_MS, workspaceId: ws, organisationId: 'org-pages', seed: 22 });
    await write([...today, ...yesterday]);
    const rare = filters({ trace_id: 'trace-7' });
    const expected = newestFirst([...today, ...yesterday].filter((e) => e.trace_id === 'trace-7'));
    expect(yesterday.filter((e) => e.trace_id === 'trace-7').length).toBeGreaterThan(3);
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let pages = 0; pages === 0 || cursor; pages++) {
      expect(pages).toBeLessThan(5);
      const page = await store.page(ws, rare, { limit: 50, cursor, maxExamined: 1_000 });
      seen.push(...page.events.map((e) => e.id));
      cursor = page.cursor;
    }
    expect(seen).toEqual(expected);
  });

  it('finds the day to read from one rollup item, not every combination the day holds', async () => {
    const dayItems = await deps.repos.table.doc.send(
      new QueryCommand({
        TableName: deps.config.tableName,
        KeyConditionExpression: 'pk = :p',
        ExpressionAttributeValues: { ':p': rollupPk(WS, 'd') },
        Select: 'COUNT',
      }),
    );
    expect(dayItems.Count).toBeGreaterThan(300);
    rollupReads.items = 0;
    const page = await store.page(WS, filters(), { limit: 50 });
    expect(page.events).toHaveLength(50);
    expect(rollupReads.items).toBeLessThanOrEqual(2);
  });

  it('shares one budget across the workspaces of an organisation-wide page', async () => {
    // All three workspaces' logs fit the list's budget: a smaller one shows the sharing.
    expect(3 * LOGS).toBeLessThanOrEqual(LIST_MAX_EXAMINED);
    const page = await store.pageAcross([WS, ...OTHERS], filters({ trace_id: 'trace-7', status_code: '500' }), { limit: 50, maxExamined: 1_000 });
    expect(page.examined).toBeLessThanOrEqual(1_000 + 3 * 4);
    expect(page.cursor).toBeDefined();
    expect(page.scannedUntil).toEqual(expect.any(String));
  });
});
