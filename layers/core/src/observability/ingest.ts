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

type DeltaMessage = QueueMessage<LogQueueMessage> & { body: RollupDeltaMessage };
type Incoming = { messageId: string; event: LogEvent };

/** One batch being ingested: what it needs and the messages that must come again. */
interface BatchRun {
  d: IngestDeps;
  retry: RetryOptions;
  stats: IngestStats;
  concurrency: number;
  failed: Set<string>;
}

function sortBatch(d: IngestDeps, batch: readonly QueueMessage<LogQueueMessage>[]): { logs: Incoming[]; deltas: DeltaMessage[] } {
  const logs: Incoming[] = [];
  const deltas: DeltaMessage[] = [];
  for (const m of batch) {
    if (m.body?.kind === 'log' && m.body.event?.id) logs.push({ messageId: m.id, event: m.body.event });
    else if (m.body?.kind === 'logs' && Array.isArray(m.body.events)) for (const event of m.body.events) logs.push({ messageId: m.id, event });
    else if (m.body?.kind === 'rollup') deltas.push(m as DeltaMessage);
    else d.logger.error('unknown message on the logs queue; dropped', { messageId: m.id });
  }
  return { logs, deltas };
}

/** 1. Already stored (a second delivery): nothing more to do for those. */
async function freshLogs(r: BatchRun, logs: Incoming[]): Promise<Incoming[]> {
  if (logs.length === 0) return logs;
  let fresh = logs;
  try {
    const done = await batchGet(r.d.doc, r.d.tableName, [...new Set(logs.map((l) => l.event.id))].map(pointerKey), r.retry);
    // A pending pointer: the item was written, the rest of the processing may not have been.
    fresh = logs.filter((l) => {
      const pointer = done.get(pointerKey(l.event.id).pk);
      return pointer === undefined || pointer.pending === true;
    });
    r.stats.duplicates += logs.length - fresh.length;
  } catch (err) {
    r.d.logger.warn('could not check for duplicates; the batch goes back to the queue', { error: err });
    for (const l of logs) r.failed.add(l.messageId);
    fresh = [];
  }
  // The same event twice in one batch is written and counted once.
  const seen = new Set<string>();
  return fresh.filter((l) => (seen.has(l.event.id) ? false : (seen.add(l.event.id), true)));
}

/** 2. The log items, each with a pending pointer; `unfindable`: events without even that pointer. */
async function writeLogs(r: BatchRun, fresh: Incoming[]): Promise<{ written: Incoming[]; unfindable: Set<string> }> {
  const { d } = r;
  const unwritten = await batchPut(d.doc, d.tableName, [...fresh.map((l) => d.logs.itemOf(l.event)), ...fresh.map((l) => d.logs.pointerOf(l.event, true))], r.retry);
  const notWritten = new Set([...unwritten].filter((i) => i < fresh.length));
  // Events without even a pending pointer: step 4 must write theirs, or they go back to the queue.
  const unfindable = new Set([...unwritten].filter((i) => i >= fresh.length).map((i) => (fresh[i - fresh.length] as Incoming).event.id));
  const written = fresh.filter((_, i) => !notWritten.has(i));
  for (const i of notWritten) r.failed.add((fresh[i] as Incoming).messageId);
  r.stats.logsWritten += written.length;
  if (notWritten.size > 0) d.logger.warn('log items not written; the queue will deliver them again', { count: notWritten.size });
  return { written, unfindable };
}

/** 3. Rollups of what was written; failed updates go back to the queue. Answers the messages left unsettled. */
async function applyRollups(r: BatchRun, written: Incoming[]): Promise<Set<string>> {
  const requeue: PendingRollup[] = [];
  await pool([...rollupsOf(written).values()], r.concurrency, async (p) => {
    try {
      await withRetry(() => r.d.rollups.add(p.key, p.agg), r.retry);
      r.stats.rollupUpdates++;
    } catch {
      requeue.push(p);
    }
  });
  const unsettled = new Set<string>();
  if (requeue.length === 0) return unsettled;
  try {
    await r.d.queue.sendBatch(requeue.map((p): RollupDeltaMessage => ({ kind: 'rollup', key: p.key, delta: serialize(p.agg) })));
    r.stats.rollupsRequeued += requeue.length;
    r.d.logger.warn('rollup updates failed; sent back to the queue', { count: requeue.length });
  } catch (err) {
    // Rare: the table and the queue both failing. Delivering the events again may count part of them twice.
    r.d.logger.error('rollup updates failed and could not be queued; their events go back to the queue', { error: err });
    for (const p of requeue) for (const id of p.messageIds) unsettled.add(id);
  }
  return unsettled;
}

/** 4. Pointers: the events are done. */
async function settlePointers(r: BatchRun, written: Incoming[], unsettled: Set<string>, unfindable: Set<string>): Promise<void> {
  for (const id of unsettled) r.failed.add(id);
  const settled = written.filter((l) => !unsettled.has(l.messageId));
  const noPointer = await batchPut(r.d.doc, r.d.tableName, settled.map((l) => r.d.logs.pointerOf(l.event)), r.retry);
  // A pending pointer finds the log already; delivering it again would count it twice.
  for (const i of noPointer) {
    const l = settled[i] as Incoming;
    if (unfindable.has(l.event.id)) r.failed.add(l.messageId);
  }
}

/** Rollup messages from earlier batches. */
async function applyDeltas(r: BatchRun, deltas: DeltaMessage[]): Promise<void> {
  await pool(deltas, r.concurrency, async (m) => {
    try {
      await withRetry(() => r.d.rollups.add(m.body.key, deserialize(m.body.delta)), r.retry);
      r.stats.rollupUpdates++;
    } catch (err) {
      r.d.logger.warn('rollup update failed; the queue will deliver it again', { messageId: m.id, error: err });
      r.failed.add(m.id);
    }
  });
}

export function createIngestConsumer(d: IngestDeps): QueueConsumer<LogQueueMessage> & { stats: IngestStats } {
  const retry: RetryOptions = { ...d.retry, clock: d.clock };
  const stats: IngestStats = { logsWritten: 0, busyMs: 0, duplicates: 0, rollupUpdates: 0, rollupsRequeued: 0, failedMessages: 0 };
  const ingest = async (batch: readonly QueueMessage<LogQueueMessage>[]): Promise<string[]> => {
    const r: BatchRun = { d, retry, stats, concurrency: d.concurrency ?? 16, failed: new Set() };
    const { logs, deltas } = sortBatch(d, batch);
    const { written, unfindable } = await writeLogs(r, await freshLogs(r, logs));
    await settlePointers(r, written, await applyRollups(r, written), unfindable);
    await applyDeltas(r, deltas);
    stats.failedMessages += r.failed.size;
    return [...r.failed];
  };
  const consumer = async (batch: readonly QueueMessage<LogQueueMessage>[]): Promise<string[]> => {
    const began = performance.now();
    try {
      return await ingest(batch);
    } finally {
      stats.busyMs += performance.now() - began;
    }
  };
  return Object.assign(consumer, { stats });
}
