/**
 * The log-ingest worker under a faulty table: throttled and failing writes, unprocessed batch
 * items, rollup updates that keep failing, a full outage, duplicate deliveries. Whatever happens,
 * every event ends up stored exactly once and counted exactly once (or waits in the dead letters).
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { BatchGetCommand, BatchWriteCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../../../support/until.ts';
import type { CoreDeps } from '../../../../layers/core/src/deps.ts';
import { emptyAggregate, mergeInto, addEvent, dimensionValue } from '../../../../layers/core/src/observability/aggregate.ts';
import { createIngestConsumer } from '../../../../layers/core/src/observability/ingest.ts';
import type { LogEvent } from '../../../../layers/core/src/observability/log-event.ts';
import { LogStore } from '../../../../layers/core/src/observability/log-store.ts';
import type { LogQueueMessage } from '../../../../layers/core/src/observability/messages.ts';
import { RollupStore } from '../../../../layers/core/src/observability/rollups.ts';
import { DAY_MS, GRANULARITY_MS, HOUR_MS } from '../../../../layers/core/src/observability/time.ts';
import { ManualClock } from '../../../../layers/core/src/ports/clock.ts';
import { InProcessQueue } from '../../../../layers/core/src/ports/local/in-process-queue.ts';
import { createTestDeps } from '../../../support/deps.ts';
import { prng, syntheticEvents } from '../../../support/observability.ts';

const NOW = Date.UTC(2026, 2, 10, 2, 0, 0);
const START = NOW - 4 * HOUR_MS;

class Throttled extends Error {
  override name = 'ProvisionedThroughputExceededException';
}

interface Faults {
  /** Probability that a call fails outright. */
  fail: number;
  /** Probability that a BatchWrite leaves part of its items unprocessed. */
  partial: number;
  /** Every call fails (an outage). */
  down: boolean;
  /** UpdateItem calls that fail before any succeeds (rollup updates that exhaust their retries). */
  failUpdates: number;
}

/** Wraps the document client so that some of its calls fail the ways DynamoDB fails. */
function faulty(doc: DynamoDBDocumentClient, faults: Faults, seed = 7): DynamoDBDocumentClient {
  const rnd = prng(seed);
  const send = async (command: unknown): Promise<unknown> => {
    if (faults.down) throw new Throttled('table unavailable');
    if (command instanceof UpdateCommand && faults.failUpdates > 0) {
      faults.failUpdates--;
      throw new Throttled('rollup update throttled');
    }
    if (rnd() < faults.fail) throw new Throttled('throttled');
    if (command instanceof BatchWriteCommand && rnd() < faults.partial) {
      const [table, requests] = Object.entries(command.input.RequestItems ?? {})[0] ?? [];
      if (table && requests && requests.length > 1) {
        const half = Math.ceil(requests.length / 2);
        await doc.send(new BatchWriteCommand({ RequestItems: { [table]: requests.slice(0, half) } }));
        return { UnprocessedItems: { [table]: requests.slice(half) } };
      }
    }
    if (command instanceof BatchGetCommand && rnd() < faults.partial) {
      const [table, req] = Object.entries(command.input.RequestItems ?? {})[0] ?? [];
      const keys = req?.Keys ?? [];
      if (table && keys.length > 1) {
        const half = Math.ceil(keys.length / 2);
        const out = await doc.send(new BatchGetCommand({ RequestItems: { [table]: { Keys: keys.slice(0, half) } } }));
        return { ...out, UnprocessedKeys: { [table]: { Keys: keys.slice(half) } } };
      }
    }
    return doc.send(command as never);
  };
  return new Proxy(doc, { get: (target, prop) => (prop === 'send' ? send : Reflect.get(target, prop)) });
}

describe('log ingest under a faulty table', () => {
  let deps: CoreDeps;
  const clock = new ManualClock(NOW);
  const logger = new Logger({ logLevel: 'SILENT' });

  beforeAll(async () => {
    deps = await createTestDeps({}, { clock });
  });
  afterAll(() => deps.upstream.close());

  function rig(faults: Faults, seed: number) {
    const { doc, tableName } = deps.repos.table;
    const bad = faulty(doc, faults, seed);
    const goodRollups = new RollupStore(doc, tableName, 365);
    const logs = new LogStore({ doc, tableName, clock, logRetentionDays: 90, rollups: goodRollups });
    const queue = new InProcessQueue<LogQueueMessage>({ name: `logs-${seed}`, clock, batchSize: 50, maxAttempts: 8, backoffMs: 10 });
    const consumer = createIngestConsumer({
      doc: bad,
      tableName,
      logs,
      rollups: new RollupStore(bad, tableName, 365),
      queue,
      clock,
      logger,
      retry: { attempts: 4, baseMs: 5 },
    });
    queue.setConsumer(consumer);
    return { queue, consumer, logs, rollups: goodRollups };
  }

  /** Every stored log of the workspace, and the totals of its rollups over the whole range. */
  async function stored(r: ReturnType<typeof rig>, ws: string) {
    const f = { from: START - DAY_MS, to: NOW };
    const events: LogEvent[] = [];
    for await (const e of r.logs.all(ws, f, { maxExamined: 100_000 })) events.push(e);
    const days = await r.rollups.query(ws, 'all', { gran: 'd', start: Math.floor((START - DAY_MS) / DAY_MS) * DAY_MS, end: NOW + DAY_MS });
    const total = emptyAggregate();
    for (const row of days) mergeInto(total, row.agg);
    return { events, total };
  }

  function expectedTotal(events: readonly LogEvent[]) {
    const agg = emptyAggregate();
    for (const e of events) addEvent(agg, e);
    return agg;
  }

  it('stores every event once and counts it once despite throttling, failures and unprocessed items', async () => {
    const events = syntheticEvents(300, { start: START, spanMs: 3 * HOUR_MS, workspaceId: 'ws-faulty', seed: 11, busyMinutes: 12 });
    const r = rig({ fail: 0.15, partial: 0.3, down: false, failUpdates: 80 }, 3);
    // Some events arrive twice, as SQS may deliver them.
    const duplicates = events.slice(0, 25);
    await r.queue.sendBatch([...events, ...duplicates].map((event) => ({ kind: 'log' as const, event })));
    await r.queue.drain();
    expect(r.queue.deadLetters()).toHaveLength(0);
    const { events: got, total } = await stored(r, 'ws-faulty');
    expect(got.map((e) => e.id).sort()).toEqual(events.map((e) => e.id).sort());
    const want = expectedTotal(events);
    expect(total.sums).toEqual(want.sums);
    expect(Object.fromEntries(total.counters.sc)).toEqual(Object.fromEntries(want.counters.sc));
    expect(Object.fromEntries(total.counters.h)).toEqual(Object.fromEntries(want.counters.h));
    expect(r.consumer.stats.rollupsRequeued).toBeGreaterThan(0);
    expect(r.consumer.stats.duplicates).toBeGreaterThanOrEqual(duplicates.length);
    // Each dimension's value items (some decided after their admission write failed) count every event once too.
    for (const dim of ['model', 'api_key', 'status_code'] as const) {
      for (const gran of ['m', 'h', 'd'] as const) {
        const unit = GRANULARITY_MS[gran];
        const rows = await r.rollups.query('ws-faulty', dim, {
          gran,
          start: Math.floor(START / unit) * unit,
          end: Math.ceil((START + 3 * HOUR_MS) / unit) * unit,
        });
        const byValue = new Map<string, number>();
        for (const row of rows) byValue.set(row.value, (byValue.get(row.value) ?? 0) + row.agg.sums.n);
        const wantByValue = new Map<string, number>();
        for (const e of events) wantByValue.set(dimensionValue(e, dim), (wantByValue.get(dimensionValue(e, dim)) ?? 0) + 1);
        expect(byValue, `${dim} by ${gran}`).toEqual(wantByValue);
      }
    }
    // Every event can be found by its id.
    for (const e of events.slice(0, 10)) expect((await r.logs.get(e.id, ['ws-faulty']))?.trace_id).toBe(e.trace_id);
  });

  it('keeps every event in the dead letters through an outage, and stores them all when they are sent again', async () => {
    const events = syntheticEvents(60, { start: START, spanMs: HOUR_MS, workspaceId: 'ws-outage', seed: 12, busyMinutes: 3 });
    const faults: Faults = { fail: 0, partial: 0, down: true, failUpdates: 0 };
    const r = rig(faults, 4);
    await r.queue.sendBatch(events.map((event) => ({ kind: 'log' as const, event })));
    await r.queue.drain();
    const dead = r.queue.deadLetters();
    expect(dead.map((m) => (m.body.kind === 'log' ? m.body.event.id : '')).sort()).toEqual(events.map((e) => e.id).sort());
    expect((await stored(r, 'ws-outage')).events).toHaveLength(0);

    // The table is back: the dead letters are sent again (an SQS redrive in AWS).
    faults.down = false;
    const again = rig(faults, 5);
    await again.queue.sendBatch(dead.map((m) => m.body));
    await again.queue.drain();
    const { events: got, total } = await stored(again, 'ws-outage');
    expect(got).toHaveLength(events.length);
    expect(total.sums.n).toBe(events.length);
    expect(total.sums.cost).toBe(events.reduce((s, e) => s + e.cost_micros, 0));
  });

  it('a log that lists is found by its id at once, before the rest of its batch is processed', async () => {
    const { doc, tableName } = deps.repos.table;
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    // Rollup updates wait: the batch stops between its log items and its marker.
    const slow = new Proxy(doc, {
      get: (target, prop) =>
        prop === 'send'
          ? async (c: never) => ((c as unknown) instanceof UpdateCommand ? gate.then(() => doc.send(c)) : doc.send(c))
          : Reflect.get(target, prop),
    });
    const logs = new LogStore({ doc, tableName, clock, logRetentionDays: 90, rollups: new RollupStore(doc, tableName, 365) });
    const queue = new InProcessQueue<LogQueueMessage>({ name: 'logs-listed', clock, batchSize: 50, maxAttempts: 3, backoffMs: 10 });
    const consumer = createIngestConsumer({ doc: slow, tableName, logs, rollups: new RollupStore(slow, tableName, 365), queue, clock, logger });
    const events = syntheticEvents(5, { start: START, spanMs: HOUR_MS, workspaceId: 'ws-listed', seed: 21, busyMinutes: 1 });
    const done = consumer(events.map((event, i) => ({ id: `m${i}`, body: { kind: 'log' as const, event }, attempts: 1 })));
    const listed = await until(async () => {
      const found: LogEvent[] = [];
      for await (const e of logs.all('ws-listed', { from: START - DAY_MS, to: NOW }, { maxExamined: 1_000 })) found.push(e);
      return found.length === events.length ? found : undefined;
    }, 'every log listed');
    expect(listed).toHaveLength(events.length);
    for (const e of listed) expect((await logs.get(e.id, ['ws-listed']))?.id).toBe(e.id);
    release();
    expect(await done).toEqual([]);
    // Processed in full: a second delivery is a duplicate.
    expect(await consumer(events.map((event, i) => ({ id: `again${i}`, body: { kind: 'log' as const, event }, attempts: 1 })))).toEqual([]);
    expect(consumer.stats.duplicates).toBe(events.length);
  });

  it('drops nothing it cannot read, and reports unknown messages', async () => {
    const r = rig({ fail: 0, partial: 0, down: false, failUpdates: 0 }, 6);
    const failed = await r.consumer([{ id: 'm1', attempts: 0, body: { kind: 'unknown' } as unknown as LogQueueMessage }]);
    expect(failed).toEqual([]);
  });
});
