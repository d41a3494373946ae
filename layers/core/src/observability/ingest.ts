/**
 * The log-ingest worker's consumer, for a batch of the `logs` queue:
 * 1. skip events already stored (their pointer exists): SQS may deliver a message twice;
 * 2. write the log items with BatchWriteItem, re-sending unprocessed items with backoff, and with
 *    them pending id pointers, so a log that lists is found by id at once;
 * 3. add the batch to the rollups, pre-aggregated so each distinct rollup item gets one atomic
 *    UpdateItem; an update that still fails is sent back to the queue as a rollup message of its
 *    own, so the updates that worked are never applied twice;
 * 4. write the pointers again, settled, which mark the events as done (a redelivered event whose
 *    pointer is still pending is processed again).
 * A message whose log item could not be written is reported failed: the queue delivers it again,
 * and after its retries keeps it in the dead-letter queue. Nothing is dropped.
 */
import type { Logger } from '../ports/logger.ts';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Clock } from '../ports/clock.ts';
import type { Queue, QueueConsumer, QueueMessage } from '../ports/queue.ts';
import { deserialize, serialize, type RollupDeltaMessage } from './aggregate.ts';
import type { LogEvent } from './log-event.ts';
import { pointerKey, type LogStore } from './log-store.ts';
import type { LogQueueMessage } from './messages.ts';
import { rollupsOf, type PendingRollup, type RollupStore } from './rollups.ts';
import { batchGet, batchPut, withRetry, type RetryOptions } from './retry.ts';

export interface IngestDeps {
  doc: DynamoDBDocumentClient;
  tableName: string;
  logs: LogStore;
  rollups: RollupStore;
  /** Where failed rollup updates go back to (the `logs` queue itself). */
  queue: Queue<LogQueueMessage>;
  clock: Clock;
  logger: Logger;
  retry?: Omit<RetryOptions, 'clock'>;
  /** Rollup updates in flight at once (default 16). */
  concurrency?: number;
}

export interface IngestStats {
  logsWritten: number;
  /** Milliseconds spent processing batches (the worker's own time, for its rate). */
  busyMs: number;
  duplicates: number;
  rollupUpdates: number;
  rollupsRequeued: number;
  failedMessages: number;
}

async function pool<T>(items: readonly T[], size: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const workers = Array.from({ length: Math.min(size, items.length) }, async () => {
    while (next < items.length) {
      const item = items[next++] as T;
      await fn(item);
    }
  });
  await Promise.all(workers);
}

export function createIngestConsumer(d: IngestDeps): QueueConsumer<LogQueueMessage> & { stats: IngestStats } {
  const retry: RetryOptions = { ...d.retry, clock: d.clock };
  const concurrency = d.concurrency ?? 16;
  const stats: IngestStats = { logsWritten: 0, busyMs: 0, duplicates: 0, rollupUpdates: 0, rollupsRequeued: 0, failedMessages: 0 };

  const applyDelta = async (m: QueueMessage<LogQueueMessage> & { body: RollupDeltaMessage }): Promise<boolean> => {
    try {
      await withRetry(() => d.rollups.add(m.body.key, deserialize(m.body.delta)), retry);
      stats.rollupUpdates++;
      return true;
    } catch (err) {
      d.logger.warn('rollup update failed; the queue will deliver it again', { messageId: m.id, error: err });
      return false;
    }
  };

  const consumer = async (batch: readonly QueueMessage<LogQueueMessage>[]): Promise<string[]> => {
    const began = performance.now();
    try {
      return await ingest(batch);
    } finally {
      stats.busyMs += performance.now() - began;
    }
  };

  const ingest = async (batch: readonly QueueMessage<LogQueueMessage>[]): Promise<string[]> => {
    const failed = new Set<string>();
    const logs: { messageId: string; event: LogEvent }[] = [];
    const deltas: (QueueMessage<LogQueueMessage> & { body: RollupDeltaMessage })[] = [];
    for (const m of batch) {
      if (m.body?.kind === 'log' && m.body.event?.id) logs.push({ messageId: m.id, event: m.body.event });
      else if (m.body?.kind === 'logs' && Array.isArray(m.body.events)) for (const event of m.body.events) logs.push({ messageId: m.id, event });
      else if (m.body?.kind === 'rollup') deltas.push(m as QueueMessage<LogQueueMessage> & { body: RollupDeltaMessage });
      else d.logger.error('unknown message on the logs queue; dropped', { messageId: m.id });
    }

    // 1. Already stored (a second delivery): nothing more to do for those.
    let fresh = logs;
    if (logs.length > 0) {
      try {
        const done = await batchGet(d.doc, d.tableName, [...new Set(logs.map((l) => l.event.id))].map(pointerKey), retry);
        // A pending pointer: the item was written, the rest of the processing may not have been.
        fresh = logs.filter((l) => {
          const pointer = done.get(pointerKey(l.event.id).pk);
          return pointer === undefined || pointer.pending === true;
        });
        stats.duplicates += logs.length - fresh.length;
      } catch (err) {
        d.logger.warn('could not check for duplicates; the batch goes back to the queue', { error: err });
        for (const l of logs) failed.add(l.messageId);
        fresh = [];
      }
      // The same event twice in one batch is written and counted once.
      const seen = new Set<string>();
      fresh = fresh.filter((l) => (seen.has(l.event.id) ? false : (seen.add(l.event.id), true)));
    }

    // 2. The log items.
    const unwritten = await batchPut(d.doc, d.tableName, [...fresh.map((l) => d.logs.itemOf(l.event)), ...fresh.map((l) => d.logs.pointerOf(l.event, true))], retry);
    const notWritten = new Set([...unwritten].filter((i) => i < fresh.length));
    // Events without even a pending pointer: step 4 must write theirs, or they go back to the queue.
    const unfindable = new Set([...unwritten].filter((i) => i >= fresh.length).map((i) => (fresh[i - fresh.length] as { event: LogEvent }).event.id));
    const written = fresh.filter((_, i) => !notWritten.has(i));
    for (const i of notWritten) failed.add((fresh[i] as { messageId: string }).messageId);
    stats.logsWritten += written.length;
    if (notWritten.size > 0) d.logger.warn('log items not written; the queue will deliver them again', { count: notWritten.size });

    // 3. Rollups of what was written.
    const pending = [...rollupsOf(written).values()];
    const requeue: PendingRollup[] = [];
    await pool(pending, concurrency, async (p) => {
      try {
        await withRetry(() => d.rollups.add(p.key, p.agg), retry);
        stats.rollupUpdates++;
      } catch {
        requeue.push(p);
      }
    });
    const unsettled = new Set<string>();
    if (requeue.length > 0) {
      try {
        await d.queue.sendBatch(requeue.map((p): RollupDeltaMessage => ({ kind: 'rollup', key: p.key, delta: serialize(p.agg) })));
        stats.rollupsRequeued += requeue.length;
        d.logger.warn('rollup updates failed; sent back to the queue', { count: requeue.length });
      } catch (err) {
        // Rare: the table and the queue both failing. Delivering the events again may count part of them twice.
        d.logger.error('rollup updates failed and could not be queued; their events go back to the queue', { error: err });
        for (const p of requeue) for (const id of p.messageIds) unsettled.add(id);
      }
    }
    for (const id of unsettled) failed.add(id);

    // 4. Pointers: the events are done.
    const settled = written.filter((l) => !unsettled.has(l.messageId));
    const noPointer = await batchPut(d.doc, d.tableName, settled.map((l) => d.logs.pointerOf(l.event)), retry);
    // A pending pointer finds the log already; delivering it again would count it twice.
    for (const i of noPointer) {
      const l = settled[i] as { messageId: string; event: LogEvent };
      if (unfindable.has(l.event.id)) failed.add(l.messageId);
    }

    // Rollup messages from earlier batches.
    await pool(deltas, concurrency, async (m) => {
      if (!(await applyDelta(m))) failed.add(m.id);
    });

    stats.failedMessages += failed.size;
    return [...failed];
  };
  return Object.assign(consumer, { stats });
}
