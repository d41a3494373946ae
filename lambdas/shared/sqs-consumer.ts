/**
 * A queue worker's Lambda entry: an SQS event in, the failed message ids out (partial batch
 * responses, so only those come back; needs `reportBatchItemFailures` on the event source).
 */
import middy from '@middy/core';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import type { QueueConsumer, QueueMessage } from '../../layers/core/src/ports/queue.ts';

export interface SqsHandlerOptions {
  /** Told when the consumer throws (its whole batch is then reported failed); default console.error. */
  onError?: (err: unknown) => void;
}

export function createSqsHandler<T>(getConsumer: () => Promise<QueueConsumer<T>>, opts: SqsHandlerOptions = {}) {
  const onError = opts.onError ?? ((err: unknown) => console.error('Queue consumer failed', err));
  return middy<SQSEvent, SQSBatchResponse>().handler(async (event) => {
    const batch: QueueMessage<T>[] = [];
    // Unreadable bodies fail every time, so after maxReceiveCount SQS moves them to the DLQ.
    const failed = new Set<string>();
    for (const record of event.Records) {
      try {
        batch.push({
          id: record.messageId,
          body: JSON.parse(record.body) as T,
          attempts: Math.max(0, Number(record.attributes.ApproximateReceiveCount) - 1 || 0),
        });
      } catch {
        failed.add(record.messageId);
      }
    }
    if (batch.length > 0) {
      try {
        const consumer = await getConsumer();
        const ids = new Set(batch.map((m) => m.id));
        for (const id of await consumer(batch)) if (ids.has(id)) failed.add(id);
      } catch (err) {
        onError(err);
        for (const m of batch) failed.add(m.id);
      }
    }
    // In event order, as the records came.
    const batchItemFailures = event.Records.filter((r) => failed.has(r.messageId)).map((r) => ({ itemIdentifier: r.messageId }));
    return { batchItemFailures };
  });
}
