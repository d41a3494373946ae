/**
 * The `logging` gateway hook: after the response (never before), turns the request's record into a
 * log event and sends it to the `logs` queue. Bodies above the inline limit go to blob storage
 * first. A send that fails after the queue's own retries is written to the process log in full, so
 * an event is never silently dropped.
 */
import type { Logger } from '../ports/logger.ts';
import type { GatewayHook, GatewayRecord } from '../gateway/lifecycle.ts';
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
}

/** Bytes of events in one message at most: SQS takes 256 KiB. */
const MAX_MESSAGE_BYTES = 200 * 1024;

export function loggingHook(deps: LoggingHookDeps): GatewayHook & { pending(): number } {
  const maxEvents = deps.batchEvents ?? 50;
  const waitMs = deps.batchWaitMs ?? 20;
  const inFlight = new Set<Promise<void>>();
  let buffer: LogEvent[] = [];
  let bytes = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;

  const track = (p: Promise<void>) => {
    const tracked = p.finally(() => inFlight.delete(tracked));
    inFlight.add(tracked);
  };

  const sendBuffered = () => {
    if (timer) clearTimeout(timer);
    timer = undefined;
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
          for (const event of events) deps.logger.error('log event not queued', { traceId: event.trace_id, logId: event.id, error: err, log_event_unsent: event });
        }),
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
    else if (!timer) {
      timer = setTimeout(sendBuffered, waitMs);
      timer.unref?.();
    }
  };

  const build = async (record: GatewayRecord): Promise<void> => {
    // Read the record only after every hook's synchronous `complete` ran (pricing sets the cost).
    await null;
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
      track(build(record).catch((err: unknown) => deps.logger.error('log event not built', { traceId: record.traceId, logId: record.id, error: err })));
    },
    async flush() {
      while (inFlight.size > 0 || buffer.length > 0) {
        await Promise.all(inFlight);
        sendBuffered();
      }
    },
    pending: () => inFlight.size + buffer.length,
  };
}
