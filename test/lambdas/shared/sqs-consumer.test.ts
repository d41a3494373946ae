/** The queue worker entry as Lambda runs it: an SQS event in, partial batch failures out. */
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { createSqsHandler, type SqsHandlerOptions } from '../../../lambdas/shared/sqs-consumer.ts';
import type { QueueConsumer, QueueMessage } from '../../../layers/core/src/ports/queue.ts';

const context = { functionName: 'gantry-worker', awsRequestId: 'req-1', getRemainingTimeInMillis: () => 29_000 } as unknown as Context;

function record(messageId: string, body: string, receiveCount = 1): SQSRecord {
  return {
    messageId,
    receiptHandle: `handle-${messageId}`,
    body,
    attributes: {
      ApproximateReceiveCount: String(receiveCount),
      SentTimestamp: '1767225600000',
      SenderId: 'AIDAEXAMPLE',
      ApproximateFirstReceiveTimestamp: '1767225600001',
    },
    messageAttributes: {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: 'arn:aws:sqs:eu-west-1:123456789012:gantry-log-events',
    awsRegion: 'eu-west-1',
  };
}

type Handler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse>;

function handlerFor<T>(consumer: QueueConsumer<T>, opts: SqsHandlerOptions = {}) {
  const batches: QueueMessage<T>[][] = [];
  const handler = createSqsHandler<T>(
    async () => async (batch) => {
      batches.push([...batch]);
      return consumer(batch);
    },
    opts,
  ) as unknown as Handler;
  return { batches, handler };
}

const event = (...records: SQSRecord[]): SQSEvent => ({ Records: records });

describe('createSqsHandler', () => {
  it('hands the parsed bodies to the consumer and reports no failure when all succeed', async () => {
    const { batches, handler } = handlerFor<{ n: number }>(async () => []);
    const result = await handler(event(record('m1', '{"n":1}'), record('m2', '{"n":2}', 3)), context);
    expect(result).toEqual({ batchItemFailures: [] });
    expect(batches).toEqual([
      [
        { id: 'm1', body: { n: 1 }, attempts: 0 },
        // ApproximateReceiveCount counts this delivery too.
        { id: 'm2', body: { n: 2 }, attempts: 2 },
      ],
    ]);
  });

  it('reports the ids the consumer failed, ignoring ids not in the event', async () => {
    const { handler } = handlerFor<string>(async () => ['m3', 'm1', 'elsewhere']);
    const result = await handler(event(record('m1', '"a"'), record('m2', '"b"'), record('m3', '"c"')), context);
    expect(result).toEqual({ batchItemFailures: [{ itemIdentifier: 'm1' }, { itemIdentifier: 'm3' }] });
  });

  it('reports every record when the consumer throws, and tells onError', async () => {
    const errors: unknown[] = [];
    const boom = new Error('downstream is down');
    const { handler } = handlerFor<string>(
      async () => {
        throw boom;
      },
      { onError: (err) => errors.push(err) },
    );
    const result = await handler(event(record('m1', '"a"'), record('m2', '"b"')), context);
    expect(result).toEqual({ batchItemFailures: [{ itemIdentifier: 'm1' }, { itemIdentifier: 'm2' }] });
    expect(errors).toEqual([boom]);
  });

  it('reports every record when the consumer cannot be built', async () => {
    const errors: unknown[] = [];
    const handler = createSqsHandler<string>(() => Promise.reject(new Error('no deps')), {
      onError: (err) => errors.push(err),
    }) as unknown as Handler;
    const result = await handler(event(record('m1', '"a"')), context);
    expect(result).toEqual({ batchItemFailures: [{ itemIdentifier: 'm1' }] });
    expect(errors).toHaveLength(1);
  });

  it('reports a record whose body is not JSON, and hands the others on', async () => {
    const { batches, handler } = handlerFor<number>(async () => []);
    const result = await handler(event(record('m1', '1'), record('m2', 'not json {'), record('m3', '3')), context);
    expect(result).toEqual({ batchItemFailures: [{ itemIdentifier: 'm2' }] });
    expect(batches.map((b) => b.map((m) => m.body))).toEqual([[1, 3]]);
  });

  it('does not call the consumer when no record could be read', async () => {
    const { batches, handler } = handlerFor<number>(async () => []);
    const result = await handler(event(record('m1', ''), record('m2', '{')), context);
    expect(result).toEqual({ batchItemFailures: [{ itemIdentifier: 'm1' }, { itemIdentifier: 'm2' }] });
    expect(batches).toEqual([]);
  });

  it('answers an empty event with no failures', async () => {
    const { batches, handler } = handlerFor<number>(async () => []);
    expect(await handler(event(), context)).toEqual({ batchItemFailures: [] });
    expect(batches).toEqual([]);
  });
});
