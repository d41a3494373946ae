/**
 * The log-ingest worker's consumer, for a batch of the `logs` queue. One item per log: each event
 * is written once, and the batch is settled by one marker item, whatever its size.
 * 1. skip events already counted: SQS may deliver a message twice. The log items are read by key
 *    (BatchGetItem: the event places its item); an item names the batch that wrote it (`bt`), and
 *    that batch's marker, if it exists and does not list the event, says it was counted;
 * 2. write the log items with BatchWriteItem, re-sending unprocessed items with backoff, each
 *    naming this batch; a log that lists is found by id at once (its id tells its start, so its
 *    key: observability/log-id.ts). An event whose id does not tell its start (ids of earlier
 *    versions) gets its id pointer too, in the same request;
 * 3. add the batch to the rollups, pre-aggregated so each distinct rollup item gets one atomic
 *    UpdateItem; an update that still fails is sent back to the queue as a rollup message of its
 *    own, so the updates that worked are never applied twice;
 * 4. write the batch's marker, which marks its events as done, but for the ones it lists (not
 *    written, or in a message that comes again): those are processed again when they come back.
 *    A crash anywhere before the marker leaves the batch pending: every event of it that comes
 *    again is processed again, as a pending pointer did before (a crash after some rollup updates
 *    may then count part of the batch twice; one before them counts nothing twice). A marker the
 *    table refuses goes back to the queue as a message of its own.
 * Why a marker and not a flag on each log or a pointer per log: the pointer written pending with
 * the item and settled after the rollups cost two more items per log (three in all); a per-batch
 * marker costs one item per batch, and the log items are what a duplicate check reads anyway.
 * Its TTL is past its logs' own, so while a log item exists its batch's marker does.
 * A message whose log items could not be written is reported failed: the queue delivers it again,
 * and after its retries keeps it in the dead-letter queue. Nothing is dropped. A message of several
 * events of which only some could be written (the table refusing writes halfway) is done, and its
 * unwritten events go back to the queue as a message of their own; were the message delivered
 * again whole, its written events would be found counted and skipped.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from '../ports/logger.ts';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Clock } from '../ports/clock.ts';
import type { Queue, QueueConsumer, QueueMessage } from '../ports/queue.ts';
import { deserialize, serialize, type RollupDeltaMessage } from './aggregate.ts';
import type { LogEvent } from './log-event.ts';
import { LogStore } from './log-store.ts';
import { batchItem, batchKey, pointerKey } from '../store/log-items.ts';
import type { LogQueueMessage, PointersMessage } from './messages.ts';
import { undecided } from './rollup-admission.ts';
import { RollupStore, rollupsOf, type PendingRollup } from './rollups.ts';
import { batchGet, batchPut, keyString, putItem, withRetry, type RetryOptions } from '../store/batch-io.ts';
import { DAY_MS } from './time.ts';

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

/** Events a batch marker lists at most (40 bytes each: the marker fits an item and a queue message). */
const MAX_UNSETTLED = 3_000;
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
  /** This batch's id: its log items carry it, its marker settles them. */
  batch: string;
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

/**
 * Events of `logs` an earlier batch counted: their item names a batch whose marker exists and does
 * not list them. Items of earlier versions (no batch) are counted once their pointer is settled.
 */
async function countedBefore(r: BatchRun, logs: readonly Incoming[]): Promise<Set<string>> {
  const { d } = r;
  const keys = logs.map((l) => d.logs.keyOf(l.event));
  const items = await batchGet(d.doc, d.tableName, keys, r.retry, ['bt']);
  const counted = new Set<string>();
  if (items.size === 0) return counted;
  const byBatch = new Map<string, string[]>();
  const legacy: string[] = [];
  logs.forEach((l, i) => {
    const item = items.get(keyString(keys[i] as { pk: string; sk: string }));
    if (!item) return;
    if (typeof item.bt === 'string') byBatch.set(item.bt, [...(byBatch.get(item.bt) ?? []), l.event.id]);
    else legacy.push(l.event.id);
  });
  const markers = byBatch.size > 0 ? await batchGet(d.doc, d.tableName, [...byBatch.keys()].map(batchKey), r.retry) : new Map();
  for (const [batch, ids] of byBatch) {
    const marker = markers.get(keyString(batchKey(batch)));
    // No marker: that batch did not finish, its events are processed again.
    if (!marker) continue;
    const unsettled = new Set(Array.isArray(marker.u) ? marker.u.map(String) : []);
    for (const id of ids) if (!unsettled.has(id)) counted.add(id);
  }
  if (legacy.length > 0) {
    const pointers = await batchGet(d.doc, d.tableName, legacy.map(pointerKey), r.retry);
    for (const id of legacy) {
      const pointer = pointers.get(keyString(pointerKey(id)));
      if (pointer && pointer.pending !== true) counted.add(id);
    }
  }
  return counted;
}

/** 1. Already counted (a second delivery): nothing more to do for those. */
async function freshLogs(r: BatchRun, logs: Incoming[]): Promise<Incoming[]> {
  // The same event twice in one batch is written and counted once.
  const seen = new Set<string>();
  const unique = logs.filter((l) => (seen.has(l.event.id) ? false : (seen.add(l.event.id), true)));
  if (unique.length === 0) return unique;
  try {
    const counted = await countedBefore(r, unique);
    r.stats.duplicates += logs.filter((l) => counted.has(l.event.id)).length;
    return unique.filter((l) => !counted.has(l.event.id));
  } catch (err) {
    r.d.logger.warn('could not check for duplicates; the batch goes back to the queue', { error: err });
    for (const l of logs) r.failed.add(l.messageId);
    return [];
  }
}

/**
 * 2. The log items (with the id pointers of events whose id does not tell their start, in the
 * same request); answers the events written in full.
 */
async function writeLogs(r: BatchRun, fresh: Incoming[]): Promise<Incoming[]> {
  const { d } = r;
  const items: Record<string, unknown>[] = [];
  const owner: number[] = [];
  fresh.forEach((l, i) => {
    items.push(d.logs.itemOf(l.event, r.batch));
    owner.push(i);
    if (d.logs.needsPointer(l.event)) {
      items.push(d.logs.pointerOf(l.event));
      owner.push(i);
    }
  });
  const failed = await batchPut(d.doc, d.tableName, items, r.retry, (j) => owner[j] as number);
  const notWritten = new Set([...failed].map((j) => owner[j] as number));
  const written = fresh.filter((_, i) => !notWritten.has(i));
  for (const i of notWritten) {
    const l = fresh[i] as Incoming;
    r.unwritten.set(l.messageId, [...(r.unwritten.get(l.messageId) ?? []), l.event]);
  }
  r.stats.logsWritten += written.length;
  if (notWritten.size > 0) d.logger.warn('log items not written; the queue will deliver them again', { count: notWritten.size });
  return written;
}

/** 3. Rollups of what was written; failed updates go back to the queue. Answers the messages left unsettled. */
async function applyRollups(r: BatchRun, written: Incoming[]): Promise<Set<string>> {
  const requeue: PendingRollup[] = [];
  // Dimension items first learn whether their value has an item of its own in the bucket.
  const pending = await r.d.rollups.admit([...rollupsOf(written).values()]);
  await pool(pending, r.concurrency, async (p) => {
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

/**
 * 4. The batch's marker: its written events are counted, but for those of messages that come
 * again; the events not written are listed too (a write that timed out may have stored the item).
 */
async function settleBatch(r: BatchRun, fresh: readonly Incoming[], written: readonly Incoming[]): Promise<void> {
  const { d } = r;
  const counted = written.filter((l) => !r.failed.has(l.messageId));
  // No event counted: no item of this batch is done, and without a marker they all count as pending.
  if (counted.length === 0) return;
  const done = new Set(counted.map((l) => l.event.id));
  const unsettled = fresh.filter((l) => !done.has(l.event.id)).map((l) => l.event.id);
  if (unsettled.length > MAX_UNSETTLED) {
    d.logger.warn('too many unsettled events for a batch marker; the batch stays pending', { count: unsettled.length });
    return;
  }
  // Past every log item of the batch (DynamoDB deletes expired items in no order, within days).
  const ttl = Math.max(...counted.map((l) => d.logs.ttlOf(l.event))) + DAY_MS / 1000;
  const marker = batchItem(r.batch, unsettled, ttl);
  try {
    await putItem(d.doc, d.tableName, marker, r.retry);
  } catch (err) {
    try {
      await d.queue.sendBatch([{ kind: 'pointers', items: [marker] }]);
      d.logger.warn('batch marker not written; sent back to the queue', { error: err });
    } catch (again) {
      // The logs are stored, counted and found by id: only a second delivery of their messages would count them again.
      d.logger.warn('batch marker not written nor queued', { error: again });
    }
  }
}

/** Items from earlier batches (markers, and earlier versions' pointers), written again (puts: idempotent). */
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

/**
 * Rollup messages from earlier batches. A value item sent back undecided (its bucket's admission
 * failed) is decided now; while it stays undecided its message comes again. Once decided it may
 * be several writes: one that fails then goes back to the queue on its own, so the others are not
 * applied twice.
 */
async function applyDeltas(r: BatchRun, deltas: DeltaMessage[]): Promise<void> {
  const placed = await r.d.rollups.admit(deltas.map((m) => ({ key: m.body.key, agg: deserialize(m.body.delta), messageIds: new Set([m.id]) })));
  const split = new Set(deltas.filter((m) => undecided(m.body.key)).map((m) => m.id));
  const requeue: PendingRollup[] = [];
  await pool(placed, r.concurrency, async (p) => {
    try {
      await withRetry(() => r.d.rollups.add(p.key, p.agg), r.retry);
      r.stats.rollupUpdates++;
    } catch (err) {
      if (!undecided(p.key) && [...p.messageIds].every((id) => split.has(id))) requeue.push(p);
      else {
        r.d.logger.warn('rollup update failed; the queue will deliver it again', { messageIds: [...p.messageIds], error: err });
        for (const id of p.messageIds) r.failed.add(id);
      }
    }
  });
  if (requeue.length === 0) return;
  try {
    await r.d.queue.sendBatch(requeue.map((p): RollupDeltaMessage => ({ kind: 'rollup', key: p.key, delta: serialize(p.agg) })));
    r.stats.rollupsRequeued += requeue.length;
  } catch (err) {
    // Rare: the table and the queue both failing. Delivering the messages again may count part of them twice.
    r.d.logger.error('rollup updates failed and could not be queued; their messages come again', { error: err });
    for (const p of requeue) for (const id of p.messageIds) r.failed.add(id);
  }
}

export function createIngestConsumer(d: IngestDeps): QueueConsumer<LogQueueMessage> & { stats: IngestStats } {
  const retry: RetryOptions = { ...d.retry, clock: d.clock };
  const stats: IngestStats = { logsWritten: 0, busyMs: 0, duplicates: 0, rollupUpdates: 0, rollupsRequeued: 0, failedMessages: 0, eventsRequeued: 0 };
  const ingest = async (batch: readonly QueueMessage<LogQueueMessage>[]): Promise<string[]> => {
    const r: BatchRun = { d, retry, stats, concurrency: d.concurrency ?? 16, failed: new Set(), unwritten: new Map(), batch: randomUUID() };
    const { logs, deltas, pointers } = sortBatch(d, batch);
    const fresh = await freshLogs(r, logs);
    const written = await writeLogs(r, fresh);
    for (const id of await applyRollups(r, written)) r.failed.add(id);
    await settleBatch(r, fresh, written);
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
