/**
 * The log-ingest worker's consumer, for a batch of the `logs` queue:
 * 1. skip events already stored (their pointer exists): SQS may deliver a message twice;
 * 2. write the log items with BatchWriteItem, re-sending unprocessed items with backoff, and with
 *    them pending id pointers, so a log that lists is found by id at once;
 * 3. add the batch to the rollups, pre-aggregated so each distinct rollup item gets one atomic
 *    UpdateItem; an update that still fails is sent back to the queue as a rollup message of its
 *    own, so the updates that worked are never applied twice;
 * 4. write the pointers again, settled, which mark the events as done (a redelivered event whose
 *    pointer is still pending is processed again); pointers the table refuses go back to the queue
 *    as a message of their own, so a pending one does not outlive the outage.
 * A message whose log items could not be written is reported failed: the queue delivers it again,
 * and after its retries keeps it in the dead-letter queue. Nothing is dropped. A message of several
 * events of which only some could be written (the table refusing writes halfway) is done, and its
 * unwritten events go back to the queue as a message of their own: delivering the whole message
 * again would process the written ones a second time, and count them twice.
 */
import type { Logger } from '../ports/logger.ts';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Clock } from '../ports/clock.ts';
import type { Queue, QueueConsumer, QueueMessage } from '../ports/queue.ts';
import { deserialize, serialize, type RollupDeltaMessage } from './aggregate.ts';
import type { LogEvent } from './log-event.ts';
import { LogStore } from './log-store.ts';
import { pointerKey } from '../store/log-items.ts';
import type { LogQueueMessage, PointersMessage } from './messages.ts';
import { RollupStore, rollupsOf, type PendingRollup } from './rollups.ts';
import { batchGet, batchPut, withRetry, type RetryOptions } from '../store/batch-io.ts';

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
  /** Unwritten events of partly written messages, sent back to the queue on their own. */
  eventsRequeued: number;
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
type PointerMessage = QueueMessage<LogQueueMessage> & { body: PointersMessage };

/** Settled pointers in one requeued message at most (about 300 bytes each: SQS takes 256 KiB). */
const POINTERS_PER_MESSAGE = 200;
type Incoming = { messageId: string; event: LogEvent };

/** One batch being ingested: what it needs and the messages that must come again. */
interface BatchRun {
  d: IngestDeps;
  retry: RetryOptions;
  stats: IngestStats;
  concurrency: number;
  failed: Set<string>;
  /** Events whose log item could not be written, by message. */
  unwritten: Map<string, LogEvent[]>;
}

function sortBatch(d: IngestDeps, batch: readonly QueueMessage<LogQueueMessage>[]): { logs: Incoming[]; deltas: DeltaMessage[]; pointers: PointerMessage[] } {
  const logs: Incoming[] = [];
  const deltas: DeltaMessage[] = [];
  const pointers: PointerMessage[] = [];
  for (const m of batch) {
    if (m.body?.kind === 'log' && m.body.event?.id) logs.push({ messageId: m.id, event: m.body.event });
    else if (m.body?.kind === 'logs' && Array.isArray(m.body.events)) for (const event of m.body.events) logs.push({ messageId: m.id, event });
    else if (m.body?.kind === 'rollup') deltas.push(m as DeltaMessage);
    else if (m.body?.kind === 'pointers' && Array.isArray(m.body.items)) pointers.push(m as PointerMessage);
    else d.logger.error('unknown message on the logs queue; dropped', { messageId: m.id });
  }
  return { logs, deltas, pointers };
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

/**
 * 2. The log items, each with a pending pointer; `unfindable`: events without even that pointer.
 * Each item is next to its pointer, so a table that refuses writes from some point on (whole
 * BatchWriteItem requests failing) leaves an event either findable or not written at all.
 */
async function writeLogs(r: BatchRun, fresh: Incoming[]): Promise<{ written: Incoming[]; unfindable: Set<string> }> {
  const { d } = r;
  const items = fresh.flatMap((l) => [d.logs.itemOf(l.event), d.logs.pointerOf(l.event, true)]);
  // 12 pairs per request: a pair is never split between two requests.
  const unwritten = await batchPut(d.doc, d.tableName, items, r.retry, 24);
  const notWritten = new Set([...unwritten].filter((i) => i % 2 === 0).map((i) => i / 2));
  // Events without even a pending pointer: step 4 must write theirs, or they go back to the queue.
  const unfindable = new Set([...unwritten].filter((i) => i % 2 === 1 && !notWritten.has((i - 1) / 2)).map((i) => (fresh[(i - 1) / 2] as Incoming).event.id));
  const written = fresh.filter((_, i) => !notWritten.has(i));
  for (const i of notWritten) {
    const l = fresh[i] as Incoming;
    r.unwritten.set(l.messageId, [...(r.unwritten.get(l.messageId) ?? []), l.event]);
  }
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
  const items = settled.map((l) => r.d.logs.pointerOf(l.event));
  const noPointer = await batchPut(r.d.doc, r.d.tableName, items, r.retry);
  // A pending pointer finds the log already; delivering it again would count it twice. Its settled
  // pointer is written later, from a message of its own.
  const later: Record<string, unknown>[] = [];
  for (const i of noPointer) {
    const l = settled[i] as Incoming;
    if (unfindable.has(l.event.id)) r.failed.add(l.messageId);
    else later.push(items[i] as Record<string, unknown>);
  }
  if (later.length === 0) return;
  const back: PointersMessage[] = [];
  for (let i = 0; i < later.length; i += POINTERS_PER_MESSAGE) back.push({ kind: 'pointers', items: later.slice(i, i + POINTERS_PER_MESSAGE) });
  try {
    await r.d.queue.sendBatch(back);
  } catch (err) {
    // The logs are stored, counted and found by id (pending pointers): only a second delivery of
    // their messages would count them again.
    r.d.logger.warn('settled log pointers not written nor queued', { count: later.length, error: err });
  }
}

/** Pointers from earlier batches, written again (puts: idempotent). */
async function applyPointers(r: BatchRun, messages: PointerMessage[]): Promise<void> {
  await pool(messages, r.concurrency, async (m) => {
    if ((await batchPut(r.d.doc, r.d.tableName, m.body.items, r.retry)).size > 0) r.failed.add(m.id);
  });
}

/**
 * 5. Messages with unwritten events: a message none of whose events was written (or that failed
 * for another reason too) comes again whole; otherwise only its unwritten events go back to the
 * queue, and the message is done. If they cannot be queued, the whole message comes again.
 */
async function requeueUnwritten(r: BatchRun, logs: readonly Incoming[]): Promise<void> {
  const events = new Map<string, number>();
  for (const l of logs) events.set(l.messageId, (events.get(l.messageId) ?? 0) + 1);
  const back: LogQueueMessage[] = [];
  const parts: string[] = [];
  for (const [messageId, unwritten] of r.unwritten) {
    if (r.failed.has(messageId) || unwritten.length >= (events.get(messageId) ?? 0)) r.failed.add(messageId);
    else {
      back.push(unwritten.length === 1 ? { kind: 'log', event: unwritten[0] as LogEvent } : { kind: 'logs', events: unwritten });
      parts.push(messageId);
    }
  }
  if (back.length === 0) return;
  try {
    await r.d.queue.sendBatch(back);
    r.stats.eventsRequeued += back.reduce((n, m) => n + (m.kind === 'logs' ? m.events.length : 1), 0);
  } catch (err) {
    r.d.logger.warn('unwritten log events could not be queued on their own; their messages come again whole', { error: err });
    for (const id of parts) r.failed.add(id);
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
  const stats: IngestStats = { logsWritten: 0, busyMs: 0, duplicates: 0, rollupUpdates: 0, rollupsRequeued: 0, failedMessages: 0, eventsRequeued: 0 };
  const ingest = async (batch: readonly QueueMessage<LogQueueMessage>[]): Promise<string[]> => {
    const r: BatchRun = { d, retry, stats, concurrency: d.concurrency ?? 16, failed: new Set(), unwritten: new Map() };
    const { logs, deltas, pointers } = sortBatch(d, batch);
    const { written, unfindable } = await writeLogs(r, await freshLogs(r, logs));
    await settlePointers(r, written, await applyRollups(r, written), unfindable);
    await requeueUnwritten(r, logs);
    await applyDeltas(r, deltas);
    await applyPointers(r, pointers);
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

/** What the log-ingest worker is built from: the table, the `logs` queue, a clock, a logger, and two retention settings. */
export interface IngestWiring {
  doc: DynamoDBDocumentClient;
  tableName: string;
  queue: Queue<LogQueueMessage>;
  clock: Clock;
  logger: Logger;
  logRetentionDays: number;
  metricsRetentionDays: number;
}

/**
 * The ingest consumer from only what it uses, so that the log-ingest function's bundle reaches
 * none of the gateway, the admin API or the other AWS clients (`ingestConsumer(deps)` in
 * install.ts serves processes that have the whole dependency set anyway).
 */
export function ingestConsumerOf(w: IngestWiring): QueueConsumer<LogQueueMessage> & { stats: IngestStats } {
  const rollups = new RollupStore(w.doc, w.tableName, w.metricsRetentionDays, () => w.clock.now());
  const logs = new LogStore({ doc: w.doc, tableName: w.tableName, clock: w.clock, logRetentionDays: w.logRetentionDays, rollups });
  return createIngestConsumer({ doc: w.doc, tableName: w.tableName, logs, rollups, queue: w.queue, clock: w.clock, logger: w.logger });
}
