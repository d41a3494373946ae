/** Messages between the local server and its log-ingest process, over IPC. */
import type { IngestStats } from '../../layers/core/src/observability/ingest.ts';
import type { LogQueueMessage } from '../../layers/core/src/observability/messages.ts';
import type { QueueMessage } from '../../layers/core/src/ports/queue.ts';

/** One batch of the `logs` queue to write; `seq` pairs it with its answer. */
export interface BatchMessage {
  type: 'batch';
  seq: number;
  batch: QueueMessage<LogQueueMessage>[];
}

export type FromChild =
  | { type: 'ready' }
  | { type: 'done'; seq: number; failed: string[]; stats: IngestStats }
  /** What the child sends back to the parent's queue: rollup updates and batch markers it could not write, unwritten events of partly written messages. */
  | { type: 'requeue'; bodies: LogQueueMessage[] };

const isObject = (m: unknown): m is Record<string, unknown> => typeof m === 'object' && m !== null;

export const isToChild = (m: unknown): m is BatchMessage => isObject(m) && m.type === 'batch' && typeof m.seq === 'number' && Array.isArray(m.batch);

export const isFromChild = (m: unknown): m is FromChild => isObject(m) && (m.type === 'ready' || m.type === 'done' || m.type === 'requeue');
