/**
 * One item per log (issue 33): what an ingest batch writes, counted by the table (a proxy in
 * front of DynamoDB Local); a redelivered batch counted once; logs found by id from their id and
 * workspace alone, and logs of earlier versions through their pointer; and a worker that dies
 * between its steps (the batch is delivered again to a new worker) storing and counting every
 * event once.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { BatchWriteCommand, GetCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { CoreDeps } from '../../../../layers/core/src/deps.ts';
import { emptyAggregate, mergeInto } from '../../../../layers/core/src/observability/aggregate.ts';
import { createIngestConsumer } from '../../../../layers/core/src/observability/ingest.ts';
import type { LogEvent } from '../../../../layers/core/src/observability/log-event.ts';
import { newLogId, startOfLogId } from '../../../../layers/core/src/observability/log-id.ts';
import { LogStore } from '../../../../layers/core/src/observability/log-store.ts';
import type { LogQueueMessage } from '../../../../layers/core/src/observability/messages.ts';
import { RollupStore } from '../../../../layers/core/src/observability/rollups.ts';
import { DAY_MS, MINUTE_MS } from '../../../../layers/core/src/observability/time.ts';
import { ManualClock } from '../../../../layers/core/src/ports/clock.ts';
import type { Queue, QueueMessage } from '../../../../layers/core/src/ports/queue.ts';
import { pointerItem, pointerKey } from '../../../../layers/core/src/store/log-items.ts';
import { createTestDeps } from '../../../support/deps.ts';
import { syntheticEvents } from '../../../support/observability.ts';
import { startTableProxy } from '../../../support/table-proxy.ts';

const NOW = Date.UTC(2026, 5, 3, 12, 0, 0);
const START = NOW - 30 * MINUTE_MS;

interface TableCounts {
  /** Items written: BatchWriteItem's items, one per PutItem and UpdateItem. */
  items: number;
  /** Of which written by BatchWriteItem (log items and id pointers). */
  batchItems: number;
  byOperation: Record<string, number>;
}

/** DynamoDB Local behind a proxy that counts the items each write asks for. */
async function countingTable(target: string): Promise<{ url: string; counts: TableCounts; reset: () => void; close: () => Promise<void> }> {
  const proxy = await startTableProxy(target);
  const counts: TableCounts = { items: 0, batchItems: 0, byOperation: {} };
  proxy.observe = ({ operation, body }) => {
    counts.byOperation[operation] = (counts.byOperation[operation] ?? 0) + 1;
    if (operation === 'BatchWriteItem') {
      const input = JSON.parse(body) as { RequestItems: Record<string, unknown[]> };
      const n = Object.values(input.RequestItems).reduce((sum, r) => sum + r.length, 0);
      counts.items += n;
      counts.batchItems += n;
    } else if (operation === 'PutItem' || operation === 'UpdateItem' || operation === 'DeleteItem') {
      counts.items++;
    }
  };
  return { url: proxy.url, counts, reset: () => Object.assign(counts, { items: 0, batchItems: 0, byOperation: {} }), close: () => proxy.close() };
}

/** Gateway-like events of one busy minute: two models and two keys, with ids as the gateway makes them. */
function gatewayEvents(n: number, ws: string, seed: number): LogEvent[] {
  return syntheticEvents(n, { start: START, spanMs: MINUTE_MS, workspaceId: ws, seed, busyMinutes: 1 }).map((e, i) => ({
    ...e,
    id: newLogId(e.started_ms),
    model: i % 2 ? 'gpt-4o' : 'gpt-4o-mini',
    provider: 'openai',
    ai_service: 'openai',
    api_key_id: i % 3 ? 'key-a' : 'key-b',
    config_id: null,
    prompt_slug: null,
    status_code: 200,
    is_success: true,
  }));
}

/** The messages of a batch: events ten to a message, as the gateway sends them. */
const messagesOf = (events: readonly LogEvent[], prefix: string): QueueMessage<LogQueueMessage>[] =>
  Array.from({ length: Math.ceil(events.length / 10) }, (_, i) => ({
    id: `${prefix}-${i}`,
    attempts: 1,
    body: { kind: 'logs' as const, events: events.slice(i * 10, i * 10 + 10) },
  }));

/** A document client whose calls matching `stop` never answer: the worker dies there. */
function dyingAt(doc: DynamoDBDocumentClient, stop: (command: unknown) => boolean): DynamoDBDocumentClient {
  const send = (command: unknown) => (stop(command) ? new Promise(() => undefined) : doc.send(command as never));
  return new Proxy(doc, { get: (target, prop) => (prop === 'send' ? send : Reflect.get(target, prop)) });
}

describe('one item per log', () => {
  const clock = new ManualClock(NOW);
  const logger = new Logger({ logLevel: 'SILENT' });
  const sentBack: LogQueueMessage[] = [];
  const queue: Queue<LogQueueMessage> = { send: async (m) => void sentBack.push(m), sendBatch: async (ms) => void sentBack.push(...ms) };
  let table: Awaited<ReturnType<typeof countingTable>>;
  let deps: CoreDeps;
  let logs: LogStore;
  let rollups: RollupStore;

  beforeAll(async () => {
    table = await countingTable(inject('dynamodbEndpoint'));
    deps = await createTestDeps({ DYNAMODB_ENDPOINT: table.url }, { clock });
    const { doc, tableName } = deps.repos.table;
    rollups = new RollupStore(doc, tableName, 365);
    logs = new LogStore({ doc, tableName, clock, logRetentionDays: 90, rollups });
  });
  afterAll(async () => {
    deps.upstream.close();
    await table.close();
  });

  const consumerOn = (doc: DynamoDBDocumentClient) =>
    createIngestConsumer({
      doc,
      tableName: deps.repos.table.tableName,
      logs,
      rollups: new RollupStore(doc, deps.repos.table.tableName, 365),
      queue,
      clock,
      logger,
    });

  /** Requests counted in the workspace's day rollups, and its logs as listed. */
  async function stored(ws: string) {
    const total = emptyAggregate();
    for (const row of await rollups.query(ws, 'all', { gran: 'd', start: Math.floor(START / DAY_MS) * DAY_MS, end: NOW + DAY_MS })) mergeInto(total, row.agg);
    const listed: LogEvent[] = [];
    for await (const e of logs.all(ws, { from: START - DAY_MS, to: NOW }, { maxExamined: 10_000 })) listed.push(e);
    return { counted: total.sums.n, ids: listed.map((e) => e.id).sort() };
  }

  it('writes at most 1.5 items per log on a batch of 100 events, rollups included, and none on its redelivery', async () => {
    const events = gatewayEvents(100, 'ws-items', 1);
    const consumer = consumerOn(deps.repos.table.doc);
    table.reset();
    expect(await consumer(messagesOf(events, 'first'))).toEqual([]);
    // 100 log items and no pointer, 1 batch marker, and the rollups: 3 granularities x 4 combinations
    // (and the workspace's totals per bucket).
    expect(table.counts.items / events.length, JSON.stringify(table.counts)).toBeLessThanOrEqual(1.5);
    expect(table.counts.batchItems).toBe(100);
    expect(table.counts.byOperation).toMatchObject({ BatchWriteItem: 4, PutItem: 1, BatchGetItem: 1 });

    // SQS delivers the whole batch again: read, found counted, nothing written.
    table.reset();
    expect(await consumer(messagesOf(events, 'again'))).toEqual([]);
    expect(table.counts.items).toBe(0);
    expect(consumer.stats.duplicates).toBe(100);
    const { counted, ids } = await stored('ws-items');
    expect(counted).toBe(100);
    expect(ids).toEqual(events.map((e) => e.id).sort());
  });

  it('finds a log by its id and workspace alone as soon as it is listed, and a log of an earlier version through its pointer', async () => {
    const [fresh] = gatewayEvents(1, 'ws-by-id', 2);
    expect(startOfLogId(fresh!.id)).toBe(fresh!.started_ms);
    expect(await consumerOn(deps.repos.table.doc)(messagesOf([fresh!], 'by-id'))).toEqual([]);
    expect((await logs.get(fresh!.id, ['ws-other', 'ws-by-id']))?.trace_id).toBe(fresh!.trace_id);
    // No pointer was written for it; another workspace does not find it.
    const { doc, tableName } = deps.repos.table;
    expect((await doc.send(new GetCommand({ TableName: tableName, Key: pointerKey(fresh!.id) }))).Item).toBeUndefined();
    expect(await logs.get(fresh!.id, ['ws-other'])).toBeUndefined();

    // A log stored by an earlier version: a v4 id, its item and its settled pointer.
    const old = { ...fresh!, id: crypto.randomUUID(), trace_id: 'trace-old' };
    await doc.send(
      new BatchWriteCommand({
        RequestItems: {
          [tableName]: [
            { PutRequest: { Item: logs.itemOf(old) } },
            { PutRequest: { Item: pointerItem(logs.itemOf(old), { id: old.id, ws: 'ws-by-id', org: old.organisation_id }, false) } },
          ],
        },
      }),
    );
    expect((await logs.get(old.id, ['ws-by-id']))?.trace_id).toBe('trace-old');
    expect((await logs.get(old.id, []))?.trace_id).toBe('trace-old');
    // An event from an earlier gateway (a v4 id) ingested now gets its pointer, so it is found too.
    const earlier = { ...fresh!, id: crypto.randomUUID(), trace_id: 'trace-earlier' };
    expect(await consumerOn(doc)(messagesOf([earlier], 'earlier'))).toEqual([]);
    expect((await logs.get(earlier.id, []))?.trace_id).toBe('trace-earlier');
  });

  it('a worker that dies after writing the log items, before the rollups: the batch delivered again is counted once', async () => {
    const events = gatewayEvents(100, 'ws-crash-items', 3);
    const dead = consumerOn(dyingAt(deps.repos.table.doc, (c) => c instanceof UpdateCommand));
    void dead(messagesOf(events, 'crash'));
    // The items are written (listed, found by id) before the worker dies.
    await expect.poll(async () => (await stored('ws-crash-items')).ids.length).toBe(100);
    expect((await logs.get(events[7]!.id, ['ws-crash-items']))?.id).toBe(events[7]!.id);
    expect((await stored('ws-crash-items')).counted).toBe(0);

    // The visibility timeout passes: a new worker gets the same messages.
    expect(await consumerOn(deps.repos.table.doc)(messagesOf(events, 'crash'))).toEqual([]);
    expect(await stored('ws-crash-items')).toEqual({ counted: 100, ids: events.map((e) => e.id).sort() });
  });

  it('a worker that dies before writing anything, or after its marker: the batch delivered again is counted once', async () => {
    const events = gatewayEvents(50, 'ws-crash-edges', 4);
    const before = consumerOn(dyingAt(deps.repos.table.doc, (c) => c instanceof BatchWriteCommand));
    void before(messagesOf(events, 'edge'));
    expect(await consumerOn(deps.repos.table.doc)(messagesOf(events, 'edge'))).toEqual([]);
    expect((await stored('ws-crash-edges')).counted).toBe(50);

    // A worker done with the batch (its marker written) that dies before SQS hears of it: the batch comes again.
    const more = gatewayEvents(50, 'ws-crash-edges', 5);
    expect(await consumerOn(deps.repos.table.doc)(messagesOf(more, 'edge-2'))).toEqual([]);
    expect(await consumerOn(deps.repos.table.doc)(messagesOf(more, 'edge-2'))).toEqual([]);
    expect(await stored('ws-crash-edges')).toEqual({ counted: 100, ids: [...events, ...more].map((e) => e.id).sort() });
  });

  it('a batch whose items were written only in part settles the written ones and processes the rest again', async () => {
    const events = gatewayEvents(60, 'ws-part', 6);
    // The second BatchWriteItem request is refused for good: its events are not written.
    let requests = 0;
    const { doc } = deps.repos.table;
    const refusing = new Proxy(doc, {
      get: (target, prop) =>
        prop === 'send'
          ? (c: unknown) => {
              if (c instanceof BatchWriteCommand && requests++ === 1)
                return Promise.reject(Object.assign(new Error('refused'), { name: 'ValidationException' }));
              return doc.send(c as never);
            }
          : Reflect.get(target, prop),
    });
    sentBack.length = 0;
    const failed = await consumerOn(refusing)(messagesOf(events, 'part'));
    const back = [...sentBack];
    // Messages none of whose events were written come again; the others' unwritten events are sent back.
    const again = messagesOf(events, 'part').filter((m) => failed.includes(m.id));
    expect(await consumerOn(doc)([...again, ...back.map((body, i) => ({ id: `back-${i}`, attempts: 1, body }))])).toEqual([]);
    // And SQS delivers every message once more: nothing changes.
    expect(await consumerOn(doc)(messagesOf(events, 'part'))).toEqual([]);
    expect(await stored('ws-part')).toEqual({ counted: 60, ids: events.map((e) => e.id).sort() });
  });
});
