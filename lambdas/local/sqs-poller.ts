/**
 * A queue worker of the server on AWS (GW_STORAGE=aws): what Lambda's SQS event source does for a
 * worker function, in the server. Every replica long-polls the queue and hands each batch to the
 * same consumer the function runs; the messages it processed are deleted, the others come back
 * after the queue's visibility timeout (to this replica or another), so SQS, not the replica,
 * holds work in progress: a replica that dies mid-batch loses nothing.
 */
import { DeleteMessageBatchCommand, ReceiveMessageCommand, type Message, type SQSClient } from '@aws-sdk/client-sqs';
import type { QueueConsumer, QueueMessage } from '../../layers/core/src/ports/queue.ts';
import type { Logger } from '../../layers/core/src/ports/logger.ts';

export interface SqsPollerOptions<T> {
  client: SQSClient;
  queueUrl: string;
  consumer: QueueConsumer<T>;
  logger: Logger;
  /** Long-poll wait of one receive (default 20 s, SQS's longest). */
  waitSeconds?: number;
  /** Pause after a failed receive, doubled up to 30 s while it keeps failing (default 1 s). */
  retryMs?: number;
}

export interface SqsPoller {
  /** Stops receiving and resolves once the batch in hand is processed (and its messages deleted). */
  stop(): Promise<void>;
}

export function startSqsPoller<T>(opts: SqsPollerOptions<T>): SqsPoller {
  const abort = new AbortController();
  const loop = pollLoop(opts, abort.signal);
  return {
    async stop() {
      abort.abort();
      await loop;
    },
  };
}

async function pollLoop<T>(opts: SqsPollerOptions<T>, signal: AbortSignal): Promise<void> {
  const baseRetry = opts.retryMs ?? 1_000;
  let retry = baseRetry;
  while (!signal.aborted) {
    let messages: Message[];
    try {
      const out = await opts.client.send(
        new ReceiveMessageCommand({
          QueueUrl: opts.queueUrl,
          MaxNumberOfMessages: 10,
          WaitTimeSeconds: opts.waitSeconds ?? 20,
          MessageSystemAttributeNames: ['ApproximateReceiveCount'],
        }),
        { abortSignal: signal },
      );
      messages = out.Messages ?? [];
      retry = baseRetry;
    } catch (err) {
      if (signal.aborted) return;
      opts.logger.error('queue receive failed', { queue: opts.queueUrl, error: err });
      await pause(retry, signal);
      retry = Math.min(retry * 2, 30_000);
      continue;
    }
    // Once received, a batch is finished even when stopping: its deletes must not be cut.
    if (messages.length > 0) await processBatch(opts, messages);
  }
}

/** Runs the consumer on one batch and deletes what it processed; failures stay for redelivery. */
async function processBatch<T>(opts: SqsPollerOptions<T>, messages: Message[]): Promise<void> {
  const batch: QueueMessage<T>[] = [];
  const handles = new Map<string, string>();
  for (const m of messages) {
    if (!m.MessageId || !m.ReceiptHandle) continue;
    try {
      const attempts = Math.max(0, Number(m.Attributes?.ApproximateReceiveCount) - 1 || 0);
      batch.push({ id: m.MessageId, body: JSON.parse(m.Body ?? '') as T, attempts });
      handles.set(m.MessageId, m.ReceiptHandle);
    } catch {
      // Unreadable: left to come back until the queue's redrive policy moves it to the DLQ.
    }
  }
  if (batch.length === 0) return;
  let failed: Set<string>;
  try {
    failed = new Set(await opts.consumer(batch));
  } catch (err) {
    opts.logger.error('queue consumer failed', { queue: opts.queueUrl, error: err });
    return;
  }
  const done = [...handles].filter(([id]) => !failed.has(id));
  if (done.length === 0) return;
  try {
    const out = await opts.client.send(
      new DeleteMessageBatchCommand({ QueueUrl: opts.queueUrl, Entries: done.map(([id, handle]) => ({ Id: id, ReceiptHandle: handle })) }),
    );
    // Not deleted: processed again after the visibility timeout (the consumers are idempotent).
    if (out.Failed?.length) opts.logger.warn('queue delete failed', { queue: opts.queueUrl, failed: out.Failed.length });
  } catch (err) {
    opts.logger.warn('queue delete failed', { queue: opts.queueUrl, error: err });
  }
}

const pause = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
  });
