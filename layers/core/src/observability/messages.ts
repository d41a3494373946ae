/** What travels on the `logs` queue: log events, and rollup updates and items the worker must retry alone. */
import type { LogEvent } from './log-event.ts';
import type { RollupDeltaMessage } from './aggregate.ts';

export const LOGS_QUEUE = 'logs';
export const EXPORTS_QUEUE = 'log-exports';

/**
 * Items the table refused after their events were stored and counted, to be put again: a batch's
 * marker (observability/ingest.ts), or, from earlier versions, settled id pointers. The kind keeps
 * its name so that messages already queued are still understood.
 */
export interface PointersMessage {
  kind: 'pointers';
  items: Record<string, unknown>[];
}

/** One event, or several sent together (one queue message: fewer SQS requests, bigger ingest batches). */
export type LogQueueMessage = { kind: 'log'; event: LogEvent } | { kind: 'logs'; events: LogEvent[] } | RollupDeltaMessage | PointersMessage;

export interface ExportQueueMessage {
  kind: 'export';
  organisation_id: string;
  export_id: string;
  /** The run this message belongs to; a message of an older run (restarted, cancelled) is dropped. */
  run: string;
}
