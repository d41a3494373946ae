/**
 * What a logged request costs the table when the ingest worker gets it alone (a quiet deployment:
 * every SQS batch holds one event): the log item, its pointer and the rollup updates, counted on
 * DynamoDB Local. Issue 14: 24 rollup updates (8 dimensions x 3 granularities) became 3, and every
 * dimension still answered from them. Issue 34 added, so that charts read few items at any volume,
 * the bucket's total and an item per dimension value (bounded per bucket): a lone event now costs
 * 30 updates and 2 markers once per process; a busy batch writes one per distinct item.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CoreDeps } from '../../../../layers/core/src/deps.ts';
import { DIMENSIONS, dimensionValue } from '../../../../layers/core/src/observability/aggregate.ts';
import { createIngestConsumer } from '../../../../layers/core/src/observability/ingest.ts';
import { LogStore } from '../../../../layers/core/src/observability/log-store.ts';
import type { LogQueueMessage } from '../../../../layers/core/src/observability/messages.ts';
import { RollupStore, rollupPk, rollupSk, rollupsOf } from '../../../../layers/core/src/observability/rollups.ts';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { DAY_MS, HOUR_MS, MINUTE_MS } from '../../../../layers/core/src/observability/time.ts';
import { ManualClock } from '../../../../layers/core/src/ports/clock.ts';
import { InProcessQueue } from '../../../../layers/core/src/ports/local/in-process-queue.ts';
import { createTestDeps } from '../../../support/deps.ts';
import { syntheticEvents } from '../../../support/observability.ts';

const NOW = Date.UTC(2026, 2, 10, 12, 0, 0);
const WRITES = new Set(['PutCommand', 'UpdateCommand', 'DeleteCommand', 'BatchWriteCommand', 'TransactWriteCommand']);

describe('writes per logged request', () => {
  let deps: CoreDeps;
  const clock = new ManualClock(NOW);

  beforeAll(async () => {
    deps = await createTestDeps({}, { clock });
  });
  afterAll(() => deps.upstream.close());

  it('an event processed alone costs, per granularity, its combination, the total, an item per dimension and the admission of its values; every dimension answers from them', async () => {
    const { doc, tableName } = deps.repos.table;
    const calls: string[] = [];
    const counting = new Proxy(doc, {
      get: (target, prop) =>
        prop === 'send' ? (c: { constructor: { name: string } }) => (calls.push(c.constructor.name), target.send(c as never)) : Reflect.get(target, prop),
    }) as DynamoDBDocumentClient;
    const rollups = new RollupStore(counting, tableName, 365);
    const logs = new LogStore({ doc: counting, tableName, clock, logRetentionDays: 90, rollups });
    const queue = new InProcessQueue<LogQueueMessage>({ name: 'logs-alone', clock, batchSize: 1, maxAttempts: 3, backoffMs: 10 });
    const consumer = createIngestConsumer({
      doc: counting,
      tableName,
      logs,
      rollups,
      queue,
      clock,
      logger: new Logger({ logLevel: 'SILENT' }),
      retry: { attempts: 2, baseMs: 1 },
    });

    const [event] = syntheticEvents(1, { start: NOW - 10 * MINUTE_MS, spanMs: MINUTE_MS, workspaceId: 'ws-alone', seed: 5 });
    expect(await consumer([{ id: 'm1', body: { kind: 'log', event: event! }, attempts: 0 }])).toEqual([]);
    const writes = calls.filter((c) => WRITES.has(c));
    // Per granularity (minute, hour, day): its combination, the total, one item per dimension (7)
    // and the bucket's admitted values; once per process, the totals and dimensions markers.
    expect(writes.filter((c) => c === 'UpdateCommand')).toHaveLength(3 * (1 + 1 + 7 + 1) + 2);
    // The log item and its pointer, then the rollups.
    expect(writes.length).toBeLessThanOrEqual(34);
    // A second event in the same buckets (same values) needs no admission write: the process knows its values are admitted.
    calls.length = 0;
    expect(await consumer([{ id: 'm2', body: { kind: 'log', event: { ...event!, id: `${event!.id}-2` } }, attempts: 0 }])).toEqual([]);
    expect(calls.filter((c) => c === 'UpdateCommand')).toHaveLength(3 * (1 + 1 + 7));

    for (const gran of ['m', 'h', 'd'] as const) {
      const unit = { m: MINUTE_MS, h: HOUR_MS, d: DAY_MS }[gran];
      const start = Math.floor(event!.started_ms / unit) * unit;
      for (const dim of DIMENSIONS) {
        const rows = await new RollupStore(doc, tableName, 365).query('ws-alone', dim, { gran, start, end: start + unit });
        expect(
          rows.map((r) => [r.value, r.agg.sums.n]),
          `${gran} ${dim}`,
        ).toEqual([[dimensionValue(event!, dim), 2]]);
      }
    }
  });

  it('a whole aggregate written as one item reads back as the same item its adds create', async () => {
    const { doc, tableName } = deps.repos.table;
    const rollups = new RollupStore(doc, tableName, 365);
    const [first] = syntheticEvents(1, { start: NOW - HOUR_MS, spanMs: 10 * MINUTE_MS, workspaceId: 'ws-item-of', organisationId: 'org-1', seed: 11 });
    if (!first) throw new Error('no synthetic event');
    // Same dimensions, other amounts, user, status and time: one rollup combination, two events.
    const second = {
      ...first,
      id: `${first.id}-b`,
      started_ms: first.started_ms + 90_000,
      total_tokens: 999,
      cost_micros: 77,
      user: 'someone-else',
      total_ms: 12_345,
      trace_id: 'trace-b',
    };
    const both = [...rollupsOf([first, second].map((event, i) => ({ messageId: String(i), event }))).values()];
    const day = both.find((p) => p.key.gran === 'd');
    if (!day) throw new Error('no day rollup');
    expect(day.messageIds.size).toBe(2);
    // Added in two parts, as two ingest batches would; built at once, as the bulk loader does.
    for (const event of [first, second]) {
      const p = [...rollupsOf([{ messageId: event.id, event }]).values()].find((x) => x.key.gran === 'd');
      if (p) await rollups.add(p.key, p.agg);
    }
    const stored = await doc.send(
      new GetCommand({ TableName: tableName, Key: { pk: rollupPk(day.key.ws, 'd'), sk: rollupSk(day.key.bucket, day.key.values) } }),
    );
    expect(stored.Item).toEqual(rollups.itemOf(day.key, day.agg));
    expect(stored.Item?.n).toBe(2);
  });
});
