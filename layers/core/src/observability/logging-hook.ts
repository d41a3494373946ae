/**
 * The `logging` gateway hook: once the answer is complete, turns the request's record into a log
 * event and sends it to the `logs` queue. Bodies above the inline limit go to blob storage first. A
 * send that fails after the queue's own retries is written to the process log in full, so an event
 * is never silently dropped.
 *
 * With `durableAnswers` (the local server with a spool) the runtime may hold the end of an answer
 * until its event is kept (`durable(logId)`: the queue's send resolved, i.e. the event is on disk),
 * so a crash right after an answer cannot lose its log. Events then go to the queue at the next
 * turn of the event loop rather than after `batchWaitMs`: the spool's group commit batches them.
 */
import type { Logger } from '../ports/logger.ts';
import type { GatewayHook, GatewayRecord } from '../kernel/lifecycle.ts';
import type { BlobStore } from '../ports/blob.ts';
import type { Clock } from '../ports/clock.ts';
import type { Queue } from '../ports/queue.ts';
import { fromRecord, INLINE_BODY_BYTES, isCacheHit, type LogEvent } from './log-event.ts';
import type { LogQueueMessage } from './messages.ts';

export interface LoggingHookDeps {
  queue: () => Queue<LogQueueMessage>;
  blobs: BlobStore;
  clock: Clock;
  logger: Logger;
  /** What a request would have cost without the cache (the price book, ignoring the cache status). */
  uncachedCostMicros?: (record: GatewayRecord) => number | undefined;
  /** Events in one queue message at most, and how long a partial message waits (defaults 50, 20 ms). */
  batchEvents?: number;
  batchWaitMs?: number;
  /** Track when each event is kept, for `durable(logId)`; how long an answer waits for it at most (default 5 s). */
  durableAnswers?: boolean;
  durableWaitMs?: number;
}

export interface DurabilityStats {
  /** Answers that waited for their event and ended once it was kept. */
  kept: number;
  /** Answers that ended after durableWaitMs without their event kept (no record, a slow disk). */
  late: number;
}

export interface LoggingHook extends GatewayHook {
  pending(): number;
  /**
   * With durableAnswers: resolves once the event of this log id (`x-gw-log-id`) was accepted by the
   * queue (or could not be), or after durableWaitMs. Undefined without durableAnswers.
   */
  durable?(logId: string): Promise<void>;
  durabilityStats?(): DurabilityStats;
}

/** Bytes of events in one message at most: SQS takes 256 KiB. */
const MAX_MESSAGE_BYTES = 200 * 1024;

/** Settled log ids remembered for an answer that asks after its event was kept (bounded). */
const RECENT_KEPT = 4096;

/** Per log id, the answer waiting for its event to be kept. */
function keptTracker(waitMs: number) {
  const waiting = new Map<string, { promise: Promise<void>; resolve: () => void }>();
  const recent = new Set<string>();
  const stats: DurabilityStats = { kept: 0, late: 0 };
  const entry = (id: string) => {
    let w = waiting.get(id);
    if (!w) {
      let resolve: () => void = () => undefined;
      const promise = new Promise<void>((r) => (resolve = r));
      w = { promise, resolve };
      waiting.set(id, w);
    }
    return w;
  };
  return {
    stats,
    /** The hook has the record: its answer, if it asks, waits for settle. */
    expect: (id: string) => void entry(id),
    settle(ids: readonly string[]) {
      for (const id of ids) {
        waiting.get(id)?.resolve();
        waiting.delete(id);
        recent.add(id);
        if (recent.size > RECENT_KEPT) recent.delete(recent.values().next().value as string);
      }
    },
    wait(id: string): Promise<void> {
      if (recent.delete(id)) return (stats.kept++, Promise.resolve());
      const w = entry(id);
      let timer: ReturnType<typeof setTimeout> | undefined;
      // An id this hook never gets a record for must not hold its answer for ever.
      const late = new Promise<boolean>((r) => (timer = setTimeout(() => r(true), waitMs)));
      return Promise.race([w.promise.then(() => false), late]).then((isLate) => {
        clearTimeout(timer);
        if (isLate) {
          stats.late++;
          waiting.delete(id);
        } else stats.kept++;
      });
    },
  };
}

export function loggingHook(deps: LoggingHookDeps): LoggingHook {
  const maxEvents = deps.batchEvents ?? 50;
  const waitMs = deps.batchWaitMs ?? 20;
  const kept = deps.durableAnswers ? keptTracker(deps.durableWaitMs ?? 5_000) : undefined;
  const inFlight = new Set<Promise<void>>();
  let buffer: LogEvent[] = [];
  let bytes = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let soon: ReturnType<typeof setImmediate> | undefined;

  const track = (p: Promise<void>) => {
    const tracked = p.finally(() => inFlight.delete(tracked));
    inFlight.add(tracked);
  };

  const sendBuffered = () => {
    if (timer) clearTimeout(timer);
    if (soon) clearImmediate(soon);
    timer = soon = undefined;
    if (buffer.length === 0) return;
    const events = buffer;
    buffer = [];
    bytes = 0;
    const message: LogQueueMessage = events.length === 1 ? { kind: 'log', event: events[0] as LogEvent } : { kind: 'logs', events };
    track(
      deps
        .queue()
        .send(message)
        .catch((err: unknown) => {
          // The events themselves go to the process log, from where they can be replayed.
          for (const event of events)
            deps.logger.error('log event not queued', { traceId: event.trace_id, logId: event.id, error: err, log_event_unsent: event });
        })
        .finally(() => kept?.settle(events.map((e) => e.id))),
    );
  };

  const add = (event: LogEvent) => {
    // Bodies are the only large parts (metadata is bounded): no need to serialise the event to size it.
    const size =
      2048 +
      JSON.stringify(event.metadata).length +
      (event.request_body !== undefined ? (event.request_bytes ?? INLINE_BODY_BYTES) : 0) +
      (event.response_body !== undefined ? Math.min(event.response_bytes ?? INLINE_BODY_BYTES, INLINE_BODY_BYTES) : 0);
    if (bytes + size > MAX_MESSAGE_BYTES) sendBuffered();
    buffer.push(event);
    bytes += size;
    if (buffer.length >= maxEvents) sendBuffered();
    // Answers wait for these events: the next turn of the loop, with whatever else completed in this one.
    else if (kept) soon ??= setImmediate(sendBuffered);
    else if (!timer) {
      timer = setTimeout(sendBuffered, waitMs);
      timer.unref?.();
    }
  };

  const build = async (record: GatewayRecord): Promise<void> => {
    const savings = isCacheHit(record.cacheStatus) ? deps.uncachedCostMicros?.(record) : undefined;
    const event = await fromRecord(record, {
      blobs: deps.blobs,
      now: deps.clock.now(),
      ...(savings !== undefined ? { savingsMicros: savings } : {}),
      onError: (err) => deps.logger.warn('log body not stored in blob storage', { traceId: record.traceId, logId: record.id, error: err }),
    });
    add(event);
  };

  return {
    name: 'logging',
    complete(record) {
      kept?.expect(record.id);
      track(
        build(record).catch((err: unknown) => {
          deps.logger.error('log event not built', { traceId: record.traceId, logId: record.id, error: err });
          kept?.settle([record.id]);
        }),
      );
    },
    async flush() {
      while (inFlight.size > 0 || buffer.length > 0) {
        await Promise.all(inFlight);
        sendBuffered();
      }
    },
    pending: () => inFlight.size + buffer.length,
    ...(kept ? { durable: (logId: string) => kept.wait(logId), durabilityStats: () => ({ ...kept.stats }) } : {}),
  };
}
