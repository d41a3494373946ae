/**
 * The log-ingest function as SQS drives it, when the table refuses writes halfway through a batch:
 * the messages it reports in `batchItemFailures` come again (and after maxReceiveCount from the
 * dead-letter queue, by a redrive), what it sends back to the queue comes again as messages of its
 * own, and one more delivery of any message (SQS delivers at least once) changes nothing. In the
 * end every event is stored once and counted once.
 */
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import type { CoreDeps } from '../../../layers/core/src/deps.ts';
import { addEvent, emptyAggregate, mergeInto } from '../../../layers/core/src/observability/aggregate.ts';
import { ingestConsumer, observability } from '../../../layers/core/src/observability/install.ts';
import type { LogEvent } from '../../../layers/core/src/observability/log-event.ts';
import { LOGS_QUEUE, type LogQueueMessage } from '../../../layers/core/src/observability/messages.ts';
import { DAY_MS, HOUR_MS } from '../../../layers/core/src/observability/time.ts';
import type { Clock } from '../../../layers/core/src/ports/clock.ts';
import { createLogIngestHandler } from '../../../lambdas/workers/log-ingest/handler.ts';
import { createTestDeps } from '../../support/deps.ts';
import { syntheticEvents } from '../../support/observability.ts';
import { startRefusingTable, type RefusingTable } from '../../support/refusing-table.ts';
import { sqsRecord } from '../../support/sqs-event.ts';

const context = { functionName: 'gantry-log-ingest', awsRequestId: 'req-1', getRemainingTimeInMillis: () => 60_000 } as unknown as Context;
type Handler = (e: SQSEvent, c: Context) => Promise<SQSBatchResponse>;

/** Real time, but the worker's retry backoffs end at once (the table's answer is what matters). */
const noWait: Clock = { now: () => Date.now(), sleep: async () => undefined };

/** The same record delivered once more, as SQS counts it. */
const redelivered = (r: SQSRecord): SQSRecord => ({
  ...r,
  attributes: { ...r.attributes, ApproximateReceiveCount: String(Number(r.attributes.ApproximateReceiveCount) + 1) },
});

describe('log-ingest function when the table refuses writes halfway', () => {
  let table: RefusingTable;
  let deps: CoreDeps;
  /** What the worker sends back to the `logs` queue: SQS delivers it to the function again. */
  const sentBack: LogQueueMessage[] = [];

  beforeAll(async () => {
    table = await startRefusingTable(inject('dynamodbEndpoint'));
    deps = await createTestDeps({ DYNAMODB_ENDPOINT: table.url }, { clock: noWait });
    deps.queues.get<LogQueueMessage>(LOGS_QUEUE).setConsumer?.(async (batch) => (sentBack.push(...batch.map((m) => m.body)), []));
  });
  afterAll(async () => {
    deps.upstream.close();
    await table.close();
  });

  /** Delivers records to the function; answers the records SQS would deliver again. */
  async function deliver(handler: Handler, records: SQSRecord[]): Promise<SQSRecord[]> {
    const out = await handler({ Records: records }, context);
    const failed = new Set(out.batchItemFailures.map((f) => f.itemIdentifier));
    return records.filter((r) => failed.has(r.messageId));
  }

  /** What the worker sent back since the last call, as SQS records. */
  async function takeSentBack(): Promise<SQSRecord[]> {
    await deps.queues.get(LOGS_QUEUE).drain?.();
    return sentBack.splice(0).map((body) => sqsRecord(JSON.stringify(body), 'logs'));
  }

  async function stored(ws: string, from: number, to: number) {
    const o = observability(deps);
    const events: LogEvent[] = [];
    for await (const e of o.logs.all(ws, { from, to }, { maxExamined: 10_000 })) events.push(e);
    const total = emptyAggregate();
    for (const row of await o.rollups.query(ws, 'all', { gran: 'd', start: Math.floor(from / DAY_MS) * DAY_MS, end: to + DAY_MS })) mergeInto(total, row.agg);
    return { events, total };
  }

  it('stores every event of the batch once and counts it once', async () => {
    const start = Date.now() - 2 * HOUR_MS;
    const events = syntheticEvents(60, { start, spanMs: HOUR_MS, workspaceId: 'ws-halfway', seed: 41, busyMinutes: 4 });
    // Six messages of ten events, as the gateway batches them.
    const records = Array.from({ length: 6 }, (_, i) => sqsRecord(JSON.stringify({ kind: 'logs', events: events.slice(i * 10, i * 10 + 10) }), 'logs'));
    const handler = createLogIngestHandler(() => Promise.resolve(ingestConsumer(deps))) as unknown as Handler;

    // Two BatchWriteItem requests of the batch go through, then the table refuses every write.
    table.refuseWritesAfter(2);
    const failed = await deliver(handler, records);
    expect(table.refused()).toBeGreaterThan(0);
    // Halfway: some messages are done, the others come again.
    expect(failed.length).toBeGreaterThan(0);
    expect(failed.length).toBeLessThan(records.length);

    // The table takes writes again: SQS delivers the failed messages again, and what the worker sent back.
    table.accept();
    let next = [...failed.map(redelivered), ...(await takeSentBack())];
    for (let round = 0; next.length > 0 && round < 5; round++) next = [...(await deliver(handler, next)).map(redelivered), ...(await takeSentBack())];
    expect(next).toEqual([]);

    // At least once: every message of the batch delivered once more changes nothing.
    expect(await deliver(handler, records.map(redelivered))).toEqual([]);
    expect(await takeSentBack()).toEqual([]);

    const { events: got, total } = await stored('ws-halfway', start - DAY_MS, Date.now());
    expect(got.map((e) => e.id).sort()).toEqual(events.map((e) => e.id).sort());
    const want = emptyAggregate();
    for (const e of events) addEvent(want, e);
    expect(total.sums).toEqual(want.sums);
    // Found by id too (these ids do not tell their start: through their pointer).
    for (const e of events) expect((await observability(deps).logs.get(e.id, [e.workspace_id ?? '-']))?.id).toBe(e.id);
  });
});
